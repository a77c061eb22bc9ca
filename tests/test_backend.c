/* test_backend: the compiler's back half end to end.  Graphs are compiled
 * for a chip, run on the simulator (races and deadlocks checked) and every
 * output is compared with the reference executor (rt_check_graph) and,
 * for exported traces, with PyTorch's expected.safetensors. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"
#include "rt.h"
#include "testutil.h"

/* Compile g for cfg, load inputs (from inputs, or seeded random values)
 * and weights, run, check.  Returns the number of outputs not ok, -1 on
 * a failure before the check (message printed). */
static int no_lx_plan; /* compile with cc_compile_opts.no_lx_plan */
static int no_lx_keep; /* ... no_lx_keep */
/* compile_wd's placement (CC_PLACE_*; 0: the default, free) */
static int placement;
static const char *const *run_wd; /* ... work_div (run_nwd of them) */
static int run_nwd;

/* The n check results of g's outputs on cfgname (against what: "" for the
 * reference executor): the failed ones printed, one per output asserted;
 * frees chk. */
static void expect_a_check_per_output(rt_check_result *chk, int n, const gr_graph *g, const char *cfgname,
                                      const char *against)
{
    for (int i = 0; i < n; i++) {
        char line[512];
        rt_check_format(&chk[i], line, sizeof line);
        if (!chk[i].ok)
            fprintf(stderr, "%s on %s%s: %s\n", g->name, cfgname, against, line);
    }
    /* the reference also checks each state update's source, an output of
     * the program (none is a graph output in the graphs here) */
    CU_ASSERT_EQUAL(n, g->noutputs + (*against ? 0 : g->nupdates));
    free(chk);
}

/* A device of cfg with p loaded (asserting both), the device in *dev. */
static rt_program *load_on(const chip_config *cfg, isa_program *p, rt_device **dev)
{
    char err[1024];
    *dev = rt_open_config(cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(*dev);
    rt_program *prog = rt_load_program(*dev, p, err, sizeof err);
    if (!prog)
        fprintf(stderr, "load: %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    return prog;
}

static int run_graph(const gr_graph *g, const char *cfgname, const char *inputs, const char *expected,
                     sim_stats *stats_out)
{
    chip_config cfg;
    tu_config(cfgname, &cfg);
    char err[1024];
    cc_compile_opts o = {0};
    o.target = &cfg;
    o.no_lx_plan = no_lx_plan;
    o.no_lx_keep = no_lx_keep;
    o.work_div = run_wd;
    o.nwork_div = run_nwd;
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
    if (!inputs && rt_fill_inputs(prog, 7, err, sizeof err)) {
        fprintf(stderr, "fill: %s\n", err);
        goto out;
    }
    if (rt_load_graph_tensors(prog, g, inputs, err, sizeof err)) {
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
    if (stats_out)
        *stats_out = res.stats;
    rt_check_result *chk = NULL;
    int n = 0;
    bad = rt_check_graph(prog, g, &chk, &n, err, sizeof err);
    if (bad < 0)
        fprintf(stderr, "check: %s\n", err);
    expect_a_check_per_output(chk, n, g, cfgname, "");
    /* PyTorch's own outputs, when the export has them, at the same
     * tolerances (rt_check_expected) */
    if (bad == 0 && expected) {
        rt_check_result *ex = NULL;
        int nex = 0;
        int b2 = rt_check_expected(prog, g, expected, &ex, &nex, err, sizeof err);
        if (b2 < 0)
            fprintf(stderr, "expected: %s\n", err);
        expect_a_check_per_output(ex, nex, g, cfgname, " vs PyTorch");
        bad = b2 < 0 ? -1 : b2;
    }
out:
    rt_unload(prog);
    rt_close(dev);
    return bad;
}

static int run_trace(const char *name, const char *cfgname, sim_stats *st)
{
    char dir[512], in[600], exp[600], err[512];
    snprintf(dir, sizeof dir, "%s/traces/%s", SPYRE_SOURCE_DIR, name);
    snprintf(in, sizeof in, "%s/inputs.safetensors", dir);
    snprintf(exp, sizeof exp, "%s/expected.safetensors", dir);
    gr_graph *g = gr_graph_load(dir, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    int bad = run_graph(g, cfgname, in, exp, st);
    gr_graph_free(g);
    return bad;
}

static int run_text(const char *text, const char *cfgname)
{
    char err[512];
    gr_graph *g = gr_graph_parse(text, "test.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    int bad = run_graph(g, cfgname, NULL, NULL, NULL);
    gr_graph_free(g);
    return bad;
}

/* text, and the trace name, validate on both chips: spyre, then
 * spyre-4core (the statistics of the run on spyre in *st unless NULL). */
static void expect_text_validates_on_both_chips(const char *text)
{
    CU_ASSERT_EQUAL(run_text(text, "spyre"), 0);
    CU_ASSERT_EQUAL(run_text(text, "spyre-4core"), 0);
}

static void expect_trace_validates_on_both_chips(const char *name, sim_stats *st)
{
    CU_ASSERT_EQUAL(run_trace(name, "spyre", st), 0);
    CU_ASSERT_EQUAL(run_trace(name, "spyre-4core", NULL), 0);
}

/* g compiled with the defaults for cfgname, whose configuration goes to
 * *cfg; NULL on an error (its message in err). */
static cc_result *compile_for(const gr_graph *g, const char *cfgname, chip_config *cfg, char *err, size_t errlen)
{
    tu_config(cfgname, cfg);
    cc_compile_opts o = {0};
    o.target = cfg;
    return cc_compile(g, &o, err, errlen);
}

/* ---- tests ---- */

/* Each kernel's estimate (cc_result_estimate, the report's `estimate:`
 * line) against the simulator's span of it on the mlp trace: within a
 * factor of two (the acceptance of bench/run estimate's worst ratio;
 * measured 0.684 and 0.895 on spyre). */
static void test_the_estimate_of_each_mlp_kernel_is_within_twice_its_simulated_span(void)
{
    chip_config cfg;
    tu_config("spyre", &cfg);
    char err[1024], *rep = NULL;
    size_t len = 0;
    gr_graph *g = gr_graph_load(SPYRE_SOURCE_DIR "/traces/mlp", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_compile_opts o = {.target = &cfg};
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    FILE *f = open_memstream(&rep, &len);
    cc_compile_report(r, f);
    fclose(f);
    rt_device *dev;
    rt_program *prog = load_on(&cfg, cc_result_take_program(r), &dev);
    rt_run_result res;
    CU_ASSERT_FATAL(!rt_fill_inputs(prog, 7, err, sizeof err) && !rt_launch(prog, &res));
    CU_ASSERT_EQUAL(res.stats.nkernels, 2);
    for (int k = 0; k < res.stats.nkernels; k++) {
        const sim_kernel_stats *ks = &res.stats.kernels[k];
        const double est = cc_result_estimate(r, ks->name), q = est / (ks->end - ks->start);
        char line[600];
        snprintf(line, sizeof line, "%s: ", ks->name);
        const char *sec = strstr(strstr(rep, "target spyre"), line);
        snprintf(line, sizeof line, "\n  estimate: %.0f cycles\n", est);
        CU_ASSERT_PTR_NOT_NULL(sec && strstr(sec, line));
        CU_ASSERT(q >= 0.5 && q <= 2);
    }
    CU_ASSERT_EQUAL(cc_result_estimate(r, "k9_none"), -1);
    free(rep);
    rt_unload(prog);
    rt_close(dev);
    cc_result_free(r);
    gr_graph_free(g);
}

static void test_mlp_runs_and_matches_reference_and_pytorch_on_both_chips(void)
{
    sim_stats st;
    expect_trace_validates_on_both_chips("mlp", &st);
    CU_ASSERT(st.macs > 0);
}

static const char *softmax_graph = "graph sm\n"
                                   "input %x: f32[37, 200]\n"
                                   "%y: f32[37, 200] = aten._softmax.default(%x, -1, False)\n"
                                   "output %y\n";

static void test_softmax_graph_validates_on_both_chips(void)
{
    expect_text_validates_on_both_chips(softmax_graph);
}

/* A reduction's epilogue with a 0-d or [1, 1] operand (a scalar loaded as a
 * broadcast stick): each row's own result, not row 0's for every row. */
static const char *reduction_scalar_epilogue_graph = "graph rs\n"
                                                     "input %a: f32[5, 8]\n"
                                                     "input %c: f32[8, 5]\n"
                                                     "input %b: f32[]\n"
                                                     "input %b2: f32[1, 1]\n"
                                                     "%s0: f32[8] = aten.sum.dim_IntList(%a, [0])\n"
                                                     "%y0: f32[8] = aten.add.Tensor(%s0, %b)\n"
                                                     "%s1: f32[8] = aten.sum.dim_IntList(%c, [1])\n"
                                                     "%y1: f32[8] = aten.mul.Tensor(%s1, %b)\n"
                                                     "%s2: f32[1, 8] = aten.amax.default(%a, [0], True)\n"
                                                     "%y2: f32[1, 8] = aten.sub.Tensor(%s2, %b2)\n"
                                                     "output %y0, %y1, %y2\n";

static void test_a_reduction_plus_a_scalar_tensor_gives_every_row_its_own_value_on_both_chips(void)
{
    expect_text_validates_on_both_chips(reduction_scalar_epilogue_graph);
}

/* A per-row result that reads only a [1, 1] operand expanded over the rows
 * (exp(b.expand(8, 1)), beside a softmax-like use of it): the broadcast
 * stick came out of the SFP as a per-column value and was stored with the
 * per-row formula, so row 0 alone was right (1 of 8). */
static void test_a_per_row_result_of_a_broadcast_operand_alone_gives_every_row_on_both_chips(void)
{
    expect_text_validates_on_both_chips("graph rowc\ninput %x: f32[8, 64]\ninput %b: f32[1, 1]\n"
                                        "%s: f32[8, 1] = aten.amax.default(%x, [1], True)\n"
                                        "%e: f32[8, 1] = aten.expand.default(%b, [8, 1])\n"
                                        "%m: f32[8, 1] = aten.exp.default(%e)\n"
                                        "%o: f32[8, 64] = aten.sub.Tensor(%x, %s)\n"
                                        "%p: f32[8, 64] = aten.mul.Tensor(%o, %m)\noutput %m, %p\n");
}

static const char *relu_chain_graph = "graph rc\n"
                                      "input %x: f32[96, 320]\n"
                                      "input %w: f32[320, 200]\n"
                                      "%a: f32[96, 320] = aten.relu.default(%x)\n"
                                      "%c: f32[96, 200] = aten.mm.default(%a, %w)\n"
                                      "%d: f32[96, 200] = aten.neg.default(%c)\n"
                                      "%e: f32[96, 200] = aten.relu.default(%d)\n"
                                      "output %a, %e\n";

static void test_a_pointwise_loop_merged_across_rows_is_cut_back_and_validates_on_both_chips(void)
{
    /* the front half merges relu's (96, 320) loops into one of 30720; the
     * back half walks sticks per row of 320 */
    expect_text_validates_on_both_chips(relu_chain_graph);
}

static const char *layer_norm_graph =
    "graph ln\n"
    "input %x: f32[37, 200]\n"
    "input %w: f32[200]\n"
    "input %b: f32[200]\n"
    "%ln: (f32[37, 200], f32[37, 1], f32[37, 1]) = aten.native_layer_norm.default(%x, [200], %w, %b, 1e-05)\n"
    "%y: f32[37, 200] = getitem(%ln, 0)\n"
    "output %y\n";

static void test_layer_norm_graph_validates_on_both_chips(void)
{
    expect_text_validates_on_both_chips(layer_norm_graph);
}

static const char *linear_graph = "graph lin\n"
                                  "input %x: f32[100, 130]\n"
                                  "input %w: f32[200, 130]\n"
                                  "input %b: f32[200]\n"
                                  "input %r: f32[100, 200]\n"
                                  "%t: f32[130, 200] = aten.t.default(%w)\n"
                                  "%mm: f32[100, 200] = aten.addmm.default(%b, %x, %t)\n"
                                  "%g: f32[100, 200] = aten.gelu.default(%mm)\n"
                                  "%y: f32[100, 200] = aten.add.Tensor(%g, %r)\n"
                                  "%m: bool[100, 200] = aten.gt.Scalar(%r, 0.250244140625)\n"
                                  "%z: f32[100, 200] = aten.where.self(%m, %y, -1.5)\n"
                                  "output %z\n";

static void test_linear_with_epilogue_and_where_validates_on_both_chips(void)
{
    /* transposed weight, bias, erf GELU and a residual in the epilogue; a
     * comparison and a select after it.  The threshold is the midpoint
     * between two DL16 values, so rounding r to DL16 never flips it. */
    expect_text_validates_on_both_chips(linear_graph);
}

static const char *long_k_graph = "graph longk\n"
                                  "input %x: f32[300, 700]\n"
                                  "input %w: f32[1000, 700]\n"
                                  "%t: f32[700, 1000] = aten.t.default(%w)\n"
                                  "%y: f32[300, 1000] = aten.mm.default(%x, %t)\n"
                                  "output %y\n";

static void test_long_k_is_chunked_with_fp32_partial_sums_on_the_small_chip(void)
{
    /* a B panel of one stick x 700 rows does not fit the 4-core chip's LX
     * twice with the rest: K runs in chunks accumulated in fp32.  (No bias:
     * the epilogue works on the DL16-rounded product, whose rounding at
     * |acc| ~ 30 exceeds addmm's tolerance when the bias cancels it.) */
    CU_ASSERT_EQUAL(run_text(long_k_graph, "spyre-4core"), 0);
}

/* Compile text for a chip without the host fallback (the compiler's own
 * refusals); the error, or "" on success. */
static void compile_error(const char *text, const char *cfgname, char *err, size_t errlen)
{
    chip_config cfg;
    tu_config(cfgname, &cfg);
    char perr[512];
    gr_graph *g = gr_graph_parse(text, "test.txt", perr, sizeof perr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_compile_opts o = {0};
    o.target = &cfg;
    o.no_fallback = 1;
    err[0] = 0;
    cc_result *r = cc_compile(g, &o, err, errlen);
    cc_result_free(r);
    gr_graph_free(g);
}

/* A chip with too few sync tokens for a matmul kernel: a clear error, and
 * the host memory the kernel's emission held is freed on that path too
 * (the ASan build's leak check ran into 48 bytes left here). */
static void test_a_matmul_out_of_sync_tokens_is_an_error_without_a_leak(void)
{
    chip_config cfg;
    tu_config("spyre-4core", &cfg);
    cfg.tokens = 4;
    char perr[512], err[512] = "";
    gr_graph *g = gr_graph_parse(linear_graph, "test.txt", perr, sizeof perr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_compile_opts o = {0};
    o.target = &cfg;
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    CU_ASSERT_PTR_NULL(r);
    TU_ASSERT_CONTAINS(err, "out of sync tokens");
    cc_result_free(r);
    gr_graph_free(g);
}

static void test_index_values_come_from_sfp_iota_and_validate_on_both_chips(void)
{
    /* arange over the columns (a per-column value) and a triangular mask
     * over rows and columns (a tile): sfp.iota writes both */
    const char *g = "graph ar\n"
                    "input %x: f32[8, 64]\n"
                    "%a: i64[64] = aten.arange.default(64)\n"
                    "%y: f32[8, 64] = aten.add.Tensor(%x, %a)\n"
                    "%t: f32[8, 64] = aten.triu.default(%y, 1)\n"
                    "output %t\n";
    expect_text_validates_on_both_chips(g);
}

/* tanh-GELU of activations in the thousands: 0.044715 x^3 leaves DL16's
 * range (NaN on the device) from |x| ~ 5,800 unless the cube's x is
 * clamped where tanh has saturated; the reference computes it unclamped */
static void test_tanh_gelu_of_large_activations_validates_on_both_chips(void)
{
    const char *g = "graph gt\n"
                    "input %x: f32[8, 64]\n"
                    "%y: f32[8, 64] = aten.mul.Tensor(%x, 8000.0)\n"
                    "%g: f32[8, 64] = aten.gelu.default(%y, approximate=\"tanh\")\n"
                    "output %g\n";
    expect_text_validates_on_both_chips(g);
}

static void test_index_values_beyond_dl16_exactness_are_a_clear_error(void)
{
    char err[512];
    compile_error("graph ar\n"
                  "input %x: f32[8, 2048]\n"
                  "%a: i64[2048] = aten.arange.default(2048)\n"
                  "%y: f32[8, 2048] = aten.add.Tensor(%x, %a)\n"
                  "output %y\n",
                  "spyre", err, sizeof err);
    CU_ASSERT_STRING_EQUAL(err, "kernel k0_arange_add: index values from 0 to 2047 are not exact in DL16 (limit 1024; "
                                "not supported yet)");
}

static void test_llama_block_with_rope_cat_gqa_and_swiglu_validates_on_both_chips(void)
{
    /* rotate_half's cat becomes where(i < 8, ...) over sfp.iota index
     * values; the f32 causal mask's -inf is uploaded as -2^30 */
    expect_trace_validates_on_both_chips("llama_tiny", NULL);
}

static void test_whole_models_prefill_and_decode_steps_validate_on_both_chips(void)
{
    /* traces/models/decoder_gen.py: the KV caches are state (weights
     * region), each step's keys and values an output; the decode step
     * gathers its rotary (or position) and cache-mask rows by position */
    static const char *const steps[] = {"llama_gen/prefill", "llama_gen/decode", "gpt2_gen/prefill", "gpt2_gen/decode"};
    for (int i = 0; i < 4; i++)
        expect_trace_validates_on_both_chips(steps[i], NULL);
}

static void test_bert_attention_restickifies_heads_in_lx_and_validates_on_both_chips(void)
{
    /* per-head q, k^T and v start inside 64-lane sticks and k^T is read
     * sticked on K: sfp.rst restickifies them in LX; the heads merged back
     * are stored through a staged copy */
    sim_stats st;
    expect_trace_validates_on_both_chips("bert_handwritten_small", &st);
    CU_ASSERT(st.macs > 0);
}

static void test_encoder_and_decoder_attention_validate_on_both_chips(void)
{
    /* nn.TransformerEncoderLayer / DecoderLayer: the head split also reaches
     * a row kernel (q scaled per head), restickified in LX the same way */
    expect_trace_validates_on_both_chips("encoder_small", NULL);
    expect_trace_validates_on_both_chips("decoder_small", NULL);
}

static void test_full_nn_transformer_with_masks_validates_on_both_chips(void)
{
    /* nn.Transformer (2 + 2 layers): a float causal target mask and bool key
     * padding masks (masked_fill into baddbmm) on the source and the memory */
    expect_trace_validates_on_both_chips("transformer_small", NULL);
}

static void test_gpt2_block_with_a_minus_inf_causal_mask_validates_on_both_chips(void)
{
    /* masked_fill(scores, mask, -inf) then softmax: DL16 has no infinity
     * (NINF reads back as NaN), so the -inf immediate is written as the
     * finite stand-in -ISA_DL16_INF; before the fix 1920 of the 2048
     * outputs were NaN */
    expect_trace_validates_on_both_chips("gpt2_small_block_tiny", NULL);
}

static void test_embedding_gathers_rows_by_dma_gather_and_validates_on_both_chips(void)
{
    /* embedding(weight, ids) then layer norm: the ids (i64 on the host)
     * are fp32 on the device and dma.gather picks each token's row */
    sim_stats st;
    expect_trace_validates_on_both_chips("embed_small", &st);
    CU_ASSERT(st.dram_bytes_read > 0);
}

static void test_a_gather_the_back_half_cannot_emit_is_a_clear_error(void)
{
    /* the row numbers come from arithmetic on the ids, not the ids
     * themselves, into a table past one-hot's 1,024 rows */
    char err[512];
    compile_error("graph g\n"
                  "input %ids: i64[8]\n"
                  "input %w: f32[2000, 64]\n"
                  "%j: i64[8] = aten.add.Tensor(%ids, 1)\n"
                  "%y: f32[8, 64] = aten.embedding.default(%w, %j)\n"
                  "output %y\n",
                  "spyre", err, sizeof err);
    if (!strstr(err, "not supported yet"))
        fprintf(stderr, "\nerror: '%s'\n", err);
    TU_ASSERT_CONTAINS(err, "gather of w: the row numbers are not read directly from an integer input");
}

/* Whether the output of graph text, an index over a dim of size (wrap:
 * negatives count from the end), is left unproven. */
static int unproven(const char *text, int64_t size, int wrap)
{
    char err[512];
    gr_graph *g = gr_graph_parse(text, "test.txt", err, sizeof err);
    if (!g)
        fprintf(stderr, "\n%s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    int r = cc_index_unproven(g, g->outputs[0], size, wrap);
    gr_graph_free(g);
    return r;
}

/* The compiler proves a computed index in range by construction (argmax,
 * topk, argsort, clamp, remainder, where of proven ones) or from an input's
 * declared range; the runtime checks the rest at launch. */
static void test_computed_indices_are_proven_in_range_by_construction(void)
{
    const char *head = "graph p\ninput %x: f32[4, 8]\ninput %a: i64[4] range=[-2, 2]\ninput %b: i64[4]\n"
                       "input %q: i64[4] range=[0, 196]\n";
    char text[1024];
    const struct {
        const char *body;
        int64_t size;
        int wrap, unproven;
    } cases[] = {
        {"%i: i64[4] = aten.argmax.default(%x, 1)\n", 8, 0, 0},
        {"%i: i64[4] = aten.argmax.default(%x, 1)\n", 7, 0, 1},
        {"%i: i64[] = aten.argmax.default(%x)\n", 32, 0, 0},
        {"%m: i64[4] = aten.argmax.default(%x, 1)\n%i: i64[4] = aten.add.Tensor(%m, 1)\n", 8, 0, 1},
        {"%m: i64[4] = aten.argmax.default(%x, 1)\n%n: i64[4] = aten.add.Tensor(%m, 1)\n"
         "%i: i64[4] = aten.clamp.default(%n, None, 7)\n", 8, 0, 0},
        {"%t: (f32[4, 3], i64[4, 3]) = aten.topk.default(%x, 3)\n%i: i64[4, 3] = getitem(%t, 1)\n", 8, 0, 0},
        {"%t: (f32[4, 3], i64[4, 3]) = aten.topk.default(%x, 3)\n%i: i64[4, 3] = getitem(%t, 0)\n", 8, 0, 1},
        {"%i: i64[4, 8] = aten.argsort.default(%x, 1)\n", 8, 0, 0},
        {"%s: i64[4, 8] = aten.argsort.default(%x, 1)\n%i: i64[4, 8] = aten.add.Tensor(%s, 1)\n", 8, 0, 1},
        {"%i: i64[4] = aten.add.Tensor(%a, 2)\n", 5, 0, 0},
        {"%i: i64[4] = aten.add.Tensor(%a, 2)\n", 4, 0, 1},
        {"%i: i64[4] = aten.mul.Tensor(%a, 2)\n", 5, 1, 0},
        {"%i: i64[4] = aten.remainder.Scalar(%b, 6)\n", 6, 0, 0},
        /* opsem.c's interval rows: rsub, relu, and a tensor bound's whole range (q up to 196) */
        {"%i: i64[4] = aten.rsub.Scalar(%a, 4)\n", 7, 0, 0},
        {"%i: i64[4] = aten.rsub.Scalar(%a, 4)\n", 6, 0, 1},
        {"%i: i64[4] = aten.relu.default(%a)\n", 3, 0, 0},
        {"%m: i64[4] = aten.argmax.default(%x, 1)\n%i: i64[4] = aten.clamp_min.Tensor(%m, %q)\n", 8, 0, 1},
        {"%m: i64[4] = aten.argmax.default(%x, 1)\n%i: i64[4] = aten.clamp_min.Tensor(%m, %a)\n", 8, 0, 0},
        {"%i: i64[4] = aten.add.Tensor(%b, 1)\n", 1000, 1, 1},
        {"%c: bool[4] = aten.gt.Scalar(%b, 0)\n%i: i64[4] = aten.where.self(%c, %a, 0)\n", 3, 1, 0},
        {"%r: i64[4] = aten.arange.start(2, 6)\n%i: i64[4] = aten.sub.Tensor(%r, %a)\n", 8, 0, 0},
        {"%r: i64[4] = aten.arange.start(2, 6)\n%i: i64[4] = aten.sub.Tensor(%r, %a)\n", 7, 0, 1},
        /* 196 // 49 is 4, and 49 * (1 / 49) is below 1 */
        {"%i: i64[4] = aten.floor_divide.default(%q, 49)\n", 4, 0, 1},
        {"%i: i64[4] = aten.floor_divide.default(%q, 49)\n", 5, 0, 0},
        {"%i: i64[4] = aten.div.Tensor_mode(%q, 49, rounding_mode=\"trunc\")\n", 4, 0, 1},
        {"%i: i64[4] = aten.div.Tensor_mode(%q, -49, rounding_mode=\"floor\")\n", 4, 1, 0},
        {"%i: i64[4] = aten.fmod.Scalar(%q, 49)\n", 49, 0, 0},
        {"%i: i64[4] = aten.fmod.Scalar(%q, 49)\n", 48, 0, 1},
        /* a float's NaN survives a clamp and casts to any integer; one cast from integers has none */
        {"%c: f32[4, 8] = aten.clamp.default(%x, 0, 7)\n%i: i64[4, 8] = aten._to_copy.default(%c, dtype=i64)\n", 8, 0,
         1},
        {"%f: f32[4] = aten._to_copy.default(%a, dtype=f32)\n%i: i64[4] = aten._to_copy.default(%f, dtype=i64)\n", 3, 1,
         0},
        /* past int32, a cast wraps: 1.96e10 holds a negative int32 */
        {"%m: i64[4] = aten.mul.Tensor(%q, 100000000)\n%n: i32[4] = aten._to_copy.default(%m, dtype=i32)\n"
         "%i: i32[4] = aten.floor_divide.default(%n, 1000000000)\n", 20, 0, 1},
        {"%m: i64[4] = aten.mul.Tensor(%q, 10000000)\n%n: i32[4] = aten._to_copy.default(%m, dtype=i32)\n"
         "%i: i32[4] = aten.floor_divide.default(%n, 1000000000)\n", 2, 0, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        snprintf(text, sizeof text, "%s%soutput %%i\n", head, cases[k].body);
        if (unproven(text, cases[k].size, cases[k].wrap) != cases[k].unproven)
            fprintf(stderr, "\ncase %zu: %s", k, cases[k].body);
        CU_ASSERT_EQUAL(unproven(text, cases[k].size, cases[k].wrap), cases[k].unproven);
    }
}

static void test_a_gather_concatenated_along_its_rows_runs_on_the_device_and_validates(void)
{
    /* a seq2seq decoder step's cat([embedding(tok), context], 1): the
     * gather is computed first (it reads whole table rows along a
     * kernel's columns), not inlined into the cat's where-chain */
    const char *g = "graph ec\n"
                    "input %tok: i64[2]\n"
                    "input %w: f32[20, 16]\n"
                    "input %ctx: f32[2, 32]\n"
                    "%e: f32[2, 16] = aten.embedding.default(%w, %tok)\n"
                    "%y: f32[2, 48] = aten.cat.default([%e, %ctx], 1)\n"
                    "output %y\n";
    char err[512];
    compile_error(g, "spyre", err, sizeof err);
    CU_ASSERT_STRING_EQUAL(err, "");
    expect_text_validates_on_both_chips(g);
}

/* decoder_small keeps two layer norms' inputs for the later layer norms
 * and in each attention the scaled q, the scores and the probabilities,
 * the scaling, QK^T, the softmax and PV on 8 cores, one head each (9
 * tensors and 2 exchanges with QK^T on 4 cores, 21,371 cycles, then
 * 20,303; the scaled q on 3 cores through DRAM while the scaling's
 * choices priced its result as written there, 20,536 cycles against
 * 19,913 now, mean of 7 refresh phases).  (llama_tiny kept its normed input for the three
 * projections until the row kernels' cost model put the norm on 4 cores,
 * which runs faster.  It kept a transposed projection for the product
 * reading it on the same two cores until the transpose of 16 one-stick
 * rows took 8 cores past the floor, its estimate with the DRAM's waits
 * priced: the graph 20,303 -> 19,937 cycles.) */
static void test_the_lxplan_dump_shows_the_tensors_kept_in_lx(void)
{
    char dir[512], err[512];
    snprintf(dir, sizeof dir, "%s/traces/decoder_small", SPYRE_SOURCE_DIR);
    gr_graph *g = gr_graph_load(dir, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    chip_config cfg;
    tu_config("spyre", &cfg);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cc_compile_opts o = {.target = &cfg, .dump_after = "lxplan", .dump = f};
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(r);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nkernel k10_mm_add: working lx "));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nkept getitem_3: k8_addmm_add_native_layer_norm..k19_addmm_add_native_layer_norm at lx "));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "(8 rows on 2 cores); read by k19_addmm_add_native_layer_norm; also written to dram\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nkept bmm: k4_bmm..k5_softmax at lx "));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, " 1024 bytes per core (8 rows on 8 cores); read by k5_softmax\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nkept div: k3_div..k4_bmm at lx "));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\ntotal: 8 tensors kept, 0 spills, 0 ring exchanges\n"));
    free(text);
    cc_result_free(r);
    gr_graph_free(g);
}

static void test_back_half_passes_dump_layout_workdiv_lxplan_codegen_and_reroll(void)
{
    const char *const *bp = cc_backend_pass_names();
    CU_ASSERT_STRING_EQUAL(bp[0], "layout");
    CU_ASSERT_STRING_EQUAL(bp[1], "workdiv");
    CU_ASSERT_STRING_EQUAL(bp[2], "lxplan");
    CU_ASSERT_STRING_EQUAL(bp[3], "codegen");
    CU_ASSERT_STRING_EQUAL(bp[4], "reroll");
    CU_ASSERT_PTR_NULL(bp[5]);
    char dir[512], err[512];
    snprintf(dir, sizeof dir, "%s/traces/mlp", SPYRE_SOURCE_DIR);
    gr_graph *g = gr_graph_load(dir, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    chip_config cfg;
    tu_config("spyre-4core", &cfg);
    for (int i = 0; bp[i]; i++) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        cc_compile_opts o = {0};
        o.target = &cfg;
        o.dump_after = bp[i];
        o.dump = f;
        cc_result *r = cc_compile(g, &o, err, sizeof err);
        fclose(f);
        CU_ASSERT_PTR_NOT_NULL(r);
        char head[64];
        snprintf(head, sizeof head, "# mlp after %s (target spyre-4core, 4 cores)\n", bp[i]);
        CU_ASSERT_EQUAL(strncmp(text, head, strlen(head)), 0);
        if (i == 0) {
            /* W^T of a linear: the weight is sticked on N (its dim 0) */
            TU_ASSERT_CONTAINS(text, "tensor fc1_weight weight dims 256x64 dl16 stick_dim 0",
                                     "tensor x input dims 8x64 dl16 stick_dim 1",
                                     "tensor addmm_1 output dims 8x64",
                                     "restickify needed: 0\n");
        }
        if (i == 1)
            TU_ASSERT_CONTAINS(text, "kernel k0_addmm_gelu: matmul grid");
        if (i == 2) /* each kernel's LX, and what stays there across kernels */
            TU_ASSERT_CONTAINS(text, "\nkernel k1_addmm: tiled into lx below ");
        if (i == 4) { /* instructions before and after, per kernel, per core and in total */
            TU_ASSERT_CONTAINS(text, "\nkernel k0_addmm_gelu: ",
                                     "\ncore 0: ",
                                     "\ntotal: ");
        }
        free(text);
        isa_program *p = cc_result_take_program(r);
        CU_ASSERT_PTR_NOT_NULL(p);
        isa_program_free(p);
        cc_result_free(r);
    }
    gr_graph_free(g);
}

/* ---- the reroll pass ---- */

/* A long-K product (many K chunks per core, blocks of rows) and a softmax
 * over its rows (many row chunks). */
static const char *reroll_graph = "graph rr\n"
                                  "input %x: f32[512, 2048]\n"
                                  "input %w: f32[2048, 384]\n"
                                  "%c: f32[512, 384] = aten.mm.default(%x, %w)\n"
                                  "%s: f32[512, 384] = aten._softmax.default(%c, -1, False)\n"
                                  "output %s\n";

/* g compiled with options o: the program, and the report in *report
 * (report NULL: none). */
static isa_program *compile_reported(const gr_graph *g, const cc_compile_opts *o, char **report)
{
    char err[1024];
    cc_result *r = cc_compile(g, o, err, sizeof err);
    if (!r)
        fprintf(stderr, "compile: %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    if (report) {
        size_t len = 0;
        FILE *f = open_memstream(report, &len);
        cc_compile_report(r, f);
        fclose(f);
    }
    isa_program *p = cc_result_take_program(r);
    cc_result_free(r);
    return p;
}

/* Compile text for cfgname (no_reroll as given): the program, and the
 * report in *report (malloc'd) when report is not NULL. */
static isa_program *compile_reroll(const char *text, const char *cfgname, int no_reroll, char **report)
{
    char err[1024];
    gr_graph *g = gr_graph_parse(text, "test.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    static chip_config cfg;
    tu_config(cfgname, &cfg);
    cc_compile_opts o = {0};
    o.target = &cfg;
    o.no_reroll = no_reroll;
    isa_program *p = compile_reported(g, &o, report);
    gr_graph_free(g);
    return p;
}

/* Patches (4 * arange + arange rows, columns 1, 5, 9, 13) and a flip
 * (15 - arange): constant indices, affine in the output's coordinates. */
static const char AFFINE_INDEX_GRAPH[] = "graph affidx\n"
                                         "input %x: f32[2, 16, 16]\n"
                                         "%a: i64[4] = aten.arange.start_step(0, 16, 4, dtype=i64)\n"
                                         "%u: i64[4, 1] = aten.unsqueeze.default(%a, -1)\n"
                                         "%b: i64[4] = aten.arange.default(4, dtype=i64)\n"
                                         "%r: i64[4, 4] = aten.add.Tensor(%u, %b)\n"
                                         "%c: i64[4] = aten.arange.start_step(1, 16, 4, dtype=i64)\n"
                                         "%p: f32[2, 4, 4] = aten.index.Tensor(%x, [None, %r, %c])\n"
                                         "%n: i64[16] = aten.arange.default(16, dtype=i64)\n"
                                         "%f: i64[16] = aten.rsub.Scalar(%n, 15)\n"
                                         "%s: f32[2, 16, 16] = aten.index_select.default(%x, 2, %f)\n"
                                         "output %p, %s\n";

static void test_an_affine_arange_index_reads_the_table_as_a_view_and_validates_on_both_chips(void)
{
    /* one-hot would be a reduction over the table's rows per element */
    const char *chips[2] = {"spyre", "spyre-4core"};
    for (int i = 0; i < 2; i++) {
        char *report = NULL;
        isa_program *p = compile_reroll(AFFINE_INDEX_GRAPH, chips[i], 0, &report);
        CU_ASSERT_PTR_NULL(strstr(report, ": reduction ["));
        TU_ASSERT_CONTAINS(report, "\nk0_index: pointwise [");
        free(report);
        isa_program_free(p);
    }
    expect_text_validates_on_both_chips(AFFINE_INDEX_GRAPH);
}

static void test_a_clamped_relative_position_index_stays_one_hot_and_validates_on_both_chips(void)
{
    /* clamp(j - i, -4, 4) + 4 is constant but not affine */
    const char *g = "graph relpos\n"
                    "input %w: f32[9, 8]\n"
                    "%a: i64[16] = aten.arange.default(16, dtype=i64)\n"
                    "%u: i64[1, 16] = aten.unsqueeze.default(%a, 0)\n"
                    "%v: i64[16, 1] = aten.unsqueeze.default(%a, 1)\n"
                    "%d: i64[16, 16] = aten.sub.Tensor(%u, %v)\n"
                    "%k: i64[16, 16] = aten.clamp.default(%d, -4, 4)\n"
                    "%r: i64[16, 16] = aten.add.Tensor(%k, 4)\n"
                    "%y: f32[16, 16, 8] = aten.index.Tensor(%w, [%r])\n"
                    "output %y\n";
    char *report = NULL;
    isa_program *p = compile_reroll(g, "spyre", 0, &report);
    TU_ASSERT_CONTAINS(report, "_index: reduction [256, 8 | 9]");
    free(report);
    isa_program_free(p);
    expect_text_validates_on_both_chips(g);
}

/* The affine evaluator takes PyTorch's values or none: a slice from
 * before the start begins at 0 (a view), an i32 cast that would wrap and
 * an int64 floor_divide that overflows are not evaluated (the general
 * path), and an operand whose shape does not broadcast to its result's
 * declared one is not read (the shape check refuses the graph). */
static void test_the_affine_index_evaluator_keeps_to_pytorchs_values(void)
{
    const char *slice = "graph negslice\n"
                        "input %x: f32[10, 3]\n"
                        "%a: i64[10] = aten.arange.default(10)\n"
                        "%s: i64[10] = aten.slice.Tensor(%a, 0, -20, 9223372036854775807)\n"
                        "%y: f32[10, 3] = aten.index.Tensor(%x, [%s])\n"
                        "output %y\n";
    const char *narrow = "graph narrow\n"
                         "input %x: f32[8, 3]\n"
                         "%a: i64[4] = aten.arange.default(4)\n"
                         "%m: i64[4] = aten.mul.Tensor(%a, 4294967297)\n"
                         "%c: i32[4] = aten._to_copy.default(%m, dtype=i32)\n"
                         "%c1: i64[4] = aten._to_copy.default(%c, dtype=i64)\n"
                         "%f: i64[4] = aten.floor_divide.default(%c1, 4294967296)\n"
                         "%y: f32[4, 3] = aten.index.Tensor(%x, [%f])\n"
                         "output %y\n";
    const char *fpe = "graph fpe\n"
                      "input %x: f32[4, 3]\n"
                      "%a: i64[2] = aten.arange.default(2)\n"
                      "%m: i64[2] = aten.mul.Tensor(%a, -9223372036854775808)\n"
                      "%f: i64[2] = aten.floor_divide.default(%m, -1)\n"
                      "%y: f32[2, 3] = aten.index.Tensor(%x, [%f])\n"
                      "output %y\n";
    const char *bshape = "graph bshape\n"
                         "input %x: f32[64, 3]\n"
                         "%a: i64[8] = aten.arange.default(8, dtype=i64)\n"
                         "%u: i64[8, 1] = aten.unsqueeze.default(%a, -1)\n"
                         "%b: i64[4] = aten.arange.default(4, dtype=i64)\n"
                         "%r: i64[16, 4] = aten.add.Tensor(%u, %b)\n"
                         "%y: f32[16, 4, 3] = aten.index.Tensor(%x, [%r])\n"
                         "output %y\n";
    char *report = NULL;
    isa_program_free(compile_reroll(slice, "spyre", 0, &report));
    TU_ASSERT_CONTAINS(report, "k0_index: pointwise [30]");
    free(report);
    expect_text_validates_on_both_chips(slice);
    const char *general[] = {narrow, fpe};
    for (int i = 0; i < 2; i++) {
        report = NULL;
        isa_program_free(compile_reroll(general[i], "spyre", 0, &report));
        CU_ASSERT_PTR_NULL(strstr(report ? report : "", "k0_index: pointwise ["));
        free(report);
    }
    char err[1024];
    gr_graph *g = gr_graph_parse(bshape, "test.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    chip_config cfg;
    tu_config("spyre", &cfg);
    cc_compile_opts o = {0};
    o.target = &cfg;
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    CU_ASSERT_PTR_NULL(r);
    if (!r)
        TU_ASSERT_CONTAINS(err, "%r is declared i64[16, 4] but the op produces i64[8, 4]");
    cc_result_free(r);
    gr_graph_free(g);
}

static int run_and_read(const char *text, const char *path, const char *cfgname, int n, const char *const *names,
                        float **vals, int64_t *elems);

/* The affine evaluator's integer ops are PyTorch's (opsem.c's table):
 * clamp with min above max gives max everywhere (a constant index, row
 * 2 not row 10), floor_divide rounds toward -infinity (1 // -3 is -1)
 * and remainder takes the divisor's sign (1 % -5 is -4); each index is
 * read as a view, no one-hot reduction, and matches the reference. */
static void test_the_affine_index_evaluator_clamps_divides_and_takes_remainders_as_pytorch(void)
{
    const char *g = "graph intsem\n"
                    "input %x: f32[16, 3]\n"
                    "%a: i64[4] = aten.arange.default(4, dtype=i64)\n"
                    "%k: i64[4] = aten.clamp.default(%a, 10, 2)\n"
                    "%y: f32[4, 3] = aten.index.Tensor(%x, [%k])\n"
                    "%n: i64[5] = aten.arange.start_step(1, 15, 3, dtype=i64)\n"
                    "%q: i64[5] = aten.floor_divide.default(%n, -3)\n"
                    "%p: i64[5] = aten.neg.default(%q)\n"
                    "%z: f32[5, 3] = aten.index.Tensor(%x, [%p])\n"
                    "%b: i64[4] = aten.arange.start(1, 5, dtype=i64)\n"
                    "%r: i64[4] = aten.remainder.Scalar(%b, -5)\n"
                    "%s: i64[4] = aten.add.Tensor(%r, 4)\n"
                    "%w: f32[4, 3] = aten.index.Tensor(%x, [%s])\n"
                    "output %y, %z, %w\n";
    char *report = NULL;
    isa_program_free(compile_reroll(g, "spyre", 0, &report));
    CU_ASSERT_PTR_NULL(strstr(report ? report : "", ": reduction ["));
    free(report);
    expect_text_validates_on_both_chips(g);
    /* the check of %w is vacuous (an index's bound is infinite): its rows, read back */
    const char *names[] = {"x", "w"}, *chips[] = {"spyre", "spyre-4core"};
    for (int c = 0; c < 2; c++) {
        float *v[2] = {0};
        int64_t n[2] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(g, "intsem.txt", chips[c], 2, names, v, n), 0);
        CU_ASSERT_EQUAL_FATAL(n[1], 12);
        for (int i = 0; i < 4; i++) {
            int64_t m = (i + 1) % -5, row = (m && m > 0 ? m - 5 : m) + 4; /* PyTorch's: the divisor's sign */
            for (int j = 0; j < 3; j++)
                CU_ASSERT_EQUAL(v[1][i * 3 + j], v[0][row * 3 + j]);
        }
        free(v[0]);
        free(v[1]);
    }
}

/* Run p on cfgname with seeded inputs: output `out` into vals, the
 * statistics; the outputs not ok against the reference executor. */
static int run_reroll(isa_program *p, const char *text, const char *cfgname, const char *out, float *vals,
                      sim_stats *st)
{
    char err[1024];
    chip_config cfg;
    tu_config(cfgname, &cfg);
    gr_graph *g = gr_graph_parse(text, "test.txt", err, sizeof err);
    rt_device *dev = rt_open_config(&cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    rt_run_result res;
    int bad = -1;
    if (rt_fill_inputs(prog, 7, err, sizeof err) || rt_launch(prog, &res) ||
        rt_read_tensor(prog, out, vals, err, sizeof err)) {
        fprintf(stderr, "reroll graph: %s\n", err);
    } else {
        *st = res.stats;
        rt_check_result *chk = NULL;
        int n = 0;
        bad = rt_check_graph(prog, g, &chk, &n, err, sizeof err);
        free(chk);
    }
    rt_unload(prog);
    rt_close(dev);
    gr_graph_free(g);
    return bad;
}

/* A maximum of two constants folds as the SFP computes it: a NaN either
 * side propagates (PyTorch's maximum), where the fold once took the
 * other operand for a NaN on the left. */
static void test_a_folded_maximum_of_a_nan_constant_is_nan(void)
{
    const char *g = "graph maxnan\n"
                    "input %x: f32[64]\n"
                    "%n: f32[64] = aten.full.default([64], nan)\n"
                    "%m: f32[64] = aten.clamp_min.default(%n, 1.0)\n"
                    "%y: f32[64] = aten.add.Tensor(%m, %x)\n"
                    "output %y\n";
    isa_program *p = compile_reroll(g, "spyre", 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    float y[64];
    sim_stats st;
    CU_ASSERT_EQUAL(run_reroll(p, g, "spyre", "y", y, &st), 0);
    for (int i = 0; i < 64; i++)
        CU_ASSERT(isnan(y[i])); /* run_reroll's unload freed p */
    expect_text_validates_on_both_chips(g);
}

static size_t total_insns(const isa_program *p)
{
    size_t n = 0;
    for (int c = 0; c < p->ncores; c++)
        n += p->cores[c].n;
    return n;
}

/* Instructions of p inside its kernels (bars between them and halts are not). */
static long kernel_insns(const isa_program *p)
{
    long n = 0;
    for (size_t k = 0; k < p->nkernels; k++)
        n += p->kernels[k].last - p->kernels[k].first + 1;
    return n;
}

/* The deepest loop nesting of p; -1 when a kernel's loops do not open and
 * close inside the kernel. */
static int loop_depth(const isa_program *p)
{
    int deepest = 0;
    for (size_t k = 0; k < p->nkernels; k++) {
        const isa_kernel *K = &p->kernels[k];
        int d = 0;
        for (long i = K->first; i <= K->last; i++) {
            int op = p->cores[K->core].insns[i].op;
            d += op == ISA_OP_LOOP ? 1 : op == ISA_OP_ENDL ? -1 : 0;
            if (d < 0)
                return -1;
            deepest = d > deepest ? d : deepest;
        }
        if (d)
            return -1;
    }
    return deepest;
}

static void test_rerolled_loops_compute_the_same_values_in_nearly_the_same_cycles_with_many_fewer_instructions(void)
{
    isa_program *on = compile_reroll(reroll_graph, "spyre-4core", 0, NULL);
    isa_program *off = compile_reroll(reroll_graph, "spyre-4core", 1, NULL);
    const size_t n_on = total_insns(on), n_off = total_insns(off);
    CU_ASSERT(n_off >= 6 * n_on); /* 14752 -> 1134 when written; 7570 -> 1134 with blocks twice as large */
    CU_ASSERT_EQUAL(loop_depth(off), 0);
    CU_ASSERT(loop_depth(on) >= 2); /* chunk loops inside block loops */
    CU_ASSERT_EQUAL(on->nkernels, off->nkernels);
    enum { N = 512 * 384 };
    float *v_on = malloc(N * sizeof *v_on), *v_off = malloc(N * sizeof *v_off);
    sim_stats s_on, s_off;
    CU_ASSERT_EQUAL(run_reroll(on, reroll_graph, "spyre-4core", "s", v_on, &s_on), 0);
    CU_ASSERT_EQUAL(run_reroll(off, reroll_graph, "spyre-4core", "s", v_off, &s_off), 0);
    CU_ASSERT_EQUAL(memcmp(v_on, v_off, N * sizeof *v_on), 0); /* bit for bit */
    /* the sequencer's extra loop, endl, li and addi hide behind the units */
    CU_ASSERT(s_on.cycles > 0 && fabs(s_on.cycles - s_off.cycles) <= 0.005 * s_off.cycles);
    /* every executed instruction is still counted to its kernel */
    CU_ASSERT_EQUAL(s_on.nkernels, 2);
    CU_ASSERT_EQUAL(s_on.nkernels, s_off.nkernels);
    for (int k = 0; k < s_on.nkernels; k++) {
        CU_ASSERT_STRING_EQUAL(s_on.kernels[k].name, s_off.kernels[k].name);
        CU_ASSERT_EQUAL(s_on.kernels[k].insns, s_off.kernels[k].insns);
        CU_ASSERT_EQUAL(s_on.kernels[k].macs, s_off.kernels[k].macs);
    }
    CU_ASSERT_EQUAL(s_on.insns, s_off.insns);
    free(v_on);
    free(v_off);
}

static void test_a_stream_without_repetition_is_left_as_generated(void)
{
    const char *text = "graph one\n"
                       "input %x: f32[8, 64]\n"
                       "%y: f32[8, 64] = aten.exp.default(%x)\n"
                       "output %y\n";
    char *report = NULL;
    isa_program *on = compile_reroll(text, "spyre-4core", 0, &report);
    isa_program *off = compile_reroll(text, "spyre-4core", 1, NULL);
    TU_ASSERT_CONTAINS(report, "\n  k0_exp: "); /* the kernel's line: as many after as before */
    TU_ASSERT_CONTAINS(report, "(1.0x fewer), 0 loops\n  total: ");
    tu_assert_same_code(on, off, 0);
    free(report);
    isa_program_free(on);
    isa_program_free(off);
}

/* A product whose result a softmax reads: forced onto fewer cores
 * (k1_softmax=6 on spyre), the softmax takes the rows over the ring. */
static const char *const xchg_graph = "graph xg\n"
                                      "input %x: f32[4096, 256]\n"
                                      "input %w: f32[256, 256]\n"
                                      "%m: f32[4096, 256] = aten.mm.default(%x, %w)\n"
                                      "%s: f32[4096, 256] = aten._softmax.default(%m, 1, False)\n"
                                      "output %s\n";

/* Compile g for cfgname with the work_div spec wd (or none: NULL),
 * dump_after as given (its dump thrown away): the program, and the
 * report in *report. */
static isa_program *compile_dumped(const gr_graph *g, const char *cfgname, const char *wd, const char *dump_after,
                                   char **report)
{
    static chip_config cfg;
    tu_config(cfgname, &cfg);
    cc_compile_opts o = {0};
    o.target = &cfg;
    o.dump_after = dump_after;
    o.dump = fopen("/dev/null", "w");
    o.work_div = &wd;
    o.nwork_div = wd != NULL;
    isa_program *p = compile_reported(g, &o, report);
    fclose(o.dump);
    return p;
}

/* g compiled for cfgname (work_div spec wd or NULL) rolled as emitted
 * and rolled after codegen: the same program and report; its ring
 * exchange kernels and loops counted into *xchg and *loops. */
static void check_rolled_as_emitted(const gr_graph *g, const char *cfgname, const char *wd, int *xchg, long *loops)
{
    char *report = NULL, *report_after = NULL;
    isa_program *a = compile_dumped(g, cfgname, wd, NULL, &report);
    isa_program *b = compile_dumped(g, cfgname, wd, "codegen", &report_after);
    CU_ASSERT_STRING_EQUAL(report, report_after);
    CU_ASSERT_EQUAL_FATAL(a->nkernels, b->nkernels);
    for (size_t k = 0; k < a->nkernels; k++) {
        CU_ASSERT_STRING_EQUAL(a->kernels[k].name, b->kernels[k].name);
        CU_ASSERT_EQUAL(a->kernels[k].core, b->kernels[k].core);
        CU_ASSERT_EQUAL(a->kernels[k].first, b->kernels[k].first);
        CU_ASSERT_EQUAL(a->kernels[k].last, b->kernels[k].last);
        *xchg += strstr(a->kernels[k].name, ".xchg") != NULL;
    }
    for (int core = 0; core < a->ncores; core++) {
        CU_ASSERT_EQUAL_FATAL(a->cores[core].n, b->cores[core].n);
        for (size_t j = 0; j < a->cores[core].n; j++) {
            uint8_t x[ISA_INSN_BYTES], y[ISA_INSN_BYTES];
            char err[256];
            CU_ASSERT_EQUAL(isa_encode(&a->cores[core].insns[j], x, err, sizeof err), 0);
            CU_ASSERT_EQUAL(isa_encode(&b->cores[core].insns[j], y, err, sizeof err), 0);
            CU_ASSERT_EQUAL(memcmp(x, y, sizeof x), 0);
            *loops += a->cores[core].insns[j].op == ISA_OP_LOOP;
        }
    }
    free(report);
    free(report_after);
    isa_program_free(a);
    isa_program_free(b);
}

/* Codegen emits each kernel aside and rolls it onto its core's stream as
 * soon as it ends (kernels open on every core at once, as a ring exchange
 * before a kernel is, each aside in a stream of its own); with the
 * streams to be dumped as generated (--dump-after=codegen) it emits into
 * the cores' streams and the reroll pass rolls them after.  Same program
 * and report either way: the product and softmax that roll into loops
 * (spyre-4core), a softmax forced onto fewer cores than its product's,
 * taking the rows by a ring exchange (spyre). */
static void test_kernels_rolled_as_emitted_are_the_program_rolled_after_codegen(void)
{
    char err[1024];
    int xchg = 0;
    long loops = 0;
    gr_graph *g = gr_graph_parse(reroll_graph, "test.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    check_rolled_as_emitted(g, "spyre-4core", NULL, &xchg, &loops);
    CU_ASSERT(loops > 0);
    gr_graph_free(g);
    g = gr_graph_parse(xchg_graph, "xg.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    check_rolled_as_emitted(g, "spyre", "k1_softmax=6", &xchg, &loops);
    CU_ASSERT(xchg > 0);
    gr_graph_free(g);
}

static void test_the_report_counts_each_kernels_instructions_before_and_after_reroll(void)
{
    char *report = NULL, *report_off = NULL;
    isa_program *on = compile_reroll(reroll_graph, "spyre-4core", 0, &report);
    isa_program *off = compile_reroll(reroll_graph, "spyre-4core", 1, &report_off);
    const long before = kernel_insns(off), after = kernel_insns(on);
    CU_ASSERT(before >= 6 * after);
    char want[128];
    snprintf(want, sizeof want, "\n  total: %ld -> %ld instructions", before, after);
    TU_ASSERT_CONTAINS(report, "\nreroll: instructions per kernel on all cores, as generated -> in counted loops\n");
    CU_ASSERT_PTR_NOT_NULL(strstr(report, want));
    TU_ASSERT_CONTAINS(report, "\n  k0_mm: ",
                               "\n  k1_softmax: ");
    snprintf(want, sizeof want, "\n  total: %ld -> %ld instructions", before, before);
    TU_ASSERT_CONTAINS(report_off, "\nreroll (off: --no-reroll): ");
    CU_ASSERT_PTR_NOT_NULL(strstr(report_off, want));
    /* the sections before it are the same with the pass on and off */
    CU_ASSERT_EQUAL(strstr(report, "\nreroll") - report, strstr(report_off, "\nreroll") - report_off);
    CU_ASSERT_EQUAL(strncmp(report, report_off, (size_t)(strstr(report, "\nreroll") - report)), 0);
    free(report);
    free(report_off);
    isa_program_free(on);
    isa_program_free(off);
}

/* The trace at dir (under the source tree) compiled for cfgname on
 * `threads` codegen threads, every kernel of two cores or more split
 * between them (par_min 1: these traces' kernels are all small): its ELF
 * bytes (*n of them) and its report. */
static char *compile_graph_threads(const gr_graph *g, const char *cfgname, int threads, size_t *n, char **report)
{
    char err[1024], elf[512];
    chip_config cfg;
    tu_config(cfgname, &cfg);
    cc_compile_opts o = {.target = &cfg, .threads = threads, .par_min = 1};
    isa_program *p = compile_reported(g, &o, report);
    tu_tmpfile(".elf", elf, sizeof elf);
    CU_ASSERT_EQUAL_FATAL(isa_elf_write(p, elf, err, sizeof err), 0);
    char *bytes = tu_read_file(elf, n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
    remove(elf);
    isa_program_free(p);
    return bytes;
}

/* compile_graph_threads of the trace at dir (under the source tree). */
static char *compile_threads(const char *dir, const char *cfgname, int threads, size_t *n, char **report)
{
    char path[512], err[1024];
    snprintf(path, sizeof path, "%s/traces/%s", SPYRE_SOURCE_DIR, dir);
    gr_graph *g = gr_graph_load(path, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    char *bytes = compile_graph_threads(g, cfgname, threads, n, report);
    gr_graph_free(g);
    return bytes;
}

/* A decode step's product, x[1, 4096] by weights [4096, 14336], on the
 * 4-core chip split over two threads: the halves' DRAM pieces, joined,
 * outgrow the access check's first room (bd_add grows it; it read the
 * last piece through the old room, freed: the sanitizer build stopped
 * there), and the program is one thread's, byte for byte. */
static void test_a_product_of_many_dram_pieces_split_over_two_threads_writes_one_threads_program(void)
{
    const char *text = "graph big_mm\ninput %x: f32[1, 4096]\ninput %w: f32[4096, 14336]\n"
                       "%y: f32[1, 14336] = aten.mm.default(%x, %w)\noutput %y\n";
    char err[512];
    gr_graph *g = gr_graph_parse(text, "test.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    size_t n1, n2;
    char *rep1, *rep2, *one = compile_graph_threads(g, "spyre-4core", 1, &n1, &rep1);
    char *two = compile_graph_threads(g, "spyre-4core", 2, &n2, &rep2);
    CU_ASSERT(n1 == n2 && !memcmp(one, two, n1));
    CU_ASSERT_STRING_EQUAL(rep1, rep2);
    free(one);
    free(two);
    free(rep1);
    free(rep2);
    gr_graph_free(g);
}

/* Codegen on two threads (the worker takes half of each product's cores:
 * the odd columns of a grid over the ring, else the last half) writes
 * the program one thread writes, byte for byte, with the same report
 * (its figures are the two halves' joined): a trace with a grid over the
 * ring and the plain grids of the others, on both chips, several times
 * (a race would show now and then). */
static void test_codegen_on_two_threads_writes_the_program_one_thread_writes(void)
{
    static const char *const dirs[] = {"gpt2_small_block_tiny", "serve_tiny/prefill_c128"};
    static const char *const chips[] = {"spyre", "spyre-4core"};
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 2; k++) {
            size_t n1, n2;
            char *rep1, *rep2, *one = compile_threads(dirs[d], chips[k], 1, &n1, &rep1);
            for (int again = 0; again < 3; again++) {
                char *two = compile_threads(dirs[d], chips[k], 2, &n2, &rep2);
                CU_ASSERT_EQUAL(n1, n2);
                CU_ASSERT(n1 == n2 && !memcmp(one, two, n1));
                CU_ASSERT_STRING_EQUAL(rep1, rep2);
                free(two);
                free(rep2);
            }
            free(one);
            free(rep1);
        }
}

/* Eight attention-like layers of 33 tokens by 200 (fuzz rep71): on the
 * 32-core chip, a product's kernels on cores 28-31 have a run of four
 * pt.mm and sig that rolls into a loop, where core 0's (with a first
 * pt.mm of m=2) has three, left unrolled. */
static gr_graph *layers_graph(void)
{
    static char text[16384];
    int at = snprintf(text, sizeof text, "graph rep71\ninput %%x0: f32[33, 200]\n");
    for (int i = 0; i < 8; i++) {
        char x[16];
        snprintf(x, sizeof x, i ? "m_%d" : "x0", i - 1);
        at += snprintf(text + at, sizeof text - (size_t)at,
                       "input %%wq_%d: f32[200, 200]\n"
                       "%%tq_%d: f32[200, 200] = aten.t.default(%%wq_%d)\n"
                       "%%q_%d: f32[33, 200] = aten.mm.default(%%%s, %%tq_%d)\n"
                       "%%tk_%d: f32[200, 33] = aten.t.default(%%%s)\n"
                       "%%s_%d: f32[33, 33] = aten.mm.default(%%q_%d, %%tk_%d)\n"
                       "%%ss_%d: f32[33, 33] = aten.mul.Tensor(%%s_%d, 0.005)\n"
                       "%%sm_%d: f32[33, 33] = aten._softmax.default(%%ss_%d, -1, False)\n"
                       "%%a_%d: f32[33, 200] = aten.mm.default(%%sm_%d, %%%s)\n"
                       "%%r_%d: f32[33, 200] = aten.add.Tensor(%%a_%d, %%%s)\n"
                       "input %%nw_%d: f32[200]\ninput %%nb_%d: f32[200]\n"
                       "%%n_%d: (f32[33, 200], f32[33, 1], f32[33, 1]) = "
                       "aten.native_layer_norm.default(%%r_%d, [200], %%nw_%d, %%nb_%d, 1e-05)\n"
                       "%%m_%d: f32[33, 200] = getitem(%%n_%d, 0)\n",
                       i, i, i, i, x, i, i, x, i, i, i, i, i, i, i, i, i, x, i, i, x, i, i, i, i, i, i, i, i);
    }
    snprintf(text + at, sizeof text - (size_t)at, "output %%m_7\n");
    char err[512];
    gr_graph *g = gr_graph_parse(text, "rep71.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    return g;
}

/* A kernel rolled from a template's prefix is the kernel rolled from
 * scratch, whichever kernels made the templates: which of the two
 * codegen threads rolls which core (each takes what is left of the
 * other's share, as they race) leaves the program one thread's, byte
 * for byte (layers_graph: core 0's template has a cut inside the run of
 * four of cores 28-31, which their kernels must not take).  Many
 * compiles: a given split comes once in some 50. */
static void test_which_thread_rolls_a_core_leaves_the_program_one_threads(void)
{
    gr_graph *g = layers_graph();
    size_t n1, n2;
    char *rep1, *rep2, *one = compile_graph_threads(g, "spyre", 1, &n1, &rep1);
    int differ = 0;
    for (int again = 0; again < 250; again++) {
        char *two = compile_graph_threads(g, "spyre", 2, &n2, &rep2);
        differ += n1 != n2 || memcmp(one, two, n1) || strcmp(rep1, rep2);
        free(two);
        free(rep2);
    }
    CU_ASSERT_EQUAL(differ, 0);
    free(one);
    free(rep1);
    gr_graph_free(g);
}

/* The attempt set aside while the other's codegen runs (compile.c,
 * shelve), planned again from its host marks, is the same plan: forced
 * to be planned again (cc_compile_opts.replan) the compile writes the
 * same program and report as without, on traces whose products share
 * an input (two attempts: fused and apart), on both chips. */
static void test_an_attempt_planned_again_after_being_set_aside_gives_the_same_program(void)
{
    static const char *const dirs[] = {"bert_handwritten_small", "gpt2_small_block_tiny"};
    static const char *const chips[] = {"spyre", "spyre-4core"};
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 2; k++) {
            char path[512], err[1024], *rep[2];
            snprintf(path, sizeof path, "%s/traces/%s", SPYRE_SOURCE_DIR, dirs[d]);
            gr_graph *g = gr_graph_load(path, err, sizeof err);
            CU_ASSERT_PTR_NOT_NULL_FATAL(g);
            chip_config cfg;
            tu_config(chips[k], &cfg);
            isa_program *p[2];
            for (int replan = 0; replan < 2; replan++) {
                cc_compile_opts o = {.target = &cfg, .replan = replan};
                p[replan] = compile_reported(g, &o, &rep[replan]);
            }
            CU_ASSERT_EQUAL(p[0]->ncores, p[1]->ncores);
            for (int c = 0; c < p[0]->ncores && c < p[1]->ncores; c++)
                CU_ASSERT(p[0]->cores[c].n == p[1]->cores[c].n &&
                          !memcmp(p[0]->cores[c].insns, p[1]->cores[c].insns, p[0]->cores[c].n * sizeof(isa_insn)));
            CU_ASSERT_STRING_EQUAL(rep[0], rep[1]);
            for (int i = 0; i < 2; i++) {
                isa_program_free(p[i]);
                free(rep[i]);
            }
            gr_graph_free(g);
        }
}

/* ---- the report and work-division overrides ---- */

/* The mlp trace, optionally with extra lines (hints) appended to its text. */
static gr_graph *load_mlp(const char *extra)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/traces/mlp/graph.txt", SPYRE_SOURCE_DIR);
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    static char text[16384];
    size_t n = fread(text, 1, sizeof text - 1024, f);
    fclose(f);
    snprintf(text + n, sizeof text - n, "%s", extra ? extra : "");
    gr_graph *g = gr_graph_parse(text, path, err, sizeof err);
    if (!g)
        fprintf(stderr, "mlp: %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    return g;
}

/* Compile g for cfgname with the work_div overrides wd[0..n) (and
 * no_lx_keep): the report
 * in *report (malloc'd, NULL on an error) and the error text in err. */
/* run_graph with the work divisions wd[0..n) forced. */
static int run_graph_wd(const gr_graph *g, const char *cfgname, const char *const *wd, int n, sim_stats *stats_out)
{
    run_wd = wd;
    run_nwd = n;
    int rc = run_graph(g, cfgname, NULL, NULL, stats_out);
    run_wd = NULL;
    run_nwd = 0;
    return rc;
}

static cc_result *compile_wd(const gr_graph *g, const char *cfgname, const char *const *wd, int n, char **report,
                             char *err, size_t errlen)
{
    static chip_config cfg;
    tu_config(cfgname, &cfg);
    cc_compile_opts o = {0};
    o.target = &cfg;
    o.no_fallback = 1; /* the back half's own refusals */
    o.work_div = wd;
    o.nwork_div = n;
    o.no_lx_keep = no_lx_keep;
    o.placement = placement;
    *report = NULL;
    cc_result *r = cc_compile(g, &o, err, errlen);
    if (r) {
        size_t len = 0;
        FILE *f = open_memstream(report, &len);
        cc_compile_report(r, f);
        fclose(f);
    }
    return r;
}

/* text parsed (as name) into *g and compiled for cfgname with the n
 * work_div specs wd, asserting both work; the report in *rep. */
static cc_result *compile_text(const char *text, const char *name, const char *cfgname, const char *const *wd, int n,
                               gr_graph **g, char **rep)
{
    char err[1024];
    *g = gr_graph_parse(text, name, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(*g);
    cc_result *r = compile_wd(*g, cfgname, wd, n, rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    return r;
}

/* g compiled for cfgname with the one work_div spec (or none: NULL): it
 * compiles (ok) and its report contains want, or it fails and the message
 * contains want. */
static void expect_wd(const gr_graph *g, const char *cfgname, const char *spec, int ok, const char *want)
{
    char err[1024], *rep;
    cc_result *r = compile_wd(g, cfgname, spec ? &spec : NULL, spec ? 1 : 0, &rep, err, sizeof err);
    CU_ASSERT_EQUAL_FATAL(r != NULL, ok);
    TU_ASSERT_CONTAINS(ok ? rep : err, want);
    free(rep);
    cc_result_free(r);
}

/* g run on spyre with the n work_div specs wd, keeping tensors in LX and
 * with --no-lx-keep (both validate): the statistics of each in *kept and
 * *off, printed after label. */
static void run_kept_and_not(const gr_graph *g, const char *const *wd, int n, sim_stats *kept, sim_stats *off,
                             const char *label)
{
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", wd, n, kept), 0);
    no_lx_keep = 1;
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", wd, n, off), 0);
    no_lx_keep = 0;
    printf("\n  %s: %.0f cycles %llu DRAM bytes; --no-lx-keep: %.0f cycles %llu DRAM bytes", label, kept->cycles,
           (unsigned long long)(kept->dram_bytes_read + kept->dram_bytes_written), off->cycles,
           (unsigned long long)(off->dram_bytes_read + off->dram_bytes_written));
}

/* Run a compiled result's program on cfgname with mlp's inputs and
 * weights; outputs not ok against the reference executor (-1: failed
 * before the check), cycles in *cycles. */
static int run_result(cc_result *r, const gr_graph *g, const char *cfgname, double *cycles)
{
    chip_config cfg;
    tu_config(cfgname, &cfg);
    char err[1024], in[600];
    snprintf(in, sizeof in, "%s/traces/mlp/inputs.safetensors", SPYRE_SOURCE_DIR);
    isa_program *p = cc_result_take_program(r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    rt_device *dev;
    rt_program *prog = load_on(&cfg, p, &dev);
    int bad = -1;
    rt_run_result res;
    if (rt_load_graph_tensors(prog, g, in, err, sizeof err) || rt_launch(prog, &res)) {
        fprintf(stderr, "mlp: %s\n", err);
    } else {
        *cycles = res.stats.cycles;
        rt_check_result *chk = NULL;
        int n = 0;
        bad = rt_check_graph(prog, g, &chk, &n, err, sizeof err);
        CU_ASSERT_EQUAL(n, g->noutputs);
        free(chk);
    }
    rt_unload(prog);
    rt_close(dev);
    return bad;
}

/* The grid the report gives kernel `name` ("NAME: grid GMxGN on C cores"). */
static int report_grid(const char *report, const char *name, long *gm, long *gn, int *cores)
{
    char key[128];
    snprintf(key, sizeof key, "\n%s: grid ", name);
    const char *at = report ? strstr(report, key) : NULL;
    int n = 0;
    if (!at || sscanf(at + strlen(key), "%ldx%ld%n", gm, gn, &n) != 2)
        return -1;
    at += strlen(key) + (size_t)n;
    at += strcspn(at, " "); /* xGK or r */
    return sscanf(at, " on %d core", cores) == 1 ? 0 : -1;
}

static void test_report_shows_each_kernels_split_tiles_lx_and_dram_on_spyre(void)
{
    gr_graph *g = load_mlp(NULL);
    char err[1024], *rep;
    cc_result *r = compile_wd(g, "spyre", NULL, 0, &rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    /* the front half's lines stay */
    TU_ASSERT_CONTAINS(rep, "graph mlp: 2 kernels\n",
                            "\nk0_addmm_gelu: matmul [8, 256 | 64]\n",
                            "\ntotal: 2 kernels, ");
    /* then the chip's section, per kernel */
    TU_ASSERT_CONTAINS(rep, "\ntarget spyre (32 cores):\n");
    const char *names[] = {"k0_addmm_gelu", "k1_addmm"};
    for (int k = 0; k < 2; k++) {
        long gm = 0, gn = 0;
        int cores = 0;
        CU_ASSERT_EQUAL(report_grid(rep, names[k], &gm, &gn, &cores), 0);
        /* (k1_addmm splits K too: 1x1x4, cores a multiple of the grid's) */
        CU_ASSERT(gm >= 1 && gn >= 1 && cores % (gm * gn) == 0 && cores <= 32);
        char key[128];
        snprintf(key, sizeof key, "\n%s: grid ", names[k]);
        const char *sec = strstr(rep, key);
        CU_ASSERT_PTR_NOT_NULL_FATAL(sec);
        const char *tiles = strstr(sec, "\n  tiles: core tile ");
        CU_ASSERT_PTR_NOT_NULL_FATAL(tiles);
        /* the tile the grid gives: M rows / gm, rounded up */
        long mt = 0;
        CU_ASSERT_EQUAL(sscanf(tiles, "\n  tiles: core tile %ld rows", &mt), 1);
        CU_ASSERT_EQUAL(mt, (8 + gm - 1) / gm);
        TU_ASSERT_CONTAINS(sec, " in blocks of ");
    }
    TU_ASSERT_CONTAINS(rep, "  lx: addmm.mm, addmm (never leave the kernel)\n",
                            "  dram: reads x, fc1_weight, fc1_bias; writes gelu\n",
                            "  dram: reads gelu, fc2_weight, fc2_bias; writes addmm_1\n",
                            "  restickified: none\n",
                            "\ntotal on spyre: 2 kernels, up to ");
    /* k0 reads at least x, W1 and b1 once (DL16): 8x64 + 256x64 + 256 elements */
    long rd = 0;
    const char *db = strstr(rep, "  dram bytes: ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    CU_ASSERT_EQUAL(sscanf(db, "  dram bytes: %ld read", &rd), 1);
    CU_ASSERT(rd >= 2 * (8 * 64 + 256 * 64 + 256));
    free(rep);
    cc_result_free(r);
    gr_graph_free(g);
}

static void test_work_div_forces_a_grid_that_validates_with_other_cycles(void)
{
    gr_graph *g = load_mlp(NULL);
    char err[1024], *rep;
    double c0 = 0, c1 = 0;
    cc_result *r = compile_wd(g, "spyre", NULL, 0, &rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    long gm, gn;
    int cores;
    CU_ASSERT_EQUAL_FATAL(report_grid(rep, "k0_addmm_gelu", &gm, &gn, &cores), 0);
    CU_ASSERT_FALSE(gm == 1 && gn == 2); /* the override below changes the split */
    CU_ASSERT_EQUAL(run_result(r, g, "spyre", &c0), 0);
    free(rep);
    cc_result_free(r);

    const char *wd[] = {"k0_addmm_gelu=1x2", "k1_addmm=2x1"};
    r = compile_wd(g, "spyre", wd, 2, &rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    TU_ASSERT_CONTAINS(rep, "\nk0_addmm_gelu: grid 1x2 on 2 cores (work_div), split n;",
                            "\nk1_addmm: grid 2x1 on 2 cores (work_div), split m;");
    CU_ASSERT_EQUAL(run_result(r, g, "spyre", &c1), 0);
    CU_ASSERT(c0 > 0 && c1 > 0 && c0 != c1);
    free(rep);
    cc_result_free(r);
    gr_graph_free(g);
}

static void test_work_div_forces_tile_sizes_that_validate_with_other_cycles(void)
{
    /* the same grids as the default, other blocks / chunks */
    gr_graph *g = load_mlp(NULL);
    char err[1024], *rep;
    double c0 = 0, c1 = 0;
    const char *grid[] = {"k0_addmm_gelu=1x2", "k1_addmm=2x1"};
    cc_result *r = compile_wd(g, "spyre", grid, 2, &rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(run_result(r, g, "spyre", &c0), 0);
    free(rep);
    cc_result_free(r);
    const char *tiled[] = {"k0_addmm_gelu=1x2/8x1x64", "k1_addmm=2x1/4x1x128"};
    r = compile_wd(g, "spyre", tiled, 2, &rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    TU_ASSERT_CONTAINS(rep, "  tiles: core tile 8 rows x 2 sticks in blocks of 8 rows x 1 sticks (64 columns), k 64 whole,");
    CU_ASSERT_PTR_NOT_NULL(strstr(rep, "  tiles: core tile 4 rows x 1 sticks in blocks of 4 rows x 1 sticks (64 columns), k 256 in "
                                       "chunks of 128 (fp32 partial sums),"));
    CU_ASSERT_EQUAL(run_result(r, g, "spyre", &c1), 0);
    CU_ASSERT(c0 > 0 && c1 > 0 && c0 != c1);
    free(rep);
    cc_result_free(r);
    gr_graph_free(g);
    /* a row kernel's rows per chunk */
    const char *sm = "graph sm\ninput %x: f32[64, 64]\n%y: f32[64, 64] = aten._softmax.default(%x, -1, False)\n"
                     "output %y\n";
    g = gr_graph_parse(sm, "sm.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const char *rows[] = {"k0_softmax=2/5"};
    expect_wd(g, "spyre", rows[0], 1, "  tiles: core part 32 rows in chunks of 5 rows x 1 sticks (64 columns), two slots");
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", rows, 1, NULL), 0);
    gr_graph_free(g);
    /* more rows than LX holds (a count beyond a core's part is clipped to it) */
    const char *wide = "graph sm\ninput %x: f32[512, 1024]\n%y: f32[512, 1024] = aten._softmax.default(%x, -1, False)\n"
                       "output %y\n";
    g = gr_graph_parse(wide, "wide.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    expect_wd(g, "spyre-4core", "k0_softmax=2/200", 0, "kernel k0_softmax: work_div chunks of 200 rows do not fit 157312 bytes of LX");
    gr_graph_free(g);
}

static void test_a_work_div_hint_line_forces_the_grid_and_options_win_over_it(void)
{
    gr_graph *g = load_mlp("hint work_div k0_addmm_gelu=2x2\nhint something_else 1\n");
    char err[1024], *rep;
    double cyc = 0;
    cc_result *r = compile_wd(g, "spyre-4core", NULL, 0, &rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    TU_ASSERT_CONTAINS(rep, "\nk0_addmm_gelu: grid 2x2 on 4 cores (work_div), split m and n;");
    TU_ASSERT_LACKS(rep, "\nk1_addmm: grid 2x2 on 4 cores (work_div)");
    CU_ASSERT_EQUAL(run_result(r, g, "spyre-4core", &cyc), 0);
    free(rep);
    cc_result_free(r);
    expect_wd(g, "spyre-4core", "k0_addmm_gelu=1x1", 1, "\nk0_addmm_gelu: grid 1x1 on 1 core (work_div), split nothing;");
    gr_graph_free(g);
}

static void test_bad_work_div_specs_are_errors_naming_the_kernel(void)
{
    static const struct {
        const char *spec, *want;
    } cases[] = {
        {"k7_nothing=2x2", "work_div \"k7_nothing=2x2\": no kernel k7_nothing (the kernels are k0_addmm_gelu, k1_addmm)"},
        {"k0_addmm_gelu=8x8", "kernel k0_addmm_gelu: work_div \"8x8\" uses 64 cores, more than the 32 of spyre"},
        {"k0_addmm_gelu=16x1", "kernel k0_addmm_gelu: work_div 16x1: M has 8 rows, fewer than 16 parts"},
        {"k1_addmm=1x2", "kernel k1_addmm: work_div 1x2: N has 1 sticks (64 columns), fewer than 2 parts"},
        {"k0_addmm_gelu=4", "kernel k0_addmm_gelu: work_div \"4\": a matmul kernel takes GMxGN"},
        {"k0_addmm_gelu=0x2", "kernel k0_addmm_gelu: work_div \"0x2\": a matmul kernel takes GMxGN"},
        {"k0_addmm_gelu", "work_div \"k0_addmm_gelu\": expected KERNEL=SPEC"},
        {"k0_addmm_gelu=1x2/8x1", "kernel k0_addmm_gelu: work_div \"1x2/8x1\": a matmul kernel takes GMxGN"},
        {"k0_addmm_gelu=1x2/8x1x0", "kernel k0_addmm_gelu: work_div \"1x2/8x1x0\": a matmul kernel takes GMxGN"},
        {"k1_addmm=1x1/8x1x100",
         "kernel k1_addmm: work_div tiling 8x1x100: the blocks do not fit 1625344 bytes of LX, or the K chunk is not a "
         "multiple of 64"},
    };
    gr_graph *g = load_mlp(NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[1024], *rep;
        const char *wd[] = {cases[i].spec};
        cc_result *r = compile_wd(g, "spyre", wd, 1, &rep, err, sizeof err);
        CU_ASSERT_PTR_NULL(r);
        if (!strstr(err, cases[i].want))
            fprintf(stderr, "work_div %s: got \"%s\"\n", cases[i].spec, err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].want));
        cc_result_free(r);
    }
    gr_graph_free(g);
    /* a row kernel takes a core count, at most its rows */
    const char *sm = "graph sm\ninput %x: f32[4, 64]\n%y: f32[4, 64] = aten._softmax.default(%x, -1, False)\n"
                     "output %y\nhint work_div k0_softmax=8\n";
    char err[1024];
    g = gr_graph_parse(sm, "sm.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    expect_wd(g, "spyre", NULL, 0, "kernel k0_softmax: work_div 8: the kernel has 4 rows, fewer than 8 cores");
    expect_wd(g, "spyre", "k0_softmax=2", 1, "\nk0_softmax: rows over 2 cores (work_div), split rows; rows: 4 rows in 2 parts of 2;");
    expect_wd(g, "spyre", "k0_softmax=2x2", 0, "kernel k0_softmax: work_div \"2x2\": a row kernel takes a core count");
    expect_wd(g, "spyre", "k0_softmax=2/x", 0, "kernel k0_softmax: work_div \"2/x\": a row kernel takes a core count");
    gr_graph_free(g);
}

/* A batched product's batch split in parts, each a grid of its own cores
 * over a range of batch indices (work_div GMxGNbGB): every split, even
 * and uneven, with the parts' grids split too or not, validates against
 * the reference executor on both chips; more parts than batch indices is
 * an error naming the kernel. */
static void test_a_batch_split_over_the_cores_validates_on_both_chips(void)
{
    const char *text = "graph bmm\ninput %a: f32[6, 40, 128]\ninput %b: f32[6, 128, 96]\n"
                       "%y: f32[6, 40, 96] = aten.bmm.default(%a, %b)\noutput %y\n";
    char err[1024];
    gr_graph *g = gr_graph_parse(text, "bmm.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    expect_wd(g, "spyre", "k0_bmm=1x1b4", 1,
              "\nk0_bmm: grid 1x1b4 on 4 cores (work_div), split batch; batch: 6 indices in 4 parts of 2 or 1 "
              "(uneven edge), a grid each; m: 40 rows whole;");
    expect_wd(g, "spyre", "k0_bmm=2x1b3", 1,
              "\nk0_bmm: grid 2x1b3 on 6 cores (work_div), split batch and m; batch: 6 indices in 3 parts of 2");
    expect_wd(g, "spyre", "k0_bmm=1x1b8", 0,
              "kernel k0_bmm: work_div 1x1b8: the product has 6 batch indices, fewer than 8 parts");
    expect_wd(g, "spyre", "k0_bmm=1x1b0", 0, "kernel k0_bmm: work_div \"1x1b0\": a matmul kernel takes GMxGN");
    static const char *const specs[] = {"k0_bmm=1x1b4", "k0_bmm=2x1b2", "k0_bmm=1x2b2", "k0_bmm=1x1b3/16x1x64"};
    for (int c = 0; c < 2; c++)
        for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
            int bad = run_graph_wd(g, c ? "spyre-4core" : "spyre", &specs[i], 1, NULL);
            CU_ASSERT_EQUAL(bad, 0);
            if (bad)
                fprintf(stderr, "%s on %s: %d outputs wrong\n", specs[i], c ? "spyre-4core" : "spyre", bad);
        }
    gr_graph_free(g);
}

/* The FFN down-projection of a BERT-base layer: 128 tokens x 3072 -> 768.
 * A skinny activation against a 4.7 MB weight: the grid splits N so each
 * core reads only its own slice of the weight, once, and both PT corelets
 * of each working core share the loaded operands.  (The weight is an
 * input here: a param needs a weights file; the layout is the same.) */
static const char *ffn_down_graph = "graph ffn_down\n"
                                    "input %x: f32[128, 3072]\n"
                                    "input %w: f32[768, 3072]\n"
                                    "%t: f32[3072, 768] = aten.t.default(%w)\n"
                                    "%y: f32[128, 768] = aten.mm.default(%x, %t)\n"
                                    "output %y\n";

static void test_a_skinny_linear_reads_its_weight_about_once_on_both_pt_corelets(void)
{
    static sim_stats st;
    char err[512];
    gr_graph *g = gr_graph_parse(ffn_down_graph, "test.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(run_graph(g, "spyre", NULL, NULL, &st), 0);
    gr_graph_free(g);
    /* DL16 on the device: input + weight + output */
    const double once = 2.0 * (128.0 * 3072 + 768.0 * 3072 + 128.0 * 768);
    CU_ASSERT(st.dram_bytes_read > 0 && (double)st.dram_bytes_read <= 1.5 * once);
    double pt0 = 0, pt1 = 0;
    for (int c = 0; c < SIM_MAX_CORES; c++) {
        pt0 += st.unit_busy[c][ISA_U_PT0];
        pt1 += st.unit_busy[c][ISA_U_PT1];
    }
    /* both corelets carry about half the product each */
    CU_ASSERT(pt0 > 0 && pt1 > 0);
    CU_ASSERT(pt1 >= 0.4 * pt0 && pt0 >= 0.4 * pt1);
}

/* rotate_half over heads of 32 columns read from a 256 x 512 input
 * (256 KiB in DL16, more than spyre-4core's LX): each row chunk stages
 * only the sticks its restickify reads, so the kernel compiles and
 * validates (races checked) instead of needing the whole input in LX. */
static const char *staged_rows_graph = "graph rh\n"
                                       "input %x: f32[256, 512]\n"
                                       "%v: f32[256, 16, 32] = aten.view.default(%x, [256, 16, 32])\n"
                                       "%t: f32[16, 256, 32] = aten.transpose.int(%v, 0, 1)\n"
                                       "%a: f32[16, 256, 16] = aten.slice.Tensor(%t, 2, 16, 9223372036854775807)\n"
                                       "%n: f32[16, 256, 16] = aten.neg.default(%a)\n"
                                       "%b: f32[16, 256, 16] = aten.slice.Tensor(%t, 2, 0, 16)\n"
                                       "%c: f32[16, 256, 32] = aten.cat.default([%n, %b], -1)\n"
                                       "%m: f32[16, 256, 32] = aten.mul.Tensor(%t, %c)\n"
                                       "output %m\n";

static void test_a_staged_operand_larger_than_lx_is_staged_per_chunk(void)
{
    expect_text_validates_on_both_chips(staged_rows_graph);
}

/* Per-head products over 8 heads of 32 columns of a 1024 x 256 input
 * (512 KiB in DL16, more than spyre-4core's LX): every other head starts
 * in the middle of a stick, so A needs a restickify, and each block's K
 * chunk stages only the sticks its sfp.rst reads, in the block's A/B
 * slot; the kernel compiles and validates (races checked) on both chips
 * instead of needing the whole input in each core's LX. */
static const char *staged_matmul_graph =
    "graph qh\n"
    "input %x: f32[1024, 256]\n"
    "input %w: f32[8, 32, 64]\n"
    "%v: f32[1024, 8, 32] = aten.view.default(%x, [1024, 8, 32])\n"
    "%t: f32[8, 1024, 32] = aten.transpose.int(%v, 0, 1)\n"
    "%s: f32[8, 1024, 64] = aten.bmm.default(%t, %w)\n"
    "output %s\n";

static void test_a_matmul_operand_larger_than_lx_is_staged_per_block(void)
{
    expect_text_validates_on_both_chips(staged_matmul_graph);
}

/* Attention's output projection: the per-head products [h, t, d] are
 * transposed and merged back into the A of a linear, [t, h*d].  Its lane
 * walk runs past each head's 128 columns (2 sticks) into the next head,
 * but every K stick is still a whole stick of the bmm's result: the view
 * wraps (be_view_wrap) and A is loaded in place, no restickify. */
static const char *attn_out_graph =
    "graph attn_out\n"
    "input %p: f32[4, 64, 64]\n"
    "input %v: f32[4, 64, 128]\n"
    "input %w: f32[256, 512]\n"
    "%o: f32[4, 64, 128] = aten.bmm.default(%p, %v)\n"
    "%o4: f32[1, 4, 64, 128] = aten._unsafe_view.default(%o, [1, 4, 64, 128])\n"
    "%tr: f32[1, 64, 4, 128] = aten.transpose.int(%o4, 1, 2)\n"
    "%cl: f32[1, 64, 4, 128] = aten.clone.default(%tr, memory_format=\"contiguous_format\")\n"
    "%r: f32[64, 512] = aten._unsafe_view.default(%cl, [64, 512])\n"
    "%wt: f32[512, 256] = aten.t.default(%w)\n"
    "%y: f32[64, 256] = aten.mm.default(%r, %wt)\n"
    "output %y\n";

static void test_heads_merged_into_a_linears_a_are_read_in_place_and_validate_on_both_chips(void)
{
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(attn_out_graph, "attn_out.txt", "spyre", NULL, 0, &g, &rep);
    const char *k1 = strstr(rep, "\nk1_mm: grid");
    CU_ASSERT_PTR_NOT_NULL_FATAL(k1);
    CU_ASSERT_EQUAL(strncmp(strstr(k1, "  restickified: "), "  restickified: none\n", 21), 0);
    TU_ASSERT_CONTAINS(rep, " 0 operands restickified,");
    free(rep);
    cc_result_free(r);
    CU_ASSERT_EQUAL(run_graph(g, "spyre", NULL, NULL, NULL), 0);
    CU_ASSERT_EQUAL(run_graph(g, "spyre-4core", NULL, NULL, NULL), 0);
    gr_graph_free(g);
}

/* Attention over heads of one stick (64 lanes) each: per head, q and v
 * are whole stick groups of their [t, h*d] buffers, so the batched
 * products read them in place (the batch loop steps whole groups) and
 * only k^T, read across its sticks, is restickified, per block. */
static const char *heads64_graph = "graph heads64\n"
                                   "input %x: f32[64, 256]\n"
                                   "input %wq: f32[256, 256]\n"
                                   "input %wk: f32[256, 256]\n"
                                   "input %wv: f32[256, 256]\n"
                                   "%q: f32[64, 256] = aten.mm.default(%x, %wq)\n"
                                   "%k: f32[64, 256] = aten.mm.default(%x, %wk)\n"
                                   "%v: f32[64, 256] = aten.mm.default(%x, %wv)\n"
                                   "%qh: f32[64, 4, 64] = aten.view.default(%q, [64, 4, 64])\n"
                                   "%qt: f32[4, 64, 64] = aten.transpose.int(%qh, 0, 1)\n"
                                   "%kh: f32[64, 4, 64] = aten.view.default(%k, [64, 4, 64])\n"
                                   "%kt: f32[4, 64, 64] = aten.transpose.int(%kh, 0, 1)\n"
                                   "%ktt: f32[4, 64, 64] = aten.transpose.int(%kt, 1, 2)\n"
                                   "%s: f32[4, 64, 64] = aten.bmm.default(%qt, %ktt)\n"
                                   "%p: f32[4, 64, 64] = aten._softmax.default(%s, -1, False)\n"
                                   "%vh: f32[64, 4, 64] = aten.view.default(%v, [64, 4, 64])\n"
                                   "%vt: f32[4, 64, 64] = aten.transpose.int(%vh, 0, 1)\n"
                                   "%o: f32[4, 64, 64] = aten.bmm.default(%p, %vt)\n"
                                   "output %o\n";

static void test_whole_stick_heads_are_read_in_place_by_batched_products_and_validate(void)
{
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(heads64_graph, "heads64.txt", "spyre", NULL, 0, &g, &rep);
    const char *qk = strstr(rep, "\nk2_bmm: grid"), *pv = strstr(rep, "\nk5_bmm: grid");
    CU_ASSERT_PTR_NOT_NULL_FATAL(qk);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pv);
    CU_ASSERT_EQUAL(strncmp(strstr(qk, "  restickified: "), "  restickified: B k (sfp.rst from the sticks each block "
                                                            "reads, staged)\n", 71), 0);
    CU_ASSERT_EQUAL(strncmp(strstr(pv, "  restickified: "), "  restickified: none\n", 21), 0);
    TU_ASSERT_CONTAINS(rep, " 1 operand restickified,");
    free(rep);
    cc_result_free(r);
    CU_ASSERT_EQUAL(run_graph(g, "spyre", NULL, NULL, NULL), 0);
    CU_ASSERT_EQUAL(run_graph(g, "spyre-4core", NULL, NULL, NULL), 0);
    gr_graph_free(g);
}

/* A batch split whose parts do not divide the batch (4 heads in parts of
 * 2, 1, 1) does not cut its rows as a row kernel on as many cores would
 * (rows 0..127 against 0..85): its scores are not kept in LX for the
 * softmax on those cores (the report's access check took the split as
 * aligned and codegen stored a core's third head past its kept region,
 * an assertion). */
static void test_an_uneven_batch_split_keeps_nothing_for_a_row_kernel_and_validates(void)
{
    static const char *const wd[] = {"k2_bmm=1x1b3", "k3_softmax=3"};
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(heads64_graph, "heads64.txt", "spyre", wd, 2, &g, &rep);
    const char *sm = strstr(rep, "\nk3_softmax: rows");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sm);
    CU_ASSERT_EQUAL(strncmp(strstr(sm, "  from lx: "), "  from lx: none\n", 16), 0);
    free(rep);
    cc_result_free(r);
    run_wd = wd;
    run_nwd = 2;
    CU_ASSERT_EQUAL(run_graph(g, "spyre", NULL, NULL, NULL), 0);
    run_wd = NULL;
    run_nwd = 0;
    gr_graph_free(g);
}

/* g validates on spyre-4core as compiled, and on spyre under each pair of
 * forced work divisions (what names the graph in a failure's line). */
static void validate_pairs(gr_graph *g, const char *const (*wd)[2], size_t n, const char *what)
{
    CU_ASSERT_EQUAL(run_graph(g, "spyre-4core", NULL, NULL, NULL), 0);
    for (size_t i = 0; i < n; i++) {
        run_wd = wd[i];
        run_nwd = 2;
        int bad = run_graph(g, "spyre", NULL, NULL, NULL);
        if (bad)
            fprintf(stderr, "%s with work_div %s, %s\n", what, wd[i][0], wd[i][1]);
        CU_ASSERT_EQUAL(bad, 0);
        run_wd = NULL;
        run_nwd = 0;
    }
    gr_graph_free(g);
}

/* The same heads merged into a linear's A: the bmm's result takes the
 * type [1, t, h*d] (be_view's group steps: each head's store steps two
 * whole sticks), so the linear reads plain stick groups; the values
 * validate under batch splits, row and column splits of the bmm and
 * other schemes of the linear, on both chips. */
static void test_heads_merged_into_a_linears_a_take_one_stick_dimension_and_validate_under_any_tiling(void)
{
    static const char *const wd[][2] = {
        {"k0_bmm=1x1b4", "k1_mm=1x2"}, {"k0_bmm=1x2b2", "k1_mm=32x1r"}, {"k0_bmm=2x1", "k1_mm=2x2/8x1x64"},
        {"k0_bmm=4x2", "k1_mm=16x2r"},
    };
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(attn_out_graph, "attn_out.txt", "spyre", NULL, 0, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "reads: r f32[1, 64, 512], w f32[256, 512]");
    free(rep);
    cc_result_free(r);
    validate_pairs(g, wd, sizeof wd / sizeof wd[0], "attn_out");
}

/* Wrapped walks that start inside a period and are cut anywhere: A is
 * columns 64..319 of [64, 3, 128] viewed as [64, 384] (its first K stick
 * is a head's second), B is [96, 2, 128] viewed as [96, 256] (N wraps);
 * K chunks of one stick, whole K, row splits, split-K, B broadcast over
 * the ring and a grid over the ring all validate. */
static const char *wrap_graph = "graph wrap\n"
                                "input %x: f32[64, 3, 128]\n"
                                "input %w: f32[256, 96]\n"
                                "input %wb: f32[96, 2, 128]\n"
                                "%r: f32[64, 384] = aten.view.default(%x, [64, 384])\n"
                                "%a: f32[64, 256] = aten.slice.Tensor(%r, 1, 64, 320)\n"
                                "%y: f32[64, 96] = aten.mm.default(%a, %w)\n"
                                "%b: f32[96, 256] = aten.view.default(%wb, [96, 256])\n"
                                "%z: f32[64, 256] = aten.mm.default(%y, %b)\n"
                                "output %y, %z\n";

static void test_operands_wrapping_from_inside_a_period_validate_under_any_tiling(void)
{
    static const char *const wd[][2] = {
        {"k0_mm=1x2/64x1x64", "k1_mm=1x4/64x1x64"},  {"k0_mm=1x1/64x2x256", "k1_mm=1x1/64x4x96"},
        {"k0_mm=2x1/32x2x128", "k1_mm=2x2"},         {"k0_mm=1x1x2", "k1_mm=1x2x2"},
        {"k0_mm=32x1r", "k1_mm=16x2r"},               {"k0_mm=8x2", "k1_mm=32x1r"},
    };
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(wrap_graph, "wrap.txt", "spyre", NULL, 0, &g, &rep);
    TU_ASSERT_CONTAINS(rep, " 0 operands restickified,");
    free(rep);
    cc_result_free(r);
    validate_pairs(g, wd, sizeof wd / sizeof wd[0], "wrap");
}

/* The issue's softmax over (512, 1024): with LX planning (the fused
 * kernel keeps max, exp and sum on chip) fewer DRAM bytes and fewer cycles
 * than without (every intermediate through DRAM), on both chips, and both
 * validate. */
/* Six results, each read again later; a1 last at the very end. */
static const char *keep_graph = "graph keep\n"
                                "input %x: f32[8192, 256]\n"
                                "input %w: f32[256, 256]\n"
                                "%a1: f32[8192, 256] = aten.neg.default(%x)\n"
                                "%m1: f32[8192, 256] = aten.mm.default(%a1, %w)\n"
                                "%a2: f32[8192, 256] = aten.relu.default(%m1)\n"
                                "%m2: f32[8192, 256] = aten.mm.default(%a2, %w)\n"
                                "%a3: f32[8192, 256] = aten.relu.default(%m2)\n"
                                "%m3: f32[8192, 256] = aten.mm.default(%a3, %w)\n"
                                "%a4: f32[8192, 256] = aten.relu.default(%m3)\n"
                                "%m4: f32[8192, 256] = aten.mm.default(%a4, %w)\n"
                                "%a5: f32[8192, 256] = aten.relu.default(%m4)\n"
                                "%m5: f32[8192, 256] = aten.mm.default(%a5, %w)\n"
                                "%a6: f32[8192, 256] = aten.relu.default(%m5)\n"
                                "%s0: f32[8192, 256] = aten.add.Tensor(%a6, %a5)\n"
                                "%s1: f32[8192, 256] = aten.add.Tensor(%s0, %a4)\n"
                                "%s2: f32[8192, 256] = aten.add.Tensor(%s1, %a3)\n"
                                "%s3: f32[8192, 256] = aten.add.Tensor(%s2, %a2)\n"
                                "%y: f32[8192, 256] = aten.add.Tensor(%s3, %a1)\n"
                                "output %y\n";

static void test_tensors_kept_in_lx_across_kernels_spill_the_furthest_used_and_validate(void)
{
    /* every kernel splits the 8192 rows over all 32 cores alike, so each
     * core keeps its 256 rows (128 KiB) of a result for the kernels that
     * read it; a1 to a5 do not fit LX with the kernels' own tiles (forced:
     * free to tile smaller, they all stay, the next test), so a1 and a2,
     * read again only by the last kernel, spill */
    static const char *const wd[] = {"k0_neg=32",
                                     "k1_mm_relu=32x1/128x4x256",
                                     "k2_mm_relu=32x1/128x4x256",
                                     "k3_mm_relu=32x1/128x4x256",
                                     "k4_mm_relu=32x1/128x4x256",
                                     "k5_mm_relu_add=32x1/128x2x256"};
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(keep_graph, "keep.txt", "spyre", wd, 6, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "  kept in lx: a1 for k0_neg..k1_mm_relu (131072 bytes per core at lx ",
                            "; spilled: also written to dram)\n",
                            "  kept in lx: a3 for k2_mm_relu..k5_mm_relu_add (131072 bytes per core",
                            "  reloads from dram (spilled): a2, a1\n",
                            "\nlx across kernels: 4 tensors kept, 6 reads from lx, 2 spills, 2 reloads from dram\n");
    free(rep);
    cc_result_free(r);
    sim_stats kept, off;
    run_kept_and_not(g, wd, 6, &kept, &off, "kept in lx");
    CU_ASSERT(kept.dram_bytes_read + kept.dram_bytes_written < off.dram_bytes_read + off.dram_bytes_written);
    CU_ASSERT(kept.cycles < off.cycles);
    gr_graph_free(g);
}

/* The same chain free to tile: the products take smaller blocks where
 * keeping a result saves more DRAM traffic than the blocks cost (the
 * lxplan's lx_shrink_for), so all five stay and none spills; with the
 * larger tiles kept (as before) it spilled two and ran 1,112,203 cycles,
 * now 609,122. */
static void test_kernels_tile_smaller_so_more_tensors_stay_in_lx(void)
{
    static const char *const wd[] = {"k0_neg=32",       "k1_mm_relu=32x1", "k2_mm_relu=32x1",
                                     "k3_mm_relu=32x1", "k4_mm_relu=32x1", "k5_mm_relu_add=32x1"};
    static const char *const big[] = {"k0_neg=32",
                                      "k1_mm_relu=32x1/128x4x256",
                                      "k2_mm_relu=32x1/128x4x256",
                                      "k3_mm_relu=32x1/128x4x256",
                                      "k4_mm_relu=32x1/128x4x256",
                                      "k5_mm_relu_add=32x1/128x2x256"};
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(keep_graph, "keep.txt", "spyre", wd, 6, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "\nlx across kernels: 5 tensors kept, 10 reads from lx, 0 spills, 0 reloads from dram\n");
    free(rep);
    cc_result_free(r);
    sim_stats small, large;
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", wd, 6, &small), 0);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", big, 6, &large), 0);
    printf("\n  smaller tiles: %.0f cycles, the larger ones: %.0f", small.cycles, large.cycles);
    CU_ASSERT(small.dram_bytes_read + small.dram_bytes_written < large.dram_bytes_read + large.dram_bytes_written);
    CU_ASSERT(small.cycles < 0.7 * large.cycles);
    gr_graph_free(g);
}

/* Llama's attention at S tokens, H heads of D, KV heads shared by H / KV
 * (tools/export.py's llama_8b_layer, from the q, k and v projections to
 * the output projection, which here makes 64 columns). */
static char *attention_graph(int S, int H, int KV, int D)
{
    const int R = H / KV, HD = H * D, KD = KV * D, h = D / 2;
    char *t = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&t, &len);
    fprintf(f, "graph attn\ninput %%q: f32[%d, %d]\ninput %%k: f32[%d, %d]\ninput %%v: f32[%d, %d]\n", S, HD, S, KD,
            S, KD);
    fprintf(f, "input %%cos: f32[%d, %d]\ninput %%sin: f32[%d, %d]\ninput %%mask: f32[%d, %d]\n", S, D, S, D, S, S);
    fprintf(f, "input %%wo: f32[64, %d]\n", HD);
    static const char *const x[] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
        const int n = i ? KV : H;
        fprintf(f, "%%%sv: f32[1, %d, %d, %d] = aten.view.default(%%%s, [1, %d, %d, %d])\n", x[i], S, n, D, x[i], S, n, D);
        fprintf(f, "%%%st: f32[1, %d, %d, %d] = aten.transpose.int(%%%sv, 1, 2)\n", x[i], n, S, D, x[i]);
    }
    for (int i = 0; i < 2; i++) { /* rotary embedding: x * cos + rotate_half(x) * sin */
        const char *a = x[i];
        const int n = i ? KV : H;
        fprintf(f, "%%%s1: f32[1, %d, %d, %d] = aten.mul.Tensor(%%%st, %%cos)\n", a, n, S, D, a);
        fprintf(f, "%%%s2: f32[1, %d, %d, %d] = aten.slice.Tensor(%%%st, 3, %d, %d)\n", a, n, S, h, a, h, D);
        fprintf(f, "%%%s3: f32[1, %d, %d, %d] = aten.neg.default(%%%s2)\n", a, n, S, h, a);
        fprintf(f, "%%%s4: f32[1, %d, %d, %d] = aten.slice.Tensor(%%%st, 3, 0, %d)\n", a, n, S, h, a, h);
        fprintf(f, "%%%s5: f32[1, %d, %d, %d] = aten.cat.default([%%%s3, %%%s4], -1)\n", a, n, S, D, a, a);
        fprintf(f, "%%%s6: f32[1, %d, %d, %d] = aten.mul.Tensor(%%%s5, %%sin)\n", a, n, S, D, a);
        fprintf(f, "%%%sr: f32[1, %d, %d, %d] = aten.add.Tensor(%%%s1, %%%s6)\n", a, n, S, D, a, a);
    }
    static const char *const kvsrc[] = {"kr", "vt"}, *const kvn[] = {"k", "v"};
    for (int i = 0; i < 2; i++) { /* repeat_kv: expand and copy */
        const char *a = kvn[i];
        fprintf(f, "%%%su: f32[1, %d, 1, %d, %d] = aten.unsqueeze.default(%%%s, 2)\n", a, KV, S, D, kvsrc[i]);
        fprintf(f, "%%%se: f32[1, %d, %d, %d, %d] = aten.expand.default(%%%su, [1, %d, %d, %d, %d])\n", a, KV, R, S, D,
                a, KV, R, S, D);
        fprintf(f, "%%%sc: f32[1, %d, %d, %d, %d] = aten.clone.default(%%%se, memory_format=\"contiguous_format\")\n", a,
                KV, R, S, D, a);
        fprintf(f, "%%%sh: f32[1, %d, %d, %d] = aten._unsafe_view.default(%%%sc, [1, %d, %d, %d])\n", a, H, S, D, a, H,
                S, D);
    }
    fprintf(f, "%%kT: f32[1, %d, %d, %d] = aten.transpose.int(%%kh, 2, 3)\n", H, D, S);
    fprintf(f, "%%qb: f32[%d, %d, %d] = aten.view.default(%%qr, [%d, %d, %d])\n", H, S, D, H, S, D);
    fprintf(f, "%%kb: f32[%d, %d, %d] = aten._reshape_alias.default(%%kT, [%d, %d, %d], [%d, 1, %d])\n", H, D, S, H, D,
            S, S * D, D);
    fprintf(f, "%%s: f32[%d, %d, %d] = aten.bmm.default(%%qb, %%kb)\n", H, S, S);
    fprintf(f, "%%s4: f32[1, %d, %d, %d] = aten.view.default(%%s, [1, %d, %d, %d])\n", H, S, S, H, S, S);
    fprintf(f, "%%sd: f32[1, %d, %d, %d] = aten.div.Tensor(%%s4, 11.313708498984761)\n", H, S, S);
    fprintf(f, "%%sm: f32[1, %d, %d, %d] = aten.add.Tensor(%%sd, %%mask)\n", H, S, S);
    fprintf(f, "%%p: f32[1, %d, %d, %d] = aten._softmax.default(%%sm, -1, False)\n", H, S, S);
    fprintf(f, "%%pb: f32[%d, %d, %d] = aten.view.default(%%p, [%d, %d, %d])\n", H, S, S, H, S, S);
    fprintf(f, "%%vb: f32[%d, %d, %d] = aten.view.default(%%vh, [%d, %d, %d])\n", H, S, D, H, S, D);
    fprintf(f, "%%o: f32[%d, %d, %d] = aten.bmm.default(%%pb, %%vb)\n", H, S, D);
    fprintf(f, "%%o4: f32[1, %d, %d, %d] = aten.view.default(%%o, [1, %d, %d, %d])\n", H, S, D, H, S, D);
    fprintf(f, "%%ot: f32[1, %d, %d, %d] = aten.transpose.int(%%o4, 1, 2)\n", S, H, D);
    fprintf(f, "%%oc: f32[1, %d, %d, %d] = aten.clone.default(%%ot, memory_format=\"contiguous_format\")\n", S, H, D);
    fprintf(f, "%%om: f32[%d, %d] = aten.view.default(%%oc, [%d, %d])\n", S, HD, S, HD);
    fprintf(f, "%%wt: f32[%d, 64] = aten.t.default(%%wo)\n%%y: f32[%d, 64] = aten.mm.default(%%om, %%wt)\noutput %%y\n",
            HD, S);
    fclose(f);
    return t;
}

/* The attention's scores and probabilities stay in LX from QK^T through
 * the softmax to PV: the products split their heads over the cores that
 * wrote q, one head a core (1x1b8; the rotary embedding takes QK^T's
 * split, on its own since its estimate prices a chunk's DRAM streams of
 * every core, before by be_rows_ahead), the softmax aligns with them, and validate on
 * both chips.  256 tokens, 8 heads of 128, 2 KV heads: 214,469 cycles on
 * spyre with every score through DRAM (before), 154,636 with them kept
 * on 4 cores (165,733 before the rotary embedding staged q and k once a
 * chunk), 137,537 on main b6370a4, 108,608 with q kept too on 8. */
static void test_attention_scores_stay_in_lx_from_qkt_to_pv_and_validate(void)
{
    char *text = attention_graph(256, 8, 2, 128), *rep;
    gr_graph *g;
    cc_result *r = compile_text(text, "attn.txt", "spyre", NULL, 0, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "k0_mul_neg_cat: rows over 8 cores,", "k1_bmm: grid 1x1b8 on 8 cores",
                       "k4_bmm: grid 1x1b8 on 8 cores", "  kept in lx: qr for k0_mul_neg_cat..k1_bmm (65536 bytes per core",
                       "  kept in lx: s for k1_bmm..k2_div_add_softmax (131072 bytes per core",
                       "  kept in lx: p for k2_div_add_softmax..k4_bmm (131072 bytes per core", "  from lx: qr\n",
                       "  from lx: s\n", "  from lx: p\n");
    /* rotate_half's three loads of q (x, and x a stick on and a stick
     * back under cat's where) and of k are staged once per chunk, their
     * spans together: 4,193,024 bytes read when each load staged its own */
    const char *rope = strstr(rep, "k0_mul_neg_cat: rows over");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rope);
    CU_ASSERT_PTR_NOT_NULL_FATAL(strstr(rope, "dram bytes: "));
    CU_ASSERT(atol(strstr(rope, "dram bytes: ") + 12) < 3300000);
    free(rep);
    cc_result_free(r);
    sim_stats kept, off;
    run_kept_and_not(g, NULL, 0, &kept, &off, "attention, kept in lx");
    CU_ASSERT(kept.dram_bytes_read + kept.dram_bytes_written < off.dram_bytes_read + off.dram_bytes_written);
    /* 0.765 of --no-lx-keep's cycles before the rotary tables (and there
     * the mask too) were shared over the ring, which gains more without
     * the LX keeping: 153,283 against 178,956 cycles */
    CU_ASSERT(kept.cycles < 0.9 * off.cycles);
    CU_ASSERT(kept.cycles < 120000); /* 214,469 with the scores through DRAM, 137,537 on 4 cores */
    CU_ASSERT_EQUAL(run_graph(g, "spyre-4core", NULL, NULL, NULL), 0);
    gr_graph_free(g);
    free(text);
}

/* One head per core, 512 tokens as in Llama-8B prefill: 512 KB of scores
 * a core fit LX only with the product in smaller blocks, and the
 * probabilities take the scores' region (the softmax reads each row
 * before it writes it there).  16 heads (q's writer forced onto 16 cores,
 * one head each): 1,006,866 cycles before, 465,274 now. */
static void test_attention_probabilities_take_the_scores_region_and_validate(void)
{
    static const char *const wd[] = {"k0_mul_neg_cat=16"};
    char *text = attention_graph(512, 16, 4, 128), *rep;
    gr_graph *g;
    cc_result *r = compile_text(text, "attn.txt", "spyre", wd, 1, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "k1_bmm: grid 1x1b16 on 16 cores", "k4_bmm: grid 1x1b16 on 16 cores",
                       "\nlx across kernels: 3 tensors kept, 3 reads from lx, 0 spills, 0 reloads from dram\n");
    const char *s = strstr(rep, "  kept in lx: s for k1_bmm..k2_div_add_softmax (524288 bytes per core at lx ");
    const char *p = strstr(rep, "  kept in lx: p for k2_div_add_softmax..k4_bmm (524288 bytes per core at lx ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(atol(strstr(s, " at lx ") + 7), atol(strstr(p, " at lx ") + 7)); /* one region */
    free(rep);
    cc_result_free(r);
    sim_stats kept, off;
    run_kept_and_not(g, wd, 1, &kept, &off, "one head per core, kept in lx");
    CU_ASSERT(kept.cycles < 0.6 * off.cycles);
    gr_graph_free(g);
    free(text);
}

/* Three 512-wide linears: each reads its weight from DRAM once and
 * passes it around the ring; the activations stay in LX between them. */
static const char *mlp3_graph = "graph mlp3\n"
                                "input %x: f32[512, 512]\n"
                                "input %w1: f32[512, 512]\n"
                                "input %w2: f32[512, 512]\n"
                                "input %w3: f32[512, 512]\n"
                                "%h1: f32[512, 512] = aten.mm.default(%x, %w1)\n"
                                "%r1: f32[512, 512] = aten.relu.default(%h1)\n"
                                "%h2: f32[512, 512] = aten.mm.default(%r1, %w2)\n"
                                "%r2: f32[512, 512] = aten.relu.default(%h2)\n"
                                "%h3: f32[512, 512] = aten.mm.default(%r2, %w3)\n"
                                "output %h3\n";

static void test_matmuls_on_all_cores_broadcast_b_over_the_ring_and_validate(void)
{
    char err[1024], *rep;
    gr_graph *g = gr_graph_parse(mlp3_graph, "mlp3.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    static const char *const bc[] = {"k0_mm_relu=32x1r", "k1_mm_relu=32x1r", "k2_mm=32x1r"};
    cc_result *r = compile_wd(g, "spyre", bc, 3, &rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    TU_ASSERT_CONTAINS(rep, "\nk1_mm_relu: grid 32x1r on 32 cores (work_div), split m;");
    int nb = 0;
    for (const char *q = rep; (q = strstr(q, "B broadcast over the ring")); q++)
        nb++;
    CU_ASSERT_EQUAL(nb, 3);
    TU_ASSERT_CONTAINS(rep, "  from lx: r1\n");
    free(rep);
    cc_result_free(r);
    sim_stats ring, own;
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", bc, 3, &ring), 0);
    /* the same grid with every core loading its own copy of B */
    static const char *const wd[] = {"k0_mm_relu=32x1", "k1_mm_relu=32x1", "k2_mm=32x1"};
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", wd, 3, &own), 0);
    printf("\n  B over the ring: %.0f cycles %llu DRAM bytes read; each core its own B: %.0f cycles %llu", ring.cycles,
           (unsigned long long)ring.dram_bytes_read, own.cycles, (unsigned long long)own.dram_bytes_read);
    CU_ASSERT(ring.cycles < own.cycles);
    CU_ASSERT(ring.dram_bytes_read < own.dram_bytes_read);
    gr_graph_free(g);
}

/* The cost model takes a grid over the ring for the chained linears:
 * each core shares its A rows along its grid row and passes B down its
 * column, results go to the cores keeping their rows (in LX for the next
 * kernel); faster than B broadcast to all 32 cores. */
static void test_matmuls_on_a_grid_over_the_ring_share_a_and_b_and_validate(void)
{
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(mlp3_graph, "mlp3.txt", "spyre", NULL, 0, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "\nk1_mm_relu: grid 4x8r on 32 cores, split m and n;",
                            "A shared in rows of the grid and B passed down its columns over the ring",
                            "  kept in lx: r2 for k1_mm_relu..k2_mm",
                            "  from lx: r1\n");
    free(rep);
    cc_result_free(r);
    sim_stats grid, bcast;
    CU_ASSERT_EQUAL(run_graph(g, "spyre", NULL, NULL, &grid), 0);
    static const char *const bc[] = {"k0_mm_relu=32x1r", "k1_mm_relu=32x1r", "k2_mm=32x1r"};
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", bc, 3, &bcast), 0);
    printf("\n  grid over the ring: %.0f cycles; B to all cores: %.0f cycles", grid.cycles, bcast.cycles);
    CU_ASSERT(grid.cycles < bcast.cycles);
    gr_graph_free(g);
}

/* Found by fuzzing the grid over the ring (each raced or gave wrong values,
 * or stopped with an error, before its fix):
 * - an epilogue with a per-column value (sigmoid of a bias): its parts
 *   share the epilogue's tiles row-wise, so per-column temps need an area
 *   of their own, else a part's temp lands in another part's rows;
 * - a grid row smaller than the corelets' row split (130 rows over 32
 *   cores): the SFP without a part took an operand token no one waited
 *   for, and a later kernel's wait found it;
 * - a row kernel split like the grid's 32 cores (for LX) whose result is
 *   stored through a staged copy needs whole sticks of rows per core: the
 *   aligned split is dropped when it has not. */
static void test_grid_over_the_ring_regressions_from_fuzzing_validate(void)
{
    static const char *coltemp = "graph coltemp\n"
                                 "input %x: f32[64, 128]\n"
                                 "input %w: f32[128, 128]\n"
                                 "input %c: f32[128]\n"
                                 "%y: f32[64, 128] = aten.mm.default(%x, %w)\n"
                                 "%s: f32[128] = aten.sigmoid.default(%c)\n"
                                 "%z: f32[64, 128] = aten.mul.Tensor(%y, %s)\n"
                                 "output %z\n";
    static const char *efull = "graph efull\n"
                               "input %x: f32[130, 300]\n"
                               "input %w: f32[300, 128]\n"
                               "%y: f32[130, 128] = aten.mm.default(%x, %w)\n"
                               "%t: f32[128, 130] = aten.t.default(%y)\n"
                               "%z: f32[130, 130] = aten.mm.default(%y, %t)\n"
                               "output %z\n";
    static const char *staged = "graph staged\n"
                                "input %x: f32[130, 256]\n"
                                "input %w: f32[256, 300]\n"
                                "%h: f32[130, 300] = aten.mm.default(%x, %w)\n"
                                "%s: f32[130, 300] = aten._softmax.default(%h, -1, False)\n"
                                "%f: f32[39000] = aten.view.default(%s, [39000])\n"
                                "%c: f32[39000] = aten.clamp.default(%f, -0.5, 0.5)\n"
                                "%o: f32[39000] = aten._softmax.default(%c, -1, False)\n"
                                "output %o\n";
    static const char *const ct[] = {"k0_mm_sigmoid_mul=16x2r"}, *const ct4[] = {"k0_mm_sigmoid_mul=2x2r"};
    static const char *const ef[] = {"k0_mm=16x2r"};
    char err[1024];
    gr_graph *g = gr_graph_parse(coltemp, "coltemp.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", ct, 1, NULL), 0);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre-4core", ct4, 1, NULL), 0);
    gr_graph_free(g);
    g = gr_graph_parse(efull, "efull.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", ef, 1, NULL), 0);
    CU_ASSERT_EQUAL(run_graph(g, "spyre", NULL, NULL, NULL), 0);
    gr_graph_free(g);
    g = gr_graph_parse(staged, "staged.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(run_graph(g, "spyre", NULL, NULL, NULL), 0);
    gr_graph_free(g);
}

/* A forced tiling of a grid over the ring sets its K chunk (a multiple
 * of 64 or all of K; blocks larger than the tile are clipped) and
 * validates; blocks smaller than a core's tile are refused, saying why. */
static void test_a_forced_tiling_of_a_grid_over_the_ring_sets_its_k_chunk(void)
{
    static const char *text = "graph kc\n"
                              "input %x: f32[512, 300]\n"
                              "input %w: f32[300, 512]\n"
                              "%y: f32[512, 512] = aten.mm.default(%x, %w)\n"
                              "output %y\n";
    char err[1024], *rep;
    gr_graph *g = gr_graph_parse(text, "kc.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    static const char *const k192[] = {"k0_mm=8x4r/64x2x192"}, *const whole[] = {"k0_mm=8x4r/999x9x300"};
    cc_result *r = compile_wd(g, "spyre", k192, 1, &rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    TU_ASSERT_CONTAINS(rep, "k 300 in chunks of 192 (fp32 partial sums)");
    free(rep);
    cc_result_free(r);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", k192, 1, NULL), 0);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", whole, 1, NULL), 0);
    expect_wd(g, "spyre", "k0_mm=8x4r/16x2x128", 0, "forced blocks smaller than a core's whole tile");
    gr_graph_free(g);
}

/* BERT-base's output projection (128 x 768 x 768 with a bias) on a 4x8r
 * grid in K chunks of 64: each core's A rows (4 of the grid row's 32) go
 * to the row's seven other cores in three groups, the first chunk alone,
 * then seven chunks and four (at most 31 sticks a send), not one send per
 * chunk (84 ring sends of four sticks a core, half the ring's time a
 * chunk); the values validate against the reference executor. */
static void test_a_grid_over_the_ring_sends_a_rows_in_groups_of_chunks_and_validates(void)
{
    static const char *text = "graph oproj\n"
                              "input %x: f32[128, 768]\n"
                              "input %w: f32[768, 768]\n"
                              "input %b: f32[768]\n"
                              "%y: f32[128, 768] = aten.addmm.default(%b, %x, %w)\n"
                              "output %y\n";
    static const char *const wd[] = {"k0_addmm=4x8r/32x2x64"};
    char err[1024], *rep;
    gr_graph *g = gr_graph_parse(text, "oproj.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_result *r = compile_wd(g, "spyre", wd, 1, &rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    TU_ASSERT_CONTAINS(rep, "k 768 in chunks of 64", "A shared in rows of the grid");
    free(rep);
    isa_program *p = cc_result_take_program(r);
    cc_result_free(r);
    /* core 1: row 0 of an unstreamed column forwards no B, so its sends
     * of four-stick runs are its A rows' (and its results') */
    long asends = 0, grouped = 0;
    for (size_t k = 0; k < p->cores[1].n; k++) {
        const isa_insn *in = &p->cores[1].insns[k];
        asends += in->op == ISA_OP_RING_SEND && in->run == 4 && in->n[0] >= 1;
        grouped += in->op == ISA_OP_RING_SEND && in->run == 4 && in->n[0] == 7;
    }
    printf("\n  core 1: %ld ring sends of 4-stick runs, %ld of them 7 chunks of A", asends, grouped);
    CU_ASSERT_EQUAL(grouped, 7);
    CU_ASSERT_EQUAL(asends, 7 * 3);
    isa_program_free(p);
    sim_stats st;
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", wd, 1, &st), 0);
    printf(" (%.0f cycles)", st.cycles);
    gr_graph_free(g);
}

/* A grid over the ring whose B column block does not fit LX whole walks
 * its tile in blocks of fewer sticks, B streamed down the columns in K
 * chunks through slots: on spyre-4core (256 KB of LX) the cost model takes
 * it for a 70 x 520 x 300 product with a residual (uneven rows, a partial
 * stick); on spyre forced blockings of one stick stream a chain whose
 * first product keeps its result in LX for the second (which reads its A
 * from there).  Each validates against the reference executor. */
static void test_a_grid_over_the_ring_streams_b_in_k_chunks_and_validates(void)
{
    static const char *small = "graph s4\n"
                               "input %x: f32[70, 1024]\n"
                               "input %w1: f32[1024, 520]\n"
                               "input %b1: f32[520]\n"
                               "input %w2: f32[520, 300]\n"
                               "input %res: f32[70, 300]\n"
                               "%y: f32[70, 520] = aten.mm.default(%x, %w1)\n"
                               "%yb: f32[70, 520] = aten.add.Tensor(%y, %b1)\n"
                               "%r: f32[70, 520] = aten.relu.default(%yb)\n"
                               "%z: f32[70, 300] = aten.mm.default(%r, %w2)\n"
                               "%o: f32[70, 300] = aten.add.Tensor(%z, %res)\n"
                               "output %o\n";
    static const char *chain = "graph ch\n"
                               "input %x: f32[512, 300]\n"
                               "input %w1: f32[300, 520]\n"
                               "input %w2: f32[520, 256]\n"
                               "%h: f32[512, 520] = aten.mm.default(%x, %w1)\n"
                               "%r: f32[512, 520] = aten.relu.default(%h)\n"
                               "%y: f32[512, 256] = aten.mm.default(%r, %w2)\n"
                               "output %y\n";
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(small, "s4.txt", "spyre-4core", NULL, 0, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "k1_mm_add: grid 2x2r");
    TU_ASSERT_CONTAINS(rep, "B in K chunks through");
    free(rep);
    cc_result_free(r);
    CU_ASSERT_EQUAL(run_graph(g, "spyre-4core", NULL, NULL, NULL), 0);
    gr_graph_free(g);
    static const char *const wd[] = {"k0_mm_relu=8x4r/64x1x128", "k1_mm=16x2r/32x1x192"};
    r = compile_text(chain, "ch.txt", "spyre", wd, 2, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "blocks of 64 rows x 1 sticks (64 columns), k 300 in chunks of 128");
    TU_ASSERT_CONTAINS(rep, "kept in lx: r for k0_mm_relu..k1_mm");
    TU_ASSERT_CONTAINS(rep, "B in K chunks through");
    free(rep);
    cc_result_free(r);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", wd, 2, NULL), 0);
    gr_graph_free(g);
}

/* Two products on the same grid over the ring, the second's epilogue
 * reading the first's result (Llama's gate and up products): each core
 * keeps the tile it computed in LX and the second product takes it from
 * there, so the first writes nothing to DRAM.  Forced to different
 * blockings of uneven column blocks (9 sticks in 5 and 4), streamed;
 * validated against the reference executor, with the tiles kept and
 * with nothing kept. */
static void test_products_on_the_same_grid_over_the_ring_keep_tiles_in_lx_and_validate(void)
{
    static const char *text = "graph gu\n"
                              "input %x: f32[128, 256]\n"
                              "input %wg: f32[256, 520]\n"
                              "input %wu: f32[256, 520]\n"
                              "%g: f32[128, 520] = aten.mm.default(%x, %wg)\n"
                              "%s: f32[128, 520] = aten.silu.default(%g)\n"
                              "%u: f32[128, 520] = aten.mm.default(%x, %wu)\n"
                              "%h: f32[128, 520] = aten.mul.Tensor(%s, %u)\n"
                              "output %h\n";
    static const char *const wd[] = {"k0_mm=16x2r/8x1x128", "k1_silu_mm_mul=16x2r/8x2x128"},
                             *const nokeep[] = {"k0_mm=16x2r/8x1x128+nokeep", "k1_silu_mm_mul=16x2r/8x2x128"};
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(text, "gu.txt", "spyre", wd, 2, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "kept in lx: g for k0_mm..k1_silu_mm_mul");
    /* x too: the rows of the input k0_mm loads (be_res.loaded) */
    TU_ASSERT_CONTAINS(rep, "from lx: x, g");
    /* x 128 x 256 and wg 256 x 9 sticks of DL16 read, nothing written */
    TU_ASSERT_CONTAINS(rep, "dram bytes: 360448 read, 0 written");
    free(rep);
    cc_result_free(r);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", wd, 2, NULL), 0);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", nokeep, 2, NULL), 0);
    gr_graph_free(g);
}

/* Llama's MLP in small (hidden width f) on one grid over the ring: the
 * SiLU product keeps its result as each core's tile and the down product
 * reads it there as its A (core j of a grid row holds K's stick groups of
 * column block j and sends them to the row's other cores), so neither
 * writes nor reads h in DRAM: the down product's simulated DRAM bytes
 * are wd's, res's and y's only.  Forced streamed blockings wd (B in K
 * chunks: A in tiles needs it); validated against the reference
 * executor, with h kept and, with nokeep, nothing kept. */
static void expect_down_product_reads_kept_tiles(int f, const char *const *wd, const char *const *nokeep)
{
    char text[1024], dram[64];
    snprintf(text, sizeof text,
             "graph mlp\ninput %%x: f32[128, 256]\ninput %%res: f32[128, 256]\ninput %%wg: f32[256, %d]\n"
             "input %%wu: f32[256, %d]\ninput %%wd: f32[%d, 256]\n"
             "%%g: f32[128, %d] = aten.mm.default(%%x, %%wg)\n%%s: f32[128, %d] = aten.silu.default(%%g)\n"
             "%%u: f32[128, %d] = aten.mm.default(%%x, %%wu)\n%%h: f32[128, %d] = aten.mul.Tensor(%%s, %%u)\n"
             "%%d: f32[128, 256] = aten.mm.default(%%h, %%wd)\n%%y: f32[128, 256] = aten.add.Tensor(%%res, %%d)\n"
             "output %%y\n",
             f, f, f, f, f, f, f);
    const int in = (f * 256 + 128 * 256) * 2, out = 128 * 256 * 2; /* DL16 */
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(text, "mlp.txt", "spyre", wd, 3, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "kept in lx: h for k1_silu_mm_mul..k2_mm_add");
    TU_ASSERT_CONTAINS(rep, "from lx: h");
    /* the SiLU product (x and wu in) and the down product (wd and res in) */
    snprintf(dram, sizeof dram, "dram bytes: %d read, 0 written", in);
    TU_ASSERT_CONTAINS(rep, dram);
    snprintf(dram, sizeof dram, "dram bytes: %d read, %d written", in, out);
    TU_ASSERT_CONTAINS(rep, dram);
    free(rep);
    cc_result_free(r);
    sim_stats st;
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", wd, 3, &st), 0);
    CU_ASSERT_EQUAL(st.nkernels, 3);
    if (st.nkernels == 3)
        CU_ASSERT_EQUAL(st.kernels[2].dram_bytes, (uint64_t)(in + out));
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", nokeep, 3, NULL), 0);
    gr_graph_free(g);
}

/* 16x2r, 512 wide: two tiles of 4 stick groups; 8x4r, 960 wide: tiles of
 * 4, 4, 4 and 3 groups (a core's AG holds the others' 12 or 11). */
static void test_the_down_product_reads_its_a_from_the_tiles_the_silu_product_kept(void)
{
    static const char *const wd[] = {"k0_mm=16x2r/8x1x128", "k1_silu_mm_mul=16x2r/8x2x128", "k2_mm_add=16x2r/8x1x128"},
                             *const nokeep[] = {"k0_mm=16x2r/8x1x128+nokeep", "k1_silu_mm_mul=16x2r/8x2x128+nokeep",
                                                "k2_mm_add=16x2r/8x1x128"},
                             *const wd4[] = {"k0_mm=8x4r/16x1x128", "k1_silu_mm_mul=8x4r/16x2x128", "k2_mm_add=8x4r/16x1x128"},
                             *const nokeep4[] = {"k0_mm=8x4r/16x1x128+nokeep", "k1_silu_mm_mul=8x4r/16x2x128+nokeep",
                                                 "k2_mm_add=8x4r/16x1x128"};
    expect_down_product_reads_kept_tiles(512, wd, nokeep);
    expect_down_product_reads_kept_tiles(960, wd4, nokeep4);
}

/* Three chained 2048-wide linears (ReLU between them, as bench/run mm's
 * chain) stream B in K chunks on 16x2r, and each activation stays in LX
 * for the next product: the middle product's blocking leaves room for its
 * result because the LX plan prices its A as read from LX.  Measured
 * timing-only (Dec 2): 0.682, 0.745 and 0.719 of the peak MAC rate, the
 * last product reading 16.8 MB of DRAM; when the middle product took the
 * blocks that price A from DRAM, its result went through DRAM and the last
 * product ran at 0.596 with 25.2 MB.  The bound, the issue's 0.65, leaves
 * each kernel about 5% for other changes of the timing. */
static void test_a_chain_of_2048_wide_linears_keeps_its_activations_in_lx_at_065_of_peak(void)
{
    static const char *text = "graph mlp3_2048\n"
                              "input %x: f32[2048, 2048]\n"
                              "input %w1: f32[2048, 2048]\n"
                              "input %w2: f32[2048, 2048]\n"
                              "input %w3: f32[2048, 2048]\n"
                              "%h1: f32[2048, 2048] = aten.mm.default(%x, %w1)\n"
                              "%r1: f32[2048, 2048] = aten.relu.default(%h1)\n"
                              "%h2: f32[2048, 2048] = aten.mm.default(%r1, %w2)\n"
                              "%r2: f32[2048, 2048] = aten.relu.default(%h2)\n"
                              "%h3: f32[2048, 2048] = aten.mm.default(%r2, %w3)\n"
                              "output %h3\n";
    chip_config cfg;
    tu_config("spyre", &cfg);
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(text, "mlp3_2048.txt", "spyre", NULL, 0, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "kept in lx: r1 for k0_mm_relu..k1_mm_relu");
    TU_ASSERT_CONTAINS(rep, "kept in lx: r2 for k1_mm_relu..k2_mm");
    TU_ASSERT_CONTAINS(rep, "B in K chunks through");
    free(rep);
    rt_device *dev;
    rt_program *prog = load_on(&cfg, cc_result_take_program(r), &dev);
    sim_options so = {.values = 0, .trace = SIM_TRACE_OFF};
    rt_set_options(dev, &so);
    rt_run_result res;
    CU_ASSERT_FATAL(!rt_launch(prog, &res));
    CU_ASSERT_EQUAL_FATAL(res.stats.nkernels, 3);
    const double peak = (double)cfg.cores * cfg.corelets * cfg.pt_rows * cfg.pt_cols * cfg.pt_lanes;
    for (int k = 0; k < 3; k++) {
        const sim_kernel_stats *ks = &res.stats.kernels[k];
        const double u = (double)ks->macs / ((double)(ks->end - ks->start) * peak);
        if (u < 0.65)
            fprintf(stderr, "%s: %.3f of peak\n", ks->name, u);
        CU_ASSERT(u >= 0.65);
    }
    /* the last product: B (8 MB) in, its result (8 MB) out, A from LX */
    CU_ASSERT_EQUAL(res.stats.kernels[2].dram_bytes, 2 * 2048 * 2048 * 2);
    rt_unload(prog);
    rt_close(dev);
    cc_result_free(r);
    gr_graph_free(g);
}

/* A matmul operand the same all along K (an expand of a column, found by
 * fuzzing: "internal: operand without its lane variable") is copied into
 * a buffer first and validates on both chips. */
static void test_an_operand_expanded_along_k_is_copied_and_validates(void)
{
    static const char *text = "graph ex\n"
                              "input %x: f32[64, 1]\n"
                              "input %w: f32[128, 32]\n"
                              "%e: f32[64, 128] = aten.expand.default(%x, [-1, 128])\n"
                              "%m: f32[64, 32] = aten.mm.default(%e, %w)\n"
                              "output %m\n";
    char err[1024];
    gr_graph *g = gr_graph_parse(text, "ex.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(run_graph(g, "spyre", NULL, NULL, NULL), 0);
    CU_ASSERT_EQUAL(run_graph(g, "spyre-4core", NULL, NULL, NULL), 0);
    gr_graph_free(g);
}

/* Uneven parts (70 rows over 32 cores; 200 columns: a partial stick), A and
 * the epilogue's bias and residual from DRAM, the result to DRAM: forced
 * grids over the ring validate on both chips. */
static void test_a_grid_over_the_ring_with_uneven_parts_and_dram_operands_validates(void)
{
    static const char *gtext = "graph lin\n"
                               "input %x: f32[70, 128]\n"
                               "input %w: f32[200, 128]\n"
                               "input %b: f32[200]\n"
                               "input %res: f32[70, 200]\n"
                               "%y: f32[70, 200] = aten.linear.default(%x, %w, %b)\n"
                               "%z: f32[70, 200] = aten.add.Tensor(%y, %res)\n"
                               "output %z\n";
    char err[1024];
    gr_graph *g = gr_graph_parse(gtext, "lin.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const char *kname = "k0_linear_add";
    static const char *cases[][2] = {{"spyre", "8x4r"}, {"spyre", "16x2r"}, {"spyre-4core", "2x2r"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char spec[64];
        snprintf(spec, sizeof spec, "%s=%s", kname, cases[i][1]);
        const char *wd[] = {spec};
        char *rep;
        cc_result *r = compile_wd(g, cases[i][0], wd, 1, &rep, err, sizeof err);
        if (!r)
            fprintf(stderr, "%s %s: %s\n", cases[i][0], spec, err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        TU_ASSERT_CONTAINS(rep, "A shared in rows of the grid");
        free(rep);
        cc_result_free(r);
        CU_ASSERT_EQUAL(run_graph_wd(g, cases[i][0], wd, 1, NULL), 0);
    }
    gr_graph_free(g);
}

/* A skinny product with a long K: the cores split K too, and the fp32
 * partial sums go along the ring (ring.red) before the epilogue. */
static const char *splitk_graph = "graph sk\n"
                                  "input %x: f32[64, 8192]\n"
                                  "input %w: f32[8192, 128]\n"
                                  "input %b: f32[64, 128]\n"
                                  "%y: f32[64, 128] = aten.mm.default(%x, %w)\n"
                                  "%z: f32[64, 128] = aten.add.Tensor(%y, %b)\n"
                                  "output %z\n";

static void test_a_long_k_is_split_over_cores_reduced_over_the_ring_and_validates(void)
{
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(splitk_graph, "sk.txt", "spyre", NULL, 0, &g, &rep);
    long gm, gn;
    int cores;
    CU_ASSERT_EQUAL(report_grid(rep, "k0_mm_add", &gm, &gn, &cores), 0);
    CU_ASSERT(cores > gm * gn); /* the rest split K */
    TU_ASSERT_CONTAINS(rep, "partial sums reduced over the ring");
    free(rep);
    cc_result_free(r);
    sim_stats split, whole;
    CU_ASSERT_EQUAL(run_graph(g, "spyre", NULL, NULL, &split), 0);
    static const char *const one[] = {"k0_mm_add=1x2"};
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", one, 1, &whole), 0);
    printf("\n  K split: %.0f cycles; 1x2 without: %.0f cycles", split.cycles, whole.cycles);
    CU_ASSERT(split.cycles < whole.cycles);
    /* forced: four parts, the middle ones passing sums on */
    static const char *const four[] = {"k0_mm_add=1x1x4"};
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", four, 1, NULL), 0);
    expect_wd(g, "spyre", "k0_mm_add=1x1x200", 0,
              "kernel k0_mm_add: work_div \"1x1x200\" uses 200 cores, more than the 32 of spyre");
    static const char *const many[] = {"k0_mm_add=1x1x32"};
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", many, 1, NULL), 0);
    gr_graph_free(g);
}

/* linear, layer norm, linear: the layer norm's cost model alone would
 * take fewer cores than the matmuls' 32 */
static const char *ln_chain_graph =
    "graph ln3\n"
    "input %x: f32[512, 512]\n"
    "input %w1: f32[512, 512]\n"
    "input %w2: f32[512, 512]\n"
    "input %g: f32[512]\n"
    "input %b: f32[512]\n"
    "%h1: f32[512, 512] = aten.mm.default(%x, %w1)\n"
    "%ln: (f32[512, 512], f32[512, 1], f32[512, 1]) = aten.native_layer_norm.default(%h1, [512], %g, %b, 1e-05)\n"
    "%y: f32[512, 512] = getitem(%ln, 0)\n"
    "%h2: f32[512, 512] = aten.mm.default(%y, %w2)\n"
    "output %h2\n";

static void test_a_row_kernel_takes_its_producers_split_so_the_tensor_stays_in_lx(void)
{
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(ln_chain_graph, "ln3.txt", "spyre", NULL, 0, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "\nk1_native_layer_norm: rows over 32 cores (as k0_mm, for LX), split rows;",
                            "  from lx: h1\n",
                            "  from lx: y\n");
    free(rep);
    cc_result_free(r);
    sim_stats kept, off;
    run_kept_and_not(g, NULL, 0, &kept, &off, "aligned and kept");
    CU_ASSERT(kept.cycles < off.cycles);
    gr_graph_free(g);
}

/* An input read by a product on a grid over the ring as its A and again
 * by a row kernel on the same rows (BERT-base's layer input x: the fused
 * q/k/v product, then the residual add of the attention's layer norm):
 * the product copies the rows of x it loads into a region kept for the
 * row kernel (be_res.loaded), so the row kernel reads no DRAM but writes
 * s (65,536 bytes; it read x's 65,536 as well before), the product reads
 * x and w once, and the output validates against the reference. */
static const char *resid_graph = "graph resid\n"
                                 "input %x: f32[128, 256]\n"
                                 "input %w: f32[256, 256]\n"
                                 "%h: f32[128, 256] = aten.mm.default(%x, %w)\n"
                                 "%a: f32[128, 256] = aten.add.Tensor(%h, %x)\n"
                                 "%s: f32[128, 256] = aten._softmax.default(%a, -1, False)\n"
                                 "output %s\n";

static void test_an_input_a_product_loads_stays_in_lx_for_a_later_row_kernel(void)
{
    static const char *const wd[] = {"k0_mm=8x4r", "k1_add_softmax=32"};
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(resid_graph, "resid.txt", "spyre", wd, 2, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "  kept in lx: h for k0_mm..k1_add_softmax (2048 bytes per core at lx ",
                       ", x for k0_mm..k1_add_softmax (2048 bytes per core at lx ", "; the rows it loads)\n",
                       "  from lx: h, x\n");
    free(rep);
    cc_result_free(r);
    sim_stats st = {0};
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", wd, 2, &st), 0);
    CU_ASSERT_EQUAL_FATAL(st.nkernels, 2);
    const uint64_t x = 128 * 256 * 2, w = 256 * 256 * 2, s = 128 * 256 * 2;
    CU_ASSERT_EQUAL(st.kernels[0].dram_bytes, x + w);
    CU_ASSERT_EQUAL(st.kernels[1].dram_bytes, s);
    gr_graph_free(g);
}

/* The scaled queries of an attention, then QK^T and the softmax: the
 * division alone was cheapest on 5 cores, QK^T splits its 8 heads over 8
 * on its own (and does not align with 5), so the division looks one
 * kernel ahead and takes QK^T's 8, which keeps d in LX (the estimate's
 * extra cost of 8 cores is less than d's round trip through DRAM).  The
 * simulator agrees: 5 cores are slower. */
static const char *ahead_graph = "graph ahead\n"
                                 "input %q: f32[8, 16, 16]\n"
                                 "input %k: f32[8, 16, 16]\n"
                                 "%d: f32[8, 16, 16] = aten.div.Tensor(%q, 4.0)\n"
                                 "%kt: f32[8, 16, 16] = aten.transpose.int(%k, 1, 2)\n"
                                 "%s: f32[8, 16, 16] = aten.bmm.default(%d, %kt)\n"
                                 "%p: f32[8, 16, 16] = aten._softmax.default(%s, -1, False)\n"
                                 "output %p\n";

static void test_a_row_kernel_takes_its_readers_own_split_so_its_result_stays_in_lx(void)
{
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(ahead_graph, "ahead.txt", "spyre", NULL, 0, &g, &rep);
    /* (with its one DMA a chunk priced as the cores stagger, the division
     * takes 8 on its own estimate too) */
    TU_ASSERT_CONTAINS(rep, "\nk0_div: rows over 8 cores", "\nk1_bmm: grid 1x1b8 on 8 cores, split batch;",
                       "  kept in lx: d for k0_div..k1_bmm");
    free(rep);
    cc_result_free(r);
    /* the division's split forced to the 5 it takes alone */
    static const char *const wd[] = {"k0_div=5"};
    sim_stats ahead, alone;
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", NULL, 0, &ahead), 0);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", wd, 1, &alone), 0);
    CU_ASSERT(ahead.cycles < alone.cycles);
    printf("\n  the division on 8 cores: %.0f cycles; on 5: %.0f", ahead.cycles, alone.cycles);
    CU_ASSERT_EQUAL(run_graph(g, "spyre-4core", NULL, NULL, NULL), 0);
    gr_graph_free(g);
}

/* The kernel ahead is the first reader, past kernels that read nothing
 * the kernel writes: with an exp of k between the division and QK^T,
 * the division still takes QK^T's 8 cores and d stays in LX.  The exp's
 * own first reader, QK^T, reads its result as B, which no split aligns:
 * the exp keeps the split it takes alone.  (workdiv plans neither the
 * exp for the division nor QK^T for the exp to learn this: be_access
 * may_align.) */
static const char *ahead_past_graph = "graph ahead_past\n"
                                      "input %q: f32[8, 16, 16]\n"
                                      "input %k: f32[8, 16, 16]\n"
                                      "%d: f32[8, 16, 16] = aten.div.Tensor(%q, 4.0)\n"
                                      "%e: f32[8, 16, 16] = aten.exp.default(%k)\n"
                                      "%et: f32[8, 16, 16] = aten.transpose.int(%e, 1, 2)\n"
                                      "%s: f32[8, 16, 16] = aten.bmm.default(%d, %et)\n"
                                      "%p: f32[8, 16, 16] = aten._softmax.default(%s, -1, False)\n"
                                      "output %p\n";

static void test_the_kernel_ahead_is_the_first_reader_past_kernels_that_read_nothing_it_writes(void)
{
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(ahead_past_graph, "ahead_past.txt", "spyre", NULL, 0, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "\nk0_div: rows over 8 cores (as k2_bmm, for LX)", "\nk1_exp: rows over 7 cores, split rows",
                       "\nk2_bmm: grid 1x1b8 on 8 cores, split batch;", "  kept in lx: d for k0_div..k2_bmm");
    free(rep);
    cc_result_free(r);
    CU_ASSERT_EQUAL(run_graph(g, "spyre", NULL, NULL, NULL), 0);
    CU_ASSERT_EQUAL(run_graph(g, "spyre-4core", NULL, NULL, NULL), 0);
    gr_graph_free(g);
}

/* v0 stays in LX for k2 (its cores); k1, on other cores, gets its rows by
 * a ring exchange; v1 (3 cores) reaches k2 (2 cores) by a ring exchange
 * too */
static const char *two_proj_graph = "graph twoproj\n"
                                    "input %x: f32[1000, 128]\n"
                                    "input %w1: f32[128, 128]\n"
                                    "input %w0: f32[128, 128]\n"
                                    "%v0: f32[1000, 128] = aten.add.Tensor(%x, %x)\n"
                                    "%v1: f32[1000, 128] = aten.mm.default(%v0, %w0)\n"
                                    "%v2: f32[1000, 128] = aten.mm.default(%v0, %w1)\n"
                                    "%v3: f32[1000, 128] = aten.mul.Tensor(%v2, %v1)\n"
                                    "output %v3\n";

static void test_a_reader_on_other_cores_takes_a_kept_tensor_by_a_ring_exchange(void)
{
    static const char *const wd[] = {"k0_add=2", "k1_mm=3x1", "k2_mm_mul=2x1"};
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(two_proj_graph, "twoproj.txt", "spyre", wd, 3, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "  kept in lx: v0 for k0_add..k2_mm_mul",
                            "  ring exchange: v0 (2 -> 3 cores, estimate ",
                            "  ring exchange: v1 (3 -> 2 cores, estimate ",
                            "\nlx across kernels: 2 tensors kept, 3 reads from lx,",
                            "\nring exchanges between kernels: 2\n");
    free(rep);
    cc_result_free(r);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", wd, 3, NULL), 0);
    gr_graph_free(g);
}

/* serve_tiny's prefill of 128 tokens: QK^T's scores (2 cores) would reach
 * the softmax (16 cores) by a ring exchange cheaper than the DRAM round
 * trip, but its ring traffic puts a bar after the softmax, and the V
 * cache's cat, which reads nothing the softmax writes, would run after it
 * rather than beside it (35,417 cycles against 34,681).  Priced so, the
 * scores go through DRAM, the softmax is divided again for that, and the
 * cat follows it behind a fence only. */
static void test_an_exchange_whose_bar_costs_the_next_kernels_overlap_goes_through_dram(void)
{
    char err[1024], *rep;
    gr_graph *g = gr_graph_load(SPYRE_SOURCE_DIR "/traces/serve_tiny/prefill_c128", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_result *r = compile_wd(g, "spyre", NULL, 0, &rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_PTR_NULL(strstr(rep, "ring exchange: bmm ("));
    const char *cat = strstr(rep, "\nk10_cat: rows over");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cat);
    const char *bound = strstr(cat, "  before it: ");
    CU_ASSERT(bound && !strncmp(bound, "  before it: fence\n", 19));
    free(rep);
    cc_result_free(r);
    gr_graph_free(g);
}

/* BERT's output projection, residual add and layer norm (d 768, 128
 * tokens).  On spyre the product runs as a grid over the ring, so the layer
 * norm has a bar before it anyway, and core 0 alone loads its per-column
 * values (the product's bias, the norm's weight and shift: 3 x 768 DL16
 * values) and passes them down a tree of cores over the ring: the kernel's
 * DRAM traffic is x read and y written (its product's result comes from
 * LX) plus those values once, where 32 copies were read before.  On
 * spyre-4core the product is not over the ring and the four copies cost
 * less than the bar would: no tree.  Both validate against the reference. */
static const char *residual_ln_graph =
    "graph resln\n"
    "input %x: f32[128, 768]\n"
    "input %a: f32[128, 768]\n"
    "input %w: f32[768, 768]\n"
    "input %bias: f32[768]\n"
    "input %g: f32[768]\n"
    "input %b: f32[768]\n"
    "%wt: f32[768, 768] = aten.t.default(%w)\n"
    "%h: f32[128, 768] = aten.addmm.default(%bias, %a, %wt)\n"
    "%r: f32[128, 768] = aten.add.Tensor(%h, %x)\n"
    "%ln: (f32[128, 768], f32[128, 1], f32[128, 1]) = aten.native_layer_norm.default(%r, [768], %g, %b, 1e-12)\n"
    "%y: f32[128, 768] = getitem(%ln, 0)\n"
    "output %y\n";

static void test_a_layer_norms_per_column_values_go_down_a_tree_of_cores_when_the_estimate_says_so(void)
{
    static const char *tree = "; per-column values loaded by core 0 and passed down a tree of cores over the ring";
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(residual_ln_graph, "resln.txt", "spyre", NULL, 0, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "\nk0_addmm: grid 4x8r on 32 cores,",
                            "\nk1_addmm_add_native_layer_norm: rows over 32 cores", tree,
                            "  from lx: h.mm\n");
    free(rep);
    cc_result_free(r);
    sim_stats st;
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", NULL, 0, &st), 0);
    const uint64_t act = 128 * 768 * 2, cols = 3 * 768 * 2; /* DL16 */
    CU_ASSERT_EQUAL_FATAL(st.nkernels, 2);
    CU_ASSERT_EQUAL(st.kernels[1].dram_bytes, 2 * act + cols);
    gr_graph *g4;
    r = compile_text(residual_ln_graph, "resln.txt", "spyre-4core", NULL, 0, &g4, &rep);
    CU_ASSERT_PTR_NULL(strstr(rep, tree));
    free(rep);
    cc_result_free(r);
    gr_graph_free(g4);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre-4core", NULL, 0, NULL), 0);
    gr_graph_free(g);
}

/* A product on all 32 cores and a softmax forced onto fewer: the softmax
 * takes the product's rows over the ring (a kernel "k1_softmax.xchg" of
 * its own) instead of a DRAM round trip; faster, and it validates. */
static void test_a_ring_exchange_beats_the_dram_round_trip_between_splits(void)
{
    static const char *const wd[] = {"k1_softmax=6"};
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(xchg_graph, "xg.txt", "spyre", wd, 1, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "  ring exchange: m (32 -> 6 cores, estimate ");
    free(rep);
    cc_result_free(r);
    sim_stats xchg, dram;
    run_kept_and_not(g, wd, 1, &xchg, &dram, "ring exchange");
    CU_ASSERT(xchg.cycles < dram.cycles);
    CU_ASSERT(xchg.dram_bytes_read + xchg.dram_bytes_written < dram.dram_bytes_read + dram.dram_bytes_written);
    static const char *const wd4[] = {"k0_mm=4x1", "k1_softmax=3"};
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre-4core", wd4, 2, NULL), 0);
    gr_graph_free(g);
}

/* The ring exchange's estimate (NAME.xchg) against the simulator's span of
 * it, 32 -> 16 and 32 -> 6 cores: within 2% (measured 14,974 against
 * 14,942 and 9,338 against 9,306: the estimate times each transfer's whole
 * path as the simulator reserves it; adding up link bytes said 7,712). */
static void test_the_ring_exchange_estimate_matches_the_simulator(void)
{
    static const char *const wd[][1] = {{"k1_softmax=16"}, {"k1_softmax=6"}};
    chip_config cfg;
    tu_config("spyre", &cfg);
    char err[1024];
    gr_graph *g = gr_graph_parse(xchg_graph, "xg.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    for (int i = 0; i < 2; i++) {
        cc_compile_opts o = {.target = &cfg, .work_div = wd[i], .nwork_div = 1};
        cc_result *r = cc_compile(g, &o, err, sizeof err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        rt_device *dev;
        rt_program *prog = load_on(&cfg, cc_result_take_program(r), &dev);
        rt_run_result *res = malloc(sizeof *res);
        CU_ASSERT_FATAL(res && !rt_fill_inputs(prog, 7, err, sizeof err) && !rt_launch(prog, res));
        const sim_kernel_stats *ks = sim_stats_kernel(&res->stats, "k1_softmax.xchg");
        CU_ASSERT_PTR_NOT_NULL_FATAL(ks);
        const double q = cc_result_estimate(r, "k1_softmax.xchg") / (ks->end - ks->start);
        CU_ASSERT(q > 0.98 && q < 1.02);
        free(res);
        rt_unload(prog);
        rt_close(dev);
        cc_result_free(r);
    }
    gr_graph_free(g);
}

/* A batch split into uneven parts (8 heads in 3) whose result the next
 * kernel would keep in LX: the parts are not the rows a row kernel takes,
 * so the result goes through DRAM (it failed an assertion in be_res_copy
 * while the alignment check took the plan's batch parts for 1). */
static void test_an_uneven_batch_split_leaves_its_result_in_dram_and_validates(void)
{
    static const char *const wd[] = {"k1_bmm=1x1b3"}; /* q k^T (after fuse_siblings made q, k and v k0) */
    char err[1024];
    gr_graph *g = gr_graph_load(SPYRE_SOURCE_DIR "/traces/bert_handwritten_small", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre-4core", wd, 1, NULL), 0);
    gr_graph_free(g);
}

/* The "estimate N cycles" of kernel name's tiles line in report rep. */
static double tiles_estimate(const char *rep, const char *name)
{
    const char *k = strstr(rep, name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    const char *e = strstr(strstr(k, "\n  tiles: "), ", estimate ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    return atof(e + 11);
}

/* The attention scores of bert_handwritten_small (8 heads of 16 x 16)
 * stay in LX from QK^T to the softmax, so the work division prices the
 * product without their DRAM write: on the same grid the estimate is the
 * scores' bytes at the chip's DRAM rate below the one with +nokeep (the
 * scores through DRAM), and the choice takes a core per head, the softmax
 * and PV aligned with it (it took 4 cores, 2 heads each, when the write
 * was priced: 13,382 cycles, then 13,315).  Kernel names as fuse_siblings
 * leaves them (q, k, v one product k0_addmm, QK^T k1_bmm). */
static void test_a_batched_product_whose_result_stays_in_lx_is_priced_without_its_dram_write(void)
{
    static const char *const kept[] = {"k1_bmm=1x1b8"}, *const nokeep[] = {"k1_bmm=1x1b8+nokeep"};
    char err[1024], *rk, *rn, *rep;
    chip_config cfg;
    tu_config("spyre", &cfg);
    gr_graph *g = gr_graph_load(SPYRE_SOURCE_DIR "/traces/bert_handwritten_small", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_result *a = compile_wd(g, "spyre", kept, 1, &rk, err, sizeof err), *b = compile_wd(g, "spyre", nokeep, 1, &rn, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    TU_ASSERT_CONTAINS(rk, "  kept in lx: bmm for k1_bmm..k2_div_add_softmax");
    /* the scores: 8 heads x 16 rows, one stick of 16 columns each */
    const double bytes = 8.0 * 16 * cfg.stick_bytes;
    const double rate = cfg.dram_channels * (double)cfg.dram_burst_bytes / (cfg.dram_burst_tck * cfg.dram_tck_ns) /
                        cfg.clock_ghz;
    const double saved = tiles_estimate(rn, "\nk1_bmm: grid") - tiles_estimate(rk, "\nk1_bmm: grid");
    CU_ASSERT(fabs(saved - bytes / rate) <= 1.0); /* each estimate printed rounded to a cycle */
    printf("\n  QK^T on 1x1b8: %.0f cycles less with the scores kept (their write: %.1f)", saved, bytes / rate);
    free(rk);
    free(rn);
    cc_result_free(a);
    cc_result_free(b);
    cc_result *r = compile_wd(g, "spyre", NULL, 0, &rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    TU_ASSERT_CONTAINS(rep, "\nk1_bmm: grid 1x1b8 on 8 cores", "\nk2_div_add_softmax: rows over 8 cores",
                       "\nk3_bmm: grid 1x1b8 on 8 cores");
    free(rep);
    cc_result_free(r);
    CU_ASSERT_EQUAL(run_graph(g, "spyre", NULL, NULL, NULL), 0);
    gr_graph_free(g);
}

/* A product whose K chunks each wait on DRAM (x W + b, 128 x 768 x 768,
 * on spyre-4core's 2 cores, K in 12 chunks of 64 through two slots): the
 * report's estimate prices each chunk's round trip with the row latency
 * and the refresh it meets (cc_dram_wait), within 25% of the longest core
 * (measured 0.84; without the waits the estimate was 0.40 of it). */
static void test_the_estimate_of_a_product_waiting_on_dram_per_k_chunk_is_within_a_quarter(void)
{
    const char *text = "graph t\ninput %x: f32[128, 768]\ninput %w: f32[768, 768]\ninput %b: f32[768]\n"
                       "%y: f32[128, 768] = aten.addmm.default(%b, %x, %w)\noutput %y\n";
    static const char *const wd[] = {"k0_addmm=1x2"};
    gr_graph *g;
    char *rep;
    cc_result *r = compile_text(text, "t.txt", "spyre-4core", wd, 1, &g, &rep);
    CU_ASSERT_PTR_NOT_NULL(strstr(rep, "k 768 in chunks of 64"));
    rt_device *dev;
    chip_config cfg;
    tu_config("spyre-4core", &cfg);
    rt_program *prog = load_on(&cfg, cc_result_take_program(r), &dev);
    rt_run_result res;
    char err[256];
    CU_ASSERT_FATAL(!rt_fill_inputs(prog, 7, err, sizeof err) && !rt_launch(prog, &res));
    CU_ASSERT_EQUAL_FATAL(res.stats.nkernels, 1);
    const double q = cc_result_estimate(r, "k0_addmm") / res.stats.kernels[0].core_span;
    if (q < 0.75 || q > 1.25)
        fprintf(stderr, "k0_addmm: estimate / simulated %.3f\n", q);
    CU_ASSERT(q >= 0.75 && q <= 1.25);
    free(rep);
    rt_unload(prog);
    rt_close(dev);
    cc_result_free(r);
    gr_graph_free(g);
}

/* Estimate / simulated (the longest one core ran it) of kernel `name` of
 * graph `text` compiled for (with the work_div spec wd, or none: NULL)
 * and run timing only on chip `cfgname`. */
static double estimate_ratio_wd(const char *text, const char *cfgname, const char *name, const char *wd)
{
    gr_graph *g;
    char *rep, err[256];
    const char *const wds[] = {wd};
    cc_result *r = compile_text(text, "t.txt", cfgname, wd ? wds : NULL, wd != NULL, &g, &rep);
    rt_device *dev;
    chip_config cfg;
    tu_config(cfgname, &cfg);
    rt_program *prog = load_on(&cfg, cc_result_take_program(r), &dev);
    rt_run_result res;
    CU_ASSERT_FATAL(!rt_fill_inputs(prog, 7, err, sizeof err) && !rt_launch(prog, &res));
    double q = 0;
    for (int k = 0; k < res.stats.nkernels; k++)
        if (!strcmp(res.stats.kernels[k].name, name))
            q = cc_result_estimate(r, name) / res.stats.kernels[k].core_span;
    if (q < 2.0 / 3 || q > 1.5)
        fprintf(stderr, "%s on %s: estimate / simulated %.3f\n", name, cfgname, q);
    free(rep);
    rt_unload(prog);
    rt_close(dev);
    cc_result_free(r);
    gr_graph_free(g);
    return q;
}

static double estimate_ratio(const char *text, const char *cfgname, const char *name)
{
    return estimate_ratio_wd(text, cfgname, name, NULL);
}

/* Transposes whose rows do not follow one another in DRAM: a DMA per run
 * of rows (the report's estimate counts them as be_dma_rows emits them;
 * it counted one per load: transformer_small's transposes of the first
 * shape 0.44 of the simulated time where a refresh met them), and one
 * restaging its input's sticks (llama_gen's heads of k), whose reads
 * wait on the channels its staged sticks span, the same 2 KB on every
 * core (it counted each core's share of the rows apart: 1.6, in llama_gen
 * 2.07).  Within 2/3 to 1.5: a refresh meeting a kernel of a few hundred
 * cycles or not is a swing of 420 cycles.  The first on 2 cores, as the
 * choices took it when this was measured (now 8 and 4, where the parts of
 * 2 and 4 rows are the DMAs' issue alone: on 4 cores 440 estimated, 284
 * simulated at phase 0). */
static void test_the_estimate_of_a_transpose_counts_a_dma_per_run_of_rows(void)
{
    const char *rows = "graph t\ninput %x: f32[2, 8, 64]\n%t: f32[8, 2, 64] = aten.transpose.int(%x, 0, 1)\n"
                       "%y: f32[8, 2, 64] = aten.clone.default(%t)\noutput %y\n";
    const char *heads = "graph t\ninput %x: f32[16, 32]\n%v: f32[16, 2, 16] = aten.view.default(%x, [16, 2, 16])\n"
                        "%t: f32[2, 16, 16] = aten.transpose.int(%v, 0, 1)\n"
                        "%u: f32[2, 1, 16, 16] = aten.unsqueeze.default(%t, 1)\n"
                        "%e: f32[2, 2, 16, 16] = aten.expand.default(%u, [2, 2, 16, 16])\n"
                        "%y: f32[2, 2, 16, 16] = aten.clone.default(%e)\noutput %y\n";
    static const char *const chips[] = {"spyre", "spyre-4core"};
    for (int i = 0; i < 2; i++) {
        const double a = estimate_ratio_wd(rows, chips[i], "k0_transpose", "k0_transpose=2"),
                     b = estimate_ratio(heads, chips[i], "k0_view_transpose_unsqueeze");
        CU_ASSERT(a >= 2.0 / 3 && a <= 1.5);
        CU_ASSERT(b >= 2.0 / 3 && b <= 1.5);
    }
}

/* Attention's PV product reads its A, the probabilities the softmax
 * kept in LX on the same cores (a core per head): its estimate counts
 * no DRAM bytes for A.  Counted, BERT-base's PV was estimated 2.7 times
 * the simulated time (7,979 cycles for 2,942); this graph's 2.60 times,
 * now 4,379 cycles, 1.43 (the DMA of A from LX at the ring stop's rate
 * still counted whole).  Within 2/3 to 1.5 as the transposes above. */
static void test_the_estimate_of_a_product_whose_a_stays_in_lx_counts_no_dram_bytes_for_it(void)
{
    const char *text = "graph t\ninput %q: f32[12, 128, 64]\ninput %kt: f32[12, 64, 128]\ninput %v: f32[12, 128, 64]\n"
                       "%s: f32[12, 128, 128] = aten.bmm.default(%q, %kt)\n"
                       "%p: f32[12, 128, 128] = aten._softmax.default(%s, -1, False)\n"
                       "%o: f32[12, 128, 64] = aten.bmm.default(%p, %v)\noutput %o\n";
    gr_graph *g;
    char *rep;
    cc_result *r = compile_text(text, "t.txt", "spyre", NULL, 0, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "  kept in lx: p for k1_softmax..k2_bmm", "\nk2_bmm: grid 1x1b12 on 12 cores");
    free(rep);
    cc_result_free(r);
    gr_graph_free(g);
    const double q = estimate_ratio(text, "spyre", "k2_bmm");
    CU_ASSERT(q >= 2.0 / 3 && q <= 1.5);
}

/* BERT-base's attention softmax (scores / 8 + mask, softmax over 128
 * columns; a core per head, the scores and probabilities kept in LX): its
 * report estimate prices the SFP instructions the evaluation emits, each
 * its issue and its sticks at its op's rate (exp and div twice an add),
 * the last chunk its own rows.  It counted nexpr (18, an upper bound of
 * the temps) simple instructions a chunk for the 7 emitted: 1.975 in
 * BERT-base and here (6,110 cycles for 3,093; now 3,222, 1.04).  Within
 * 0.8 to 1.25, tighter than the kernels above: it reads and writes only
 * LX, so no DRAM refresh can meet it; what is left is the DMAs' overlap. */
static void test_the_estimate_of_a_softmax_row_kernel_counts_its_sfp_instructions_as_emitted(void)
{
    const char *text = "graph t\ninput %q: f32[12, 128, 64]\ninput %kt: f32[12, 64, 128]\ninput %v: f32[12, 128, 64]\n"
                       "input %m: f32[1, 1, 1, 128]\n"
                       "%s: f32[12, 128, 128] = aten.bmm.default(%q, %kt)\n"
                       "%u: f32[1, 12, 128, 128] = aten._unsafe_view.default(%s, [1, 12, 128, 128])\n"
                       "%d: f32[1, 12, 128, 128] = aten.div.Tensor(%u, 8.0)\n"
                       "%a: f32[1, 12, 128, 128] = aten.add.Tensor(%d, %m)\n"
                       "%p: f32[1, 12, 128, 128] = aten._softmax.default(%a, -1, False)\n"
                       "%pv: f32[12, 128, 128] = aten.view.default(%p, [12, 128, 128])\n"
                       "%o: f32[12, 128, 64] = aten.bmm.default(%pv, %v)\noutput %o\n";
    const double q = estimate_ratio(text, "spyre", "k1_div_add_softmax");
    CU_ASSERT(q >= 0.8 && q <= 1.25);
}

/* Every kernel of transformer_small on spyre-4core within half to twice
 * its simulated time (bench/run estimate's bounds), the mean of its
 * core_span over 7 refresh phases as the bench takes it (at phase 0
 * alone k61_div, a row kernel of 446 cycles estimated, met a refresh
 * once its neighbours ran on the grid over the ring: 940 simulated,
 * 0.47).  Its k54_baddbmm stages B, broadcast over the batch, whole on
 * each of 4 cores: 2 KB a core, which the estimate counted once per
 * batch index (4 KB) and waited on as if the 4 cores' reads spanned 4
 * times the channels, 1,113 cycles for 469 simulated (2.37); now 1.75. */
static void test_the_estimates_of_transformer_small_on_4_cores_are_within_half_to_twice(void)
{
    char *text = tu_read_file(SPYRE_SOURCE_DIR "/traces/transformer_small/graph.txt", NULL), *rep, err[256];
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    gr_graph *g;
    cc_result *r = compile_text(text, "graph.txt", "spyre-4core", NULL, 0, &g, &rep);
    rt_device *dev;
    chip_config cfg;
    tu_config("spyre-4core", &cfg);
    rt_program *prog = load_on(&cfg, cc_result_take_program(r), &dev);
    rt_run_result *res = malloc(sizeof *res);
    rt_phase_means m;
    CU_ASSERT_FATAL(res && !rt_fill_inputs(prog, 7, err, sizeof err) && !rt_launch_phases(prog, 7, res, &m));
    int n = 0;
    for (int k = 0; k < res->stats.nkernels; k++) {
        const sim_kernel_stats *ks = &res->stats.kernels[k];
        const double est = cc_result_estimate(r, ks->name);
        if (est <= 0 || m.core_span[k] <= 0 || !ks->insns)
            continue;
        const double q = est / m.core_span[k];
        if (q < 0.5 || q > 2)
            fprintf(stderr, "%s: estimate / simulated %.3f\n", ks->name, q);
        CU_ASSERT(q >= 0.5 && q <= 2);
        n++;
    }
    CU_ASSERT(n > 50);
    rt_phase_means_free(&m);
    free(res);
    free(rep);
    free(text);
    rt_unload(prog);
    rt_close(dev);
    cc_result_free(r);
    gr_graph_free(g);
}

/* traces/NAME/graph.txt parsed, or NULL. */
static gr_graph *trace_graph(const char *name)
{
    char err[512], path[512];
    snprintf(path, sizeof path, "%s/traces/%s/graph.txt", SPYRE_SOURCE_DIR, name);
    char *text = tu_read_file(path, NULL);
    gr_graph *g = text ? gr_graph_parse(text, "graph.txt", err, sizeof err) : NULL;
    free(text);
    return g;
}

/* A compiled result loaded on a spyre device that simulates timing alone
 * (no values: random cache positions index nothing), with its report. */
typedef struct {
    cc_result *r;
    char *rep;
    rt_device *dev;
    rt_program *prog;
} timed_prog;

static void timed_load(timed_prog *t)
{
    chip_config cfg;
    tu_config("spyre", &cfg);
    t->prog = load_on(&cfg, cc_result_take_program(t->r), &t->dev);
    sim_options so = {.values = 0, .trace = SIM_TRACE_OFF};
    rt_set_options(t->dev, &so);
}

static void timed_free(timed_prog *t)
{
    free(t->rep);
    rt_unload(t->prog);
    rt_close(t->dev);
    cc_result_free(t->r);
}

/* g compiled for spyre with the n work_div specs wd, its report
 * containing want (unless NULL), run for its timing alone (no values):
 * its statistics in *st, the core count of kernel `name` in *cores. */
static void run_for_stats(const gr_graph *g, const char *const *wd, int n, const char *name, const char *want,
                          sim_stats *st, int *cores)
{
    char err[512];
    timed_prog t;
    t.r = compile_wd(g, "spyre", wd, n, &t.rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t.r);
    const char *rep = t.rep;
    long gm = 0, gn = 0;
    char key[128];
    snprintf(key, sizeof key, "\n%s: rows over ", name);
    const char *rows = strstr(rep, key);
    const int got = rows ? sscanf(rows + strlen(key), "%d core", cores) - 1 : report_grid(rep, name, &gm, &gn, cores);
    CU_ASSERT_EQUAL(got, 0);
    if (want) {
        TU_ASSERT_CONTAINS(rep, want);
    }
    timed_load(&t);
    rt_run_result *res = malloc(sizeof *res);
    CU_ASSERT_FATAL(res && !rt_launch(t.prog, res));
    *st = res->stats;
    free(res);
    timed_free(&t);
}

/* A product of fewer rows than a PT pass splits its batch over cores, and
 * an operand it stages whole is each core's part, not the whole buffer:
 * serve_tiny's decode step (2 sequences, 256 cached tokens) QK^T, k^T
 * from the cache pool, runs 1x1b4 and reads the pool once over the 4
 * cores (as one core does), where a split of N over 4 cores reads most
 * of it on each (one run of rows per stick group spans the sequences).
 * Before, every core staged all of B, and the split was never tried. */
static void test_a_short_products_batch_split_stages_only_each_cores_part_of_b(void)
{
    gr_graph *g = trace_graph("serve_tiny/decode_b2_c256");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    static const char *const one[] = {"k7_bmm=1x1"}, *const four_n[] = {"k7_bmm=1x4"};
    sim_stats def, st1, stn;
    int cdef = 0, c1 = 0, cn = 0;
    const char *want = "B k_pool (sfp.rst from its sticks, staged whole once per core)";
    run_for_stats(g, NULL, 0, "k7_bmm", want, &def, &cdef);
    run_for_stats(g, one, 1, "k7_bmm", want, &st1, &c1);
    run_for_stats(g, four_n, 1, "k7_bmm", want, &stn, &cn);
    CU_ASSERT_EQUAL(cdef, 4);
    CU_ASSERT_EQUAL(c1, 1);
    CU_ASSERT_EQUAL(cn, 4);
    /* the same bytes as one core's (the pool once), not 4 cores' worth */
    CU_ASSERT(def.dram_bytes_read <= st1.dram_bytes_read);
    CU_ASSERT(stn.dram_bytes_read > st1.dram_bytes_read * 3 / 2);
    /* the kernel's own time (the step's total can tie: QK^T runs beside the values' kernels) */
    const sim_kernel_stats *kd = sim_stats_kernel(&def, "k7_bmm"), *k1 = sim_stats_kernel(&st1, "k7_bmm"),
                           *kn = sim_stats_kernel(&stn, "k7_bmm");
    CU_ASSERT_FATAL(kd && k1 && kn);
    CU_ASSERT(kd->core_span < k1->core_span);
    CU_ASSERT(kd->core_span < kn->core_span);
    CU_ASSERT(def.cycles <= st1.cycles);
    gr_graph_free(g);
}

/* The cycle kernel `name` of a run ended at (-1: not in the stats). */
static double kernel_end(const sim_stats *st, const char *name)
{
    const sim_kernel_stats *k = sim_stats_kernel(st, name);
    return k ? k->end : -1;
}

/* A product of 64 rows or more that the choices leave on one core is
 * searched again with the DRAM's waits priced (be_matmul.c,
 * mm_plan_waits): serve_tiny's prefill (64 tokens after 192 cached)
 * projects q, k and v with 64 x 64 x 64 and 64 x 32 x 64 products, each
 * on one core by the estimates without the waits (474 cycles against
 * 591 on 5 cores), 1,396 against 1,158 with them.  On 5 cores the three
 * are done at cycle 4,313 on spyre, on one core at 4,870 (Dec 4; the
 * layer's end, 38,437 either way at refresh phase 0, is set by later
 * kernels: 47,449 against 49,355 when the projections were its path).
 * With placement independent, the three in turn: with free, the default,
 * the three of one core each run at once on cores 0 to 2 and end first
 * (2,880 against 3,314; the work division does not weigh placement). */
static void test_a_64_row_product_is_split_over_cores_when_its_dram_waits_dominate(void)
{
    gr_graph *g = trace_graph("serve_tiny/prefill_c192");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    static const char *const wd[] = {"k1_mm=1x1", "k2_mm=1x1", "k3_mm=1x1"};
    sim_stats def, one;
    int cdef = 0, cone = 0;
    placement = CC_PLACE_INDEPENDENT;
    run_for_stats(g, NULL, 0, "k1_mm", "k1_mm: grid 5x1 on 5 cores, split m", &def, &cdef);
    run_for_stats(g, wd, 3, "k1_mm", NULL, &one, &cone);
    placement = 0;
    CU_ASSERT_EQUAL(cdef, 5);
    CU_ASSERT_EQUAL(cone, 1);
    CU_ASSERT(kernel_end(&def, "k3_mm") > 0);
    CU_ASSERT(kernel_end(&def, "k3_mm") < kernel_end(&one, "k3_mm"));
    CU_ASSERT(def.cycles <= one.cycles);
    gr_graph_free(g);
}

/* A row kernel takes its first reader's split when that reader and the
 * kernels right after it read what it writes, up to its last use
 * (be_rows.c, read_by_run): serve_tiny's prefill (64 tokens) normalises
 * x on 5 cores like its q, k and v products, which read the result in a
 * row, and keeps it in LX for them; with placement independent (the
 * three in turn) they end at cycle 4,376 against 5,432 with the norm on
 * its own 8 cores (refresh phase 0; the sweep's mean of the graph 25,123
 * cycles against 26,117).  Under free, the default, the k and v products
 * move to other cores and read it from DRAM: about the same cycles. */
static void test_a_row_kernel_takes_the_split_of_readers_in_a_row(void)
{
    gr_graph *g = trace_graph("serve_tiny/prefill_c0");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    static const char *const wd[] = {"k0_pow_mean_add=8"};
    sim_stats def, own;
    int cdef = 0, cown = 0;
    placement = CC_PLACE_INDEPENDENT;
    run_for_stats(g, NULL, 0, "k0_pow_mean_add", "k0_pow_mean_add: rows over 5 cores (as k1_mm, for LX)", &def,
                  &cdef);
    run_for_stats(g, wd, 1, "k0_pow_mean_add", NULL, &own, &cown);
    placement = 0;
    CU_ASSERT_EQUAL(cdef, 5);
    CU_ASSERT_EQUAL(cown, 8);
    CU_ASSERT(kernel_end(&def, "k3_mm") > 0);
    CU_ASSERT(kernel_end(&def, "k3_mm") < kernel_end(&own, "k3_mm"));
    gr_graph_free(g);
}

/* Kernel `name` of g compiled for spyre with the n work_div specs wd:
 * its estimate (the report's) into *est and the mean over `phases`
 * refresh phases of its core_span (the longest one core ran it, as
 * bench/run estimate compares) into *span. */
static void estimate_and_span(const gr_graph *g, const char *const *wd, int n, const char *name, int phases,
                              double *est, double *span)
{
    char err[512];
    timed_prog t;
    t.r = compile_wd(g, "spyre", wd, n, &t.rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t.r);
    *est = cc_result_estimate(t.r, name);
    timed_load(&t);
    rt_run_result *res = malloc(sizeof *res);
    CU_ASSERT_PTR_NOT_NULL_FATAL(res);
    rt_phase_means m;
    CU_ASSERT_FATAL(!rt_launch_phases(t.prog, phases, res, &m));
    *span = -1;
    for (int k = 0; k < res->stats.nkernels; k++)
        if (!strcmp(res->stats.kernels[k].name, name))
            *span = m.core_span[k];
    rt_phase_means_free(&m);
    free(res);
    timed_free(&t);
}

/* A product whose cores run one block each overlaps nothing: the first
 * block's epilogue loads, its chunk's loads, the PT, the epilogue and the
 * stores run in series (be_matmul.c, mm_ends), which the report's
 * estimate prices with the DRAM's waits.  serve_tiny's prefill MLP up
 * product with SiLU, 64 x 160 x 64 on 1x3 (one 64-row block a core), was
 * estimated 1,542 cycles as a pipeline of blocks; its estimate must now
 * be within a fifth of its core_span, the mean of 7 refresh phases (the
 * acceptance of bench/run estimate's geometric mean, 0.8 to 1.25; Dec 4:
 * 2,421 against 2,543), and so must the default's.  So priced against the
 * grid over the ring, whose way in counts half a column (be_ring.c,
 * rg_hops), the default is 16x2r (2,212 against 1,945), faster than 1x3. */
static void test_a_product_of_one_block_a_core_is_estimated_in_series_and_loses_to_the_ring(void)
{
    gr_graph *g = trace_graph("serve_tiny/prefill_c64");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    static const char *const one[] = {"k17_silu_mm_mul=1x3"};
    double est1, span1, est, span;
    estimate_and_span(g, one, 1, "k17_silu_mm_mul", 7, &est1, &span1);
    CU_ASSERT(span1 > 0);
    CU_ASSERT(est1 >= 0.8 * span1 && est1 <= 1.25 * span1);
    int cores = 0;
    sim_stats st;
    run_for_stats(g, NULL, 0, "k17_silu_mm_mul", "k17_silu_mm_mul: grid 16x2r on 32 cores", &st, &cores);
    estimate_and_span(g, NULL, 0, "k17_silu_mm_mul", 7, &est, &span);
    CU_ASSERT(est >= 0.8 * span && est <= 1.25 * span);
    CU_ASSERT(span > 0 && span < span1);
    printf("\n  one block a core (1x3): estimate %.0f, span %.0f; default: %.0f, %.0f\n", est1, span1, est, span);
    gr_graph_free(g);
}

/* g compiled for spyre with the n work_div specs wd, its report
 * containing want, run timing only at `phases` refresh phases evenly
 * spread over tREFI (as `spyre sweep` ranks variants): the mean cycles. */
static double mean_cycles_over_phases(const gr_graph *g, const char *const *wd, int n, const char *want, int phases)
{
    char err[512], *rep;
    cc_result *r = compile_wd(g, "spyre", wd, n, &rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    TU_ASSERT_CONTAINS(rep, want);
    chip_config cfg;
    tu_config("spyre", &cfg);
    rt_device *dev;
    rt_program *prog = load_on(&cfg, cc_result_take_program(r), &dev);
    rt_run_result *res = malloc(sizeof *res);
    CU_ASSERT_PTR_NOT_NULL_FATAL(res);
    sim_options so = {.values = 0, .trace = SIM_TRACE_OFF};
    rt_set_options(dev, &so);
    rt_phase_means m;
    CU_ASSERT_FATAL(!rt_launch_phases(prog, phases, res, &m));
    const double mean = m.cycles;
    rt_phase_means_free(&m);
    free(res);
    free(rep);
    rt_unload(prog);
    rt_close(dev);
    cc_result_free(r);
    return mean;
}

/* The choices price no DRAM wait; for a plain product the split of K of
 * their grid and the grids of as many rows of cores that tie are priced
 * again with the waits (be_matmul.c, mm_plan_ties): gpt2_small_block_tiny's
 * MLP, 32 rows, takes the 256-column product on 1x4 (was 1x2) and the
 * 64 x 256 projection on 1x1x4 (was 1x1): 13,188 -> 11,933 cycles, the
 * mean over 7 refresh phases.  (Since its one block a core is priced in
 * series against the grid over the ring, the default takes the
 * 256-column product on 8x4r, 12,090 cycles: 1x4 is forced here.) */
static void test_a_product_whose_dram_waits_dominate_splits_k_and_n_over_more_cores(void)
{
    gr_graph *g = trace_graph("gpt2_small_block_tiny");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    static const char *const was[] = {"k7_addmm_gelu=1x2", "k8_addmm_add=1x1"};
    static const char *const nsplit[] = {"k8_addmm_add=1x1", "k7_addmm_gelu=1x4"};
    static const char *const split[] = {"k7_addmm_gelu=1x4"};
    const double def = mean_cycles_over_phases(g, split, 1, "k8_addmm_add: grid 1x1x4 on 4 cores, split k", 7);
    const double old = mean_cycles_over_phases(g, was, 2, "k7_addmm_gelu: grid 1x2 on 2 cores", 7);
    const double wide = mean_cycles_over_phases(g, nsplit, 2, "k7_addmm_gelu: grid 1x4 on 4 cores", 7);
    /* each of the two choices is faster on its own, the two 9% together */
    CU_ASSERT(def < wide);
    CU_ASSERT(wide < old);
    CU_ASSERT(def < 0.93 * old);
    gr_graph_free(g);
}

/* Kernel `name`'s span (end - start) in st, or -1. */
static double kernel_span(const sim_stats *st, const char *name)
{
    const sim_kernel_stats *k = sim_stats_kernel(st, name);
    return k ? k->end - k->start : -1;
}

/* The simulated span of kernel `name` of g as the compiler divides it
 * (*cores: its core count). */
static double default_span(const gr_graph *g, const char *name, int *cores)
{
    sim_stats st;
    run_for_stats(g, NULL, 0, name, NULL, &st, cores);
    return kernel_span(&st, name);
}

/* The shortest simulated span of kernel `name` of g over the core counts
 * counts[0..n) (each forced by --work-div), or `best` if shorter. */
static double best_span_over_counts(const gr_graph *g, const char *name, const int *counts, size_t n, double best)
{
    sim_stats st;
    int c = 0;
    for (size_t i = 0; i < n; i++) {
        char spec[64];
        snprintf(spec, sizeof spec, "%s=%d", name, counts[i]);
        const char *const wd[] = {spec};
        run_for_stats(g, wd, 1, name, NULL, &st, &c);
        CU_ASSERT_EQUAL(c, counts[i]);
        const double span = kernel_span(&st, name);
        CU_ASSERT(span > 0);
        best = span < best ? span : best;
    }
    return best;
}

/* A row kernel of fewer sticks than the floor gives a core (8 a core) is
 * spread past it where the estimate with the DRAM's waits priced says so
 * (be_rows.c, rows_past_floor): serve_tiny's decode (one sequence, 128
 * cached) takes a softmax over 129 columns of 4 rows, 12 sticks, which
 * the floor kept on one core.  Its simulated span on the chosen count
 * must be within 3% of the best of 1 to 4 cores (the sweep: 851, 741,
 * 729 and 704 cycles, mean of 7 refresh phases). */
static void test_a_row_kernel_of_few_sticks_takes_the_cores_its_simulated_span_is_best_on(void)
{
    gr_graph *g = trace_graph("serve_tiny/decode_b1_c128");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const char *name = "k9_cat_div_softmax";
    int cdef = 0;
    const double def = default_span(g, name, &cdef);
    static const int counts[] = {1, 2, 3, 4};
    const double best = best_span_over_counts(g, name, counts, sizeof counts / sizeof *counts, def);
    CU_ASSERT(cdef > 1);
    CU_ASSERT(def > 0 && def <= 1.03 * best);
    gr_graph_free(g);
}

/* A row kernel whose result stays only in LX (a later kernel takes it by
 * ring exchange, nothing reads it from DRAM) is priced writing no DRAM in
 * the choices too (be_rows.c, rows_cost_as), as a product is: serve_tiny's
 * prefill (64 tokens after 192 cached) softmaxes 256 rows of 256 columns
 * and passes the probabilities to PV on 2 cores so.  Priced as written,
 * the DRAM term tied 16 and 32 cores (4,184 and 4,094 cycles) and it
 * stayed on 16, its span 5,019 cycles against 4,177 on 32 (the sweep's,
 * mean of 7 refresh phases).  It must take 32 and a span within 3% of
 * the best of 16, 24 and 32 cores, and the layer must end sooner than
 * with the softmax on 16. */
static void test_a_row_kernel_whose_result_stays_only_in_lx_is_divided_without_its_dram_write(void)
{
    gr_graph *g = trace_graph("serve_tiny/prefill_c192");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const char *name = "k9_div_add_softmax";
    static const char *const wd[] = {"k9_div_add_softmax=16"};
    sim_stats def, sixteen;
    int cdef = 0, c16 = 0;
    run_for_stats(g, NULL, 0, name, "  kept in lx: _softmax for k9_div_add_softmax..k11_bmm", &def, &cdef);
    run_for_stats(g, wd, 1, name, NULL, &sixteen, &c16);
    static const int counts[] = {16, 24, 32};
    const double span = kernel_span(&def, name);
    const double best = best_span_over_counts(g, name, counts, sizeof counts / sizeof *counts, span);
    printf("\n  prefill_c192 softmax: %d cores, span %.0f cycles, best %.0f; layer %.0f cycles, %.0f on 16", cdef, span,
           best, def.cycles, sixteen.cycles);
    CU_ASSERT_EQUAL(cdef, 32);
    CU_ASSERT(span > 0 && span <= 1.03 * best);
    CU_ASSERT(def.cycles < sixteen.cycles);
    gr_graph_free(g);
}

/* A row kernel whose chunk is one DMA a core: the DRAM serves each DMA
 * whole in the order the cores issue them, so the cores' chunks land one
 * after another and each core's SFP work and stores go while the later
 * cores' reads stream (be_rows.c, rows_cost_as).  A softmax over 512 x
 * 1024 (bench simspeed's input), which the estimate that put every
 * core's reads, SFP work and stores in series took over 32 cores (23,499
 * cycles for the kernel against 21,639 on 11), must take a count whose
 * simulated span is within 3% of the best of the counts tried. */
static void test_a_row_kernel_of_one_dma_a_chunk_takes_a_core_count_near_its_best_span(void)
{
    char err[512];
    const char *text = "graph sm\ninput %x: f32[512, 1024]\n"
                       "%s: f32[512, 1024] = aten._softmax.default(%x, 1, False)\noutput %s\n";
    gr_graph *g = gr_graph_parse(text, "sm.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const char *name = "k0_softmax";
    int cdef = 0;
    const double def = default_span(g, name, &cdef);
    static const int counts[] = {6, 7, 8, 11, 16, 32};
    const double best = best_span_over_counts(g, name, counts, sizeof counts / sizeof *counts, def);
    printf("\n  softmax 512x1024: %d cores, span %.0f cycles, best of the counts tried %.0f", cdef, def, best);
    CU_ASSERT(def > 0 && def <= 1.03 * best);
    gr_graph_free(g);
}

/* A view whose rows do not follow one another in DRAM takes a DMA per
 * run of rows, and the choices count them: serve_tiny's prefill (128
 * tokens after 128 cached) transposes its 4 heads' PV results (256 rows
 * of one stick), which with one DMA counted stayed on 2 cores, 128 loads
 * and stores each: 48,885 -> 45,903 cycles on 10. */
static void test_a_transpose_of_many_runs_of_rows_is_spread_over_more_cores_than_two(void)
{
    gr_graph *g = trace_graph("serve_tiny/prefill_c128");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    static const char *const wd[] = {"k12_unsafe_view_view_transpose=2"};
    sim_stats def, two;
    int cdef = 0, ctwo = 0;
    run_for_stats(g, NULL, 0, "k12_unsafe_view_view_transpose", NULL, &def, &cdef);
    run_for_stats(g, wd, 1, "k12_unsafe_view_view_transpose", NULL, &two, &ctwo);
    CU_ASSERT(cdef > 2);
    CU_ASSERT_EQUAL(ctwo, 2);
    CU_ASSERT(def.cycles < two.cycles);
    gr_graph_free(g);
}

/* An uneven split-K grid: the cells' tiles differ, each is one block. */
static void test_split_k_on_an_uneven_grid_validates(void)
{
    const char *text = "graph t\ninput %x: f32[1, 700]\ninput %w: f32[700, 300]\ninput %b: f32[300]\n"
                       "%y: f32[1, 300] = aten.addmm.default(%b, %x, %w)\noutput %y\n";
    static const char *const wd[] = {"k0_addmm=1x2x2"};
    char err[1024];
    gr_graph *g = gr_graph_parse(text, "t.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", wd, 1, NULL), 0);
    gr_graph_free(g);
}

/* relu(x) does not depend on the product but is fused into its kernel
 * with the node that reads both: the template must stay first. */
static void test_a_pointwise_node_independent_of_the_product_joins_its_epilogue(void)
{
    const char *text = "graph t\ninput %x: f32[64, 64]\ninput %w0: f32[64, 64]\n"
                       "%v0: f32[64, 64] = aten.relu.default(%x)\n%v1: f32[64, 64] = aten.mul.Tensor(%v0, %v0)\n"
                       "%v2: f32[64, 64] = aten.mm.default(%x, %w0)\n%v3: f32[64, 64] = aten.mul.Tensor(%v0, %v2)\n"
                       "%v4: f32[64, 64] = aten.add.Tensor(%v3, %x)\noutput %v4\n";
    expect_text_validates_on_both_chips(text);
}

/* Products with N or K of 1: matrix-vector, with a transposed weight,
 * and an outer product. */
static void test_products_with_n_or_k_of_one_validate(void)
{
    const char *mv = "graph t\ninput %x: f32[64, 128]\ninput %w: f32[128, 1]\n"
                     "%y: f32[64, 1] = aten.mm.default(%x, %w)\noutput %y\n";
    const char *mvt = "graph t\ninput %x: f32[64, 128]\ninput %w: f32[1, 128]\n%t: f32[128, 1] = aten.t.default(%w)\n"
                      "%y: f32[64, 1] = aten.mm.default(%x, %t)\noutput %y\n";
    const char *outer = "graph t\ninput %x: f32[64, 1]\ninput %w: f32[1, 100]\n"
                        "%y: f32[64, 100] = aten.mm.default(%x, %w)\noutput %y\n";
    expect_text_validates_on_both_chips(mv);
    CU_ASSERT_EQUAL(run_text(mvt, "spyre"), 0);
    CU_ASSERT_EQUAL(run_text(outer, "spyre-4core"), 0);
    /* K of 1 from a one-column slice: no dimension of extent 1 to walk */
    const char *slice = "graph t\ninput %x: f32[2, 64]\ninput %w: f32[1, 100]\n"
                        "%a: f32[2, 1] = aten.slice.Tensor(%x, 1, 38, 39)\n"
                        "%y: f32[2, 100] = aten.mm.default(%a, %w)\noutput %y\n";
    CU_ASSERT_EQUAL(run_text(slice, "spyre"), 0);
}

/* A 0-d and a one-element tensor read for every element: each becomes
 * every lane of a per-column value, once per core. */
static void test_a_scalar_read_for_every_element_validates(void)
{
    const char *text = "graph sc\ninput %x: f32[100, 200]\ninput %s: f32[]\ninput %t: f32[1]\n"
                       "%y: f32[100, 200] = aten.mul.Tensor(%x, %s)\n%z: f32[100, 200] = aten.add.Tensor(%y, %t)\n"
                       "output %z\n";
    expect_text_validates_on_both_chips(text);
}

/* Reductions of a kernel with one row (a 1-D softmax, a layer norm of a
 * single vector): the values are per-column, reduced as a tile of one row. */
static void test_reductions_over_a_single_row_validate(void)
{
    const char *text = "graph one\ninput %b: f32[7]\ninput %v: f32[1, 1, 64]\ninput %w: f32[64]\ninput %c: f32[64]\n"
                       "%s: f32[7] = aten._log_softmax.default(%b, -1, False)\n"
                       "%ln: (f32[1, 1, 64], f32[1, 1, 1], f32[1, 1, 1]) = "
                       "aten.native_layer_norm.default(%v, [64], %w, %c, 1e-05)\n"
                       "%y: f32[1, 1, 64] = getitem(%ln, 0)\noutput %s, %y\n";
    expect_text_validates_on_both_chips(text);
}

/* A whole (5, 5, 5) tensor reduced, or flattened: a row kernel of one row
 * whose 125 columns run across the tensor's rows of sticks; its load is a
 * tile of that row, staged (OpInfo's var, std, var_mean, ravel samples). */
static void test_a_whole_tensor_reduced_or_flattened_is_one_staged_row(void)
{
    const char *text = "graph w\ninput %x: f32[5, 5, 5]\n"
                       "%v: f32[] = aten.var.correction(%x, None, correction=1)\n"
                       "%m: f32[] = aten.amax.default(%x, [0, 1, 2])\n"
                       "%f: f32[125] = aten.view.default(%x, [-1])\n"
                       "%g: f32[125] = aten.neg.default(%f)\noutput %v, %m, %g\n";
    expect_text_validates_on_both_chips(text);
}

/* An unbiased var or std over one element divides 0 by 0: NaN, as in
 * PyTorch (scaling the square by 1 / 0 gave 0). */
static void test_an_unbiased_var_over_one_element_is_nan(void)
{
    const char *text = "graph v1\ninput %x: f32[1, 1, 8]\n"
                       "%s: f32[1, 1, 8] = aten.std.correction(%x, [0], correction=1, keepdim=True)\n"
                       "%v: f32[8] = aten.var.correction(%x, [0, 1], correction=1)\noutput %s, %v\n";
    expect_text_validates_on_both_chips(text);
}

/* A layer norm over two dimensions, (8, 48) of (4, 8, 48): its rows'
 * 384 columns run past the stick dimension of x and of the weight and
 * bias, per-column operands read as tiles, staged for each row. */
static void test_a_layer_norm_over_two_dimensions_stages_its_weight_per_row(void)
{
    const char *text = "graph ln2\ninput %x: f32[4, 8, 48]\ninput %w: f32[8, 48]\ninput %b: f32[8, 48]\n"
                       "%ln: (f32[4, 8, 48], f32[4, 1, 1], f32[4, 1, 1]) = "
                       "aten.native_layer_norm.default(%x, [8, 48], %w, %b, 1e-05)\n"
                       "%y: f32[4, 8, 48] = getitem(%ln, 0)\n%m: f32[4, 1, 1] = getitem(%ln, 1)\noutput %y, %m\n";
    expect_text_validates_on_both_chips(text);
}

/* Kernels of one element (no loops left): a column loop of one. */
static void test_one_element_kernels_validate(void)
{
    const char *one = "graph one\ninput %x: f32[1, 1]\ninput %s: f32[]\n%y: f32[1, 1] = aten.mul.Tensor(%x, %s)\n"
                      "%z: f32[1, 1] = aten.exp.default(%y)\noutput %z\n";
    const char *zd = "graph zd\ninput %x: f32[]\n%y: f32[] = aten.relu.default(%x)\noutput %y\n";
    const char *copy = "graph cp\ninput %a: f32[2, 64]\ninput %s: f32[1]\n%v: f32[1] = aten._unsafe_view.default(%s, [1])\n"
                       "%r: f32[2, 64] = aten.relu.default(%a)\noutput %v, %r\n";
    CU_ASSERT_EQUAL(run_text(one, "spyre"), 0);
    CU_ASSERT_EQUAL(run_text(zd, "spyre-4core"), 0);
    CU_ASSERT_EQUAL(run_text(copy, "spyre"), 0);
}

/* Reductions over the first dimension: a per-row result (one element per
 * column of x) whose layout runs along the kernel's rows, stored through
 * a staged copy; on cores whose parts are whole sticks of rows. */
static void test_a_reduction_over_the_first_dimension_stores_through_a_staged_copy(void)
{
    const char *text = "graph cs\ninput %x: f32[256, 128]\ninput %y: f32[512, 64]\n"
                       "%s: f32[1, 128] = aten.sum.dim_IntList(%x, [0], True)\n"
                       "%m: f32[64] = aten.amax.default(%y, [0])\noutput %s, %m\n";
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(text, "cs.txt", "spyre", NULL, 0, &g, &rep);
    TU_ASSERT_CONTAINS(rep, "result s (stored through a staged copy)");
    free(rep);
    cc_result_free(r);
    gr_graph_free(g);
    expect_text_validates_on_both_chips(text);
}

/* A reduction over a long leading dimension is two (compiler/front/lower.c,
 * reduce_in_two): partials over blocks of at most 128 elements, then their
 * reduction.  Over 4096 elements one reduction's row needed 1 MB of LX,
 * more than spyre-4core's 256 KB; a middle dimension with keepdim, a max
 * and a length (1000) that blocks of 125 divide validate too, and a prime
 * length (1031: blocks of 128, the last one's 121 elements past the end
 * the identity, -inf for a max, +inf for a min). */
static void test_a_reduction_over_a_long_leading_dimension_runs_in_two(void)
{
    const char *text = "graph lr\ninput %x: f32[4096, 64]\ninput %y: f32[2, 1536, 64]\ninput %z: f32[1000, 64]\n"
                       "input %p: f32[1031, 3, 64]\n"
                       "%s: f32[64] = aten.sum.dim_IntList(%x, [0])\n"
                       "%m: f32[2, 1, 64] = aten.amin.default(%y, [1], True)\n"
                       "%a: f32[64] = aten.mean.dim(%z, [0])\n"
                       "%pm: f32[3, 64] = aten.amax.default(%p, [0])\n"
                       "%pn: f32[3, 64] = aten.amin.default(%p, [0])\n"
                       "%ps: f32[3, 64] = aten.sum.dim_IntList(%p, [0])\noutput %s, %m, %a, %pm, %pn, %ps\n";
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(text, "lr.txt", "spyre-4core", NULL, 0, &g, &rep);
    CU_ASSERT_PTR_NOT_NULL(r);
    TU_ASSERT_CONTAINS(rep, "s_part");
    TU_ASSERT_CONTAINS(rep, "m_part");
    free(rep);
    cc_result_free(r);
    gr_graph_free(g);
    expect_text_validates_on_both_chips(text);
}

/* An input returned is copied to a tensor "outputN" and validates; when the
 * graph has a value of that name already, it stays a clear error. */
static void test_returning_an_input_is_a_copy_and_a_clash_of_names_a_clear_error(void)
{
    const char *text = "graph t\ninput %x: f32[8, 64]\n%y: f32[8, 64] = aten.relu.default(%x)\noutput %y, %x\n";
    CU_ASSERT_EQUAL(run_text(text, "spyre"), 0);
    const char *clash = "graph t\ninput %x: f32[8, 64]\n%output1: f32[8, 64] = aten.relu.default(%x)\n"
                        "output %output1, %x\n";
    char err[1024], *rep;
    gr_graph *g = gr_graph_parse(clash, "t.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_result *r = compile_wd(g, "spyre", NULL, 0, &rep, err, sizeof err);
    CU_ASSERT_PTR_NULL(r);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "output x: the graph returns one of its inputs unchanged (not supported yet)"));
    cc_result_free(r);
    gr_graph_free(g);
}

/* cat along rows: each operand's load is guarded by a where and covers
 * every row of the kernel; the rows past an operand are not read (they
 * were the output's own rows in DRAM: a race with its store). */
static void test_a_cat_along_rows_reads_nothing_past_its_operands(void)
{
    const char *text = "graph t\ninput %a: f32[1, 64]\ninput %b: f32[16, 64]\n"
                       "%c: f32[17, 64] = aten.cat.default([%b, %a], 0)\noutput %c\n";
    expect_text_validates_on_both_chips(text);
}

/* ---- Row kernels' temps in LX: given back after their last read ---- */

/* Rows per chunk of the graph's first row kernel on cfgname, from the
 * report's tiles line (-1: not compiled or no such line). */
static long chunk_rows(const char *text, const char *cfgname)
{
    char err[1024];
    gr_graph *g = gr_graph_parse(text, "test.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    chip_config cfg;
    cc_result *r = compile_for(g, cfgname, &cfg, err, sizeof err);
    gr_graph_free(g);
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
    expect_text_validates_on_both_chips(wide_layer_norm_graph);
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
    expect_text_validates_on_both_chips(temps_graph);
    /* one kernel of 19 temps, at most 6 live at once: a tile per temp left
     * room for chunks of one row on spyre-4core, six cells for five */
    CU_ASSERT(chunk_rows(temps_graph, "spyre-4core") >= 4);
}

/* Stores of different row lengths in one kernel: not cut, one row of 8192
 * columns whose loads and stores are staged; it validates on spyre, and
 * where that row does not fit LX (spyre-4core) the fallback cuts the
 * kernel in two (IR_SRC_CUT), which validate. */
static void test_a_kernel_storing_two_row_lengths_is_one_staged_row(void)
{
    const char *text = "graph t\ninput %x: f32[64, 128]\n%a: f32[64, 128] = aten.relu.default(%x)\n"
                       "%v: f32[128, 64] = aten.view.default(%x, [128, 64])\n"
                       "%b: f32[128, 64] = aten.neg.default(%v)\noutput %a, %b\n";
    CU_ASSERT_EQUAL(run_text(text, "spyre"), 0);
    CU_ASSERT_EQUAL(run_text(text, "spyre-4core"), 0);
    char err[1024];
    gr_graph *g = gr_graph_parse(text, "t.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    expect_wd(g, "spyre", NULL, 1, "k0_relu_neg: pointwise [8192]");
    expect_wd(g, "spyre-4core", NULL, 1, "k1_neg: pointwise [8192]");
    gr_graph_free(g);
}

static void test_lx_planning_beats_no_lx_plan_on_softmax(void)
{
    static const char text[] = "graph softmax_rows\n"
                                "input %x: f32[512, 1024]\n"
                                "%y: f32[512, 1024] = aten._softmax.default(%x, -1, False)\n"
                                "output %y\n";
    char err[512];
    gr_graph *g = gr_graph_parse(text, "softmax.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const char *cfgs[] = {"spyre", "spyre-4core"};
    for (int i = 0; i < 2; i++) {
        sim_stats *st = malloc(2 * sizeof *st);
        for (int plan = 0; plan < 2; plan++) {
            no_lx_plan = !plan;
            CU_ASSERT_EQUAL(run_graph(g, cfgs[i], NULL, NULL, &st[plan]), 0);
        }
        no_lx_plan = 0;
        uint64_t without = st[0].dram_bytes_read + st[0].dram_bytes_written;
        uint64_t with = st[1].dram_bytes_read + st[1].dram_bytes_written;
        fprintf(stderr, "\n  softmax 512x1024 on %s: LX plan %.0f cycles %llu DRAM bytes, no LX plan %.0f cycles %llu "
                        "DRAM bytes",
                cfgs[i], st[1].cycles, (unsigned long long)with, st[0].cycles, (unsigned long long)without);
        CU_ASSERT_EQUAL(with, 2u * 512 * 1024 * 2); /* x read once, y written once */
        CU_ASSERT(without > 2 * with);
        CU_ASSERT(st[1].cycles < st[0].cycles);
        free(st);
    }
    gr_graph_free(g);
}

/* Graph outputs that are views of a matmul result across its stick
 * dimension (the decode step's new V heads, and a plain transpose): the
 * lowering gives each its own buffer, written by a copy kernel whose load
 * is restickified in LX, so the output has a row-major layout of its own.
 * A where over a per-row condition (the KV cache cat) needs the per-row
 * value broadcast to a tile. */
static const char *transposed_output_graph =
    "graph tout\n"
    "input %x: f32[1, 64]\n"
    "input %h: f32[8, 64]\n"
    "input %w: f32[64, 32]\n"
    "input %cache: f32[2, 3, 16]\n"
    "%mm: f32[1, 32] = aten.mm.default(%x, %w)\n"
    "%v: f32[1, 1, 2, 16] = aten.view.default(%mm, [1, 1, 2, 16])\n"
    "%vt: f32[1, 2, 1, 16] = aten.transpose.int(%v, 1, 2)\n"
    "%v3: f32[2, 1, 16] = aten.view.default(%vt, [2, 1, 16])\n"
    "%c: f32[2, 4, 16] = aten.cat.default([%cache, %v3], 1)\n"
    "%mh: f32[8, 32] = aten.mm.default(%h, %w)\n"
    "%ht: f32[32, 8] = aten.t.default(%mh)\n"
    "output %vt, %ht, %c\n";

static void test_an_output_transposed_from_a_matmul_is_copied_and_validates_on_both_chips(void)
{
    expect_text_validates_on_both_chips(transposed_output_graph);
}

/* ---- kernel boundaries: a fence, or a bar where a dependency crosses cores ---- */

/* relu on rows, then a matmul reading those rows (twice: A and the add) */
static const char *relu_mm_graph = "graph relumm\n"
                                   "input %x: f32[64, 128]\n"
                                   "input %w: f32[128, 128]\n"
                                   "%y: f32[64, 128] = aten.relu.default(%x)\n"
                                   "%m: f32[64, 128] = aten.mm.default(%y, %w)\n"
                                   "%z: f32[64, 128] = aten.add.Tensor(%m, %y)\n"
                                   "output %z\n";

/* How many instructions of op each core's stream holds: the same count
 * on every core, or -1. */
static int per_core_count(const isa_program *p, int op)
{
    int want = -1;
    for (int c = 0; c < p->ncores; c++) {
        int n = 0;
        for (size_t i = 0; i < p->cores[c].n; i++)
            n += p->cores[c].insns[i].op == op;
        if (c && n != want)
            return -1;
        want = n;
    }
    return want;
}

/* Compile relu_mm_graph with relu on 2 cores and the matmul on grid
 * (the program in *out, the report in *rep). */
static void compile_relu_mm(const char *grid, gr_graph **g, isa_program **out, char **rep)
{
    char err[1024], wd1[64];
    snprintf(wd1, sizeof wd1, "k1_mm_add=%s", grid);
    const char *const wd[] = {"k0_relu=2", wd1};
    *g = gr_graph_parse(relu_mm_graph, "relumm.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(*g);
    cc_result *r = compile_wd(*g, "spyre", wd, 2, rep, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    *out = cc_result_take_program(r);
    cc_result_free(r);
}

static void test_kernels_whose_rows_stay_on_their_cores_are_separated_by_a_fence(void)
{
    /* each matmul core reads the rows of y its relu core wrote: from LX
     * (kept there) or, with --no-lx-keep, from DRAM */
    for (int keep = 1; keep >= 0; keep--) {
        no_lx_keep = !keep;
        gr_graph *g;
        isa_program *p;
        char *rep;
        compile_relu_mm("2x1", &g, &p, &rep);
        CU_ASSERT_PTR_NOT_NULL(strstr(rep, keep ? "  from lx: y, y\n" : "  dram: reads y, w; writes z\n"));
        TU_ASSERT_CONTAINS(rep, "\n  before it: fence\n",
                                "\nboundaries: 0 bars, 1 fence\n");
        CU_ASSERT_EQUAL(per_core_count(p, ISA_OP_FENCE), 1);
        CU_ASSERT_EQUAL(per_core_count(p, ISA_OP_BAR), 0);
        isa_program_free(p);
        free(rep);
        static const char *const wd[] = {"k0_relu=2", "k1_mm_add=2x1"};
        CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", wd, 2, NULL), 0); /* race-checked */
        gr_graph_free(g);
    }
    no_lx_keep = 0;
}

static void test_a_kernel_reading_rows_another_core_wrote_waits_at_a_bar(void)
{
    /* split n: core 0 reads every row of y, half of them written by core 1 */
    gr_graph *g;
    isa_program *p;
    char *rep;
    compile_relu_mm("1x2", &g, &p, &rep);
    const char *why = strstr(rep, "\n  before it: bar (core 0 reads DRAM 0x");
    CU_ASSERT_PTR_NOT_NULL(why);
    CU_ASSERT_PTR_NOT_NULL(why ? strstr(why, " that core 1 wrote)\n") : NULL);
    TU_ASSERT_CONTAINS(rep, "\nboundaries: 1 bar, 0 fences\n");
    CU_ASSERT_EQUAL(per_core_count(p, ISA_OP_BAR), 1);
    CU_ASSERT_EQUAL(per_core_count(p, ISA_OP_FENCE), 0);
    free(rep);
    /* the simulator reports the race a fence in its place would leave */
    chip_config cfg;
    tu_config("spyre", &cfg);
    for (int c = 0; c < p->ncores; c++)
        for (size_t i = 0; i < p->cores[c].n; i++)
            if (p->cores[c].insns[i].op == ISA_OP_BAR)
                p->cores[c].insns[i].op = ISA_OP_FENCE;
    sim *s = sim_create(&cfg);
    sim_stats *st = malloc(sizeof *st);
    sim_fault f;
    CU_ASSERT_EQUAL(sim_run(s, p, 0, st, &f), -1);
    if (!strstr(f.msg, "race: core 0 dmai"))
        fprintf(stderr, "\nfault: %s\n", f.msg);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, "race: core 0 dmai"));
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, "that core 1 dmao"));
    free(st);
    sim_destroy(s);
    isa_program_free(p);
    gr_graph_free(g);
}

/* relu, a product split over K (partial sums over the ring), softmax:
 * each on the same rows of the same two cores */
static const char *ring_graph = "graph rk\n"
                                "input %x: f32[64, 2048]\n"
                                "input %w: f32[2048, 128]\n"
                                "%y: f32[64, 2048] = aten.relu.default(%x)\n"
                                "%m: f32[64, 128] = aten.mm.default(%y, %w)\n"
                                "%s: f32[64, 128] = aten._softmax.default(%m, -1, False)\n"
                                "output %s\n";

static void test_ring_traffic_puts_a_bar_before_its_kernel(void)
{
    static const char *const wd[] = {"k0_relu=2", "k1_mm=2x1x2", "k2_softmax=2"};
    char *rep;
    gr_graph *g;
    cc_result *r = compile_text(ring_graph, "rk.txt", "spyre", wd, 3, &g, &rep);
    /* the softmax after it needs its bar for the DRAM the product's other
     * cores wrote: the partial sums' transfers are all awaited by their
     * destinations, which alone would leave it a fence (be_bound.h) */
    TU_ASSERT_CONTAINS(rep, "partial sums reduced over the ring\n",
                            "\n  before it: bar (ring traffic in this kernel)\n",
                            "\n  before it: bar (core 1 reads DRAM ",
                            "\nboundaries: 2 bars, 0 fences\n");
    free(rep);
    cc_result_free(r);
    CU_ASSERT_EQUAL(run_graph_wd(g, "spyre", wd, 3, NULL), 0);
    gr_graph_free(g);
}

/* ---- Zero-size dimensions and long names ---- */

/* Compile text for cfgname, run it on seeded inputs (or those of the
 * safetensors file inputs) and check every output against the reference
 * executor; then read the n tensors names[] (inputs or outputs, as fp32)
 * into vals[] and their element counts into elems[].  Returns the outputs
 * not ok, -1 on a failure (message printed). */
static int run_and_read_from(const char *text, const char *path, const char *cfgname, const char *inputs, int n,
                             const char *const *names, float **vals, int64_t *elems)
{
    char err[1024];
    gr_graph *g = gr_graph_parse(text, path, err, sizeof err);
    if (!g)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    chip_config cfg;
    cc_result *r = compile_for(g, cfgname, &cfg, err, sizeof err);
    if (!r) {
        fprintf(stderr, "compile on %s: %s\n", cfgname, err);
        gr_graph_free(g);
        return -1;
    }
    isa_program *p = cc_result_take_program(r);
    cc_result_free(r);
    rt_device *dev;
    rt_program *prog = load_on(&cfg, p, &dev);
    rt_run_result res;
    rt_check_result *chk = NULL;
    int bad = -1, nchk = 0;
    if (rt_fill_inputs(prog, 7, err, sizeof err) || rt_load_graph_tensors(prog, g, inputs, err, sizeof err) ||
        rt_launch(prog, &res) || (bad = rt_check_graph(prog, g, &chk, &nchk, err, sizeof err)) < 0)
        fprintf(stderr, "on %s: %s\n", cfgname, err);
    CU_ASSERT_EQUAL(nchk, g->noutputs);
    free(chk);
    for (int i = 0; i < n && bad >= 0; i++) {
        const isa_program *ip = rt_program_isa(prog);
        int ti = isa_program_find_tensor(ip, names[i]);
        CU_ASSERT_FATAL(ti >= 0);
        elems[i] = rt_tensor_elems(&ip->tensors[ti]);
        vals[i] = malloc((size_t)(elems[i] ? elems[i] : 1) * sizeof *vals[i]);
        if (rt_read_tensor(prog, names[i], vals[i], err, sizeof err)) {
            fprintf(stderr, "read %s: %s\n", names[i], err);
            bad = -1;
        }
    }
    rt_unload(prog);
    rt_close(dev);
    gr_graph_free(g);
    return bad;
}

static int run_and_read(const char *text, const char *path, const char *cfgname, int n, const char *const *names,
                        float **vals, int64_t *elems)
{
    return run_and_read_from(text, path, cfgname, NULL, n, names, vals, elems);
}

static const char *const both_chips[] = {"spyre", "spyre-4core"};

/* A float attention mask that may hold +inf (here where(x > 0, inf, 0))
 * makes those rows of scaled_dot_product_attention NaN as
 * in PyTorch (inf - inf in its softmax), not one-hot: the softmax's guard
 * is asked of the mask's source as softmax's own is (may_be_inf).  The
 * reference executor's outputs, NaN rows included, on both chips. */
static void test_sdpa_with_a_float_mask_holding_plus_inf_is_nan_as_pytorch(void)
{
    const char *text = "graph sdpa_inf\ninput %q: f32[1, 4, 8]\ninput %k: f32[1, 4, 8]\ninput %v: f32[1, 4, 8]\n"
                       "input %x: f32[4, 4]\n"
                       "%t: bool[4, 4] = aten.gt.Scalar(%x, 0.0)\n"
                       "%m: f32[4, 4] = aten.where.ScalarOther(%t, inf, 0.0)\n"
                       "%y: f32[1, 4, 8] = aten.scaled_dot_product_attention.default(%q, %k, %v, %m)\n"
                       "output %y\n";
    const char *names[] = {"y"};
    for (int c = 0; c < 2; c++) {
        float *v[1] = {0};
        int64_t n[1] = {0};
        CU_ASSERT_EQUAL(run_and_read(text, "sdpa_inf.txt", both_chips[c], 1, names, v, n), 0);
        free(v[0]);
    }
}

/* A graph whose every op falls back to the host compiles on both chips:
 * codegen's DRAM-access check then sees no piece of any kernel (none
 * allocated), and joins no group of them (bd_record; the sanitizer build,
 * SPYRE_SANITIZE, stopped at a memmove of its NULL pieces). */
static void test_a_graph_of_host_ops_alone_compiles_on_both_chips(void)
{
    const char *text = "graph host_alone\ninput %x: f32[4, 4]\n"
                       "%y: f32[4, 4] = aten.frobnicate.default(%x)\noutput %y\n";
    char err[512];
    gr_graph *g = gr_graph_parse(text, "test.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    for (int c = 0; c < 2; c++) {
        chip_config cfg;
        cc_result *r = compile_for(g, both_chips[c], &cfg, err, sizeof err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        isa_program *prog = cc_result_take_program(r);
        CU_ASSERT_PTR_NOT_NULL(prog);
        isa_program_free(prog);
        cc_result_free(r);
    }
    gr_graph_free(g);
}

/* text compiles with no host op on both chips (no_fallback: any refusal is
 * an error) and validates on both. */
static void expect_text_runs_natively_and_validates_on_both_chips(const char *text)
{
    char err[512];
    for (int c = 0; c < 2; c++) {
        compile_error(text, both_chips[c], err, sizeof err);
        CU_ASSERT_STRING_EQUAL(err, "");
    }
    expect_text_validates_on_both_chips(text);
}

/* A bmm reads its operand through every reshape that keeps the last two
 * dims (unsqueeze, flatten, not only view and reshape) and, for one row,
 * through a transpose under them (matmul_source): one row and eight. */
static void test_a_bmm_reads_through_an_unsqueeze_and_flatten_of_a_transpose(void)
{
    const char *text =
        "graph bmm_views\n"
        "input %k: f32[4, 16, 32]\n"
        "input %q: f32[4, 1, 32]\n"
        "input %p: f32[4, 8, 32]\n"
        "%kt: f32[4, 32, 16] = aten.transpose.int(%k, 1, 2)\n"
        "%ku: f32[1, 4, 32, 16] = aten.unsqueeze.default(%kt, 0)\n"
        "%kf: f32[4, 32, 16] = aten.flatten.using_ints(%ku, 0, 1)\n"
        "%s: f32[4, 1, 16] = aten.bmm.default(%q, %kf)\n"
        "%t: f32[4, 8, 16] = aten.bmm.default(%p, %kf)\n"
        "output %s, %t\n";
    char *report = NULL;
    isa_program_free(compile_reroll(text, "spyre", 0, &report));
    TU_ASSERT_CONTAINS(report, "reads: q f32[4, 1, 32], k f32[4, 16, 32]\n");
    TU_ASSERT_CONTAINS(report, "reads: p f32[4, 8, 32], k f32[4, 16, 32]\n");
    free(report);
    expect_text_runs_natively_and_validates_on_both_chips(text);
}

/* pixel_shuffle and pixel_unshuffle (super-resolution nets, nn.PixelShuffle)
 * ran on the host, 16,818 cycles of a 42,640-cycle model: they are a reshape,
 * a permute and a reshape, of rank 3 to 5, and run natively (one with no
 * elements as well: it divided by zero, an OpInfo sample found it). */
static void test_pixel_shuffle_and_unshuffle_run_natively_and_validate(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph ps\n"
        "input %x: f32[2, 12, 3, 5]\n"
        "input %y: f32[2, 2, 1, 6, 9]\n"
        "input %z: f32[12, 3, 5]\n"
        "input %e: f32[1, 0, 2, 2]\n"
        "%a: f32[2, 3, 6, 10] = aten.pixel_shuffle.default(%x, 2)\n"
        "%b: f32[2, 2, 9, 2, 3] = aten.pixel_unshuffle.default(%y, 3)\n"
        "%c: f32[3, 6, 10] = aten.pixel_shuffle.default(%z, 2)\n"
        "%d: f32[1, 0, 4, 4] = aten.pixel_shuffle.default(%e, 2)\n"
        "output %a, %b, %c, %d\n");
}

/* Transposed convolutions (autoencoders, UNets, GAN generators) ran on the
 * host: they are one stride-1 convolution per output phase, interleaved
 * (dec_convt.c).  Over 2-D and 1-D ones with stride 2, 3 and 4 (2 and 1
 * along two axes), padding, output_padding, dilation (2 with stride 4:
 * half the phases take no tap and are the bias alone; 3 with stride 2),
 * groups, bias and stride 1, kernel = stride (one 1x1 convolution for
 * every phase, 2-D and 1-D, with and without bias), and one whose weight
 * is large enough to be read by per-tap products (lower_conv.c,
 * conv_weight_walks_no_stick), every output runs natively and validates
 * on both chips. */
static void test_transposed_convolutions_run_natively_and_validate(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph convt\n"
        "input %x: f32[2, 6, 5, 7]\ninput %wa: f32[6, 4, 4, 4]\ninput %ba: f32[4]\ninput %bc: f32[3]\n"
        "input %wb: f32[6, 8, 2, 2]\ninput %wc: f32[6, 3, 3, 3]\ninput %wg: f32[6, 4, 3, 2]\n"
        "input %x1: f32[1, 4, 9]\ninput %w1: f32[4, 5, 3]\ninput %b1: f32[5]\n"
        "input %b8: f32[8]\ninput %w2: f32[4, 5, 2]\n"
        "input %xb: f32[1, 64, 4, 4]\ninput %wbig: f32[64, 64, 3, 3]\ninput %bb: f32[64]\n"
        "%big: f32[1, 64, 8, 8] = aten.convolution.default(%xb, %wbig, %bb, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)\n"
        "%a: f32[2, 4, 10, 14] = aten.convolution.default(%x, %wa, %ba, [2, 2], [1, 1], [1, 1], True, [0, 0], 1)\n"
        "%b: f32[2, 8, 10, 14] = aten.convolution.default(%x, %wb, None, [2, 2], [0, 0], [1, 1], True, [0, 0], 1)\n"
        "%c: f32[2, 3, 8, 12] = aten.convolution.default(%x, %wc, %bc, [2, 2], [2, 2], [1, 1], True, [1, 1], 1)\n"
        "%d: f32[2, 3, 17, 18] = aten.convolution.default(%x, %wc, None, [3, 2], [0, 1], [2, 3], True, [0, 1], 1)\n"
        "%e: f32[2, 3, 7, 9] = aten.convolution.default(%x, %wc, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1)\n"
        "%g: f32[2, 8, 11, 8] = aten.convolution.default(%x, %wg, None, [2, 1], [0, 0], [1, 1], True, [0, 0], 2)\n"
        "%f: f32[1, 5, 28] = aten.convolution.default(%x1, %w1, %b1, [3], [0], [1], True, [1], 1)\n"
        "%h: f32[1, 5, 37] = aten.convolution.default(%x1, %w1, %b1, [4], [1], [2], True, [2], 1)\n"
        "%b2: f32[2, 8, 10, 14] = aten.convolution.default(%x, %wb, %b8, [2, 2], [0, 0], [1, 1], True, [0, 0], 1)\n"
        "%i: f32[1, 5, 18] = aten.convolution.default(%x1, %w2, %b1, [2], [0], [1], True, [0], 1)\n"
        "output %b2, %i, %big, %a, %b, %c, %d, %e, %g, %f, %h\n");
}

/* Audio front ends' 1-D convs ran on the host on the 4-core chip: a
 * Conv1d of one channel copied its input a stick per sample, and an NCW
 * reader of a long channels-last result staged a stick per pixel, both
 * past LX.  A 1-channel conv of stride 4 and 5 (audio, wav2vec2's first
 * layer), with and without bias, long convs with padding, dilation and a
 * GELU between them (Whisper's stem), read NCW by relu and GELU, every
 * output runs natively and validates on both chips. */
static void test_long_1d_convolutions_run_natively_and_validate(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph audio1d\n"
        "input %x: f32[2, 1, 4000]\ninput %w: f32[16, 1, 9]\ninput %b: f32[16]\ninput %wv: f32[32, 1, 10]\n"
        "input %m: f32[1, 16, 1000]\ninput %w3: f32[24, 16, 3]\ninput %b3: f32[24]\ninput %w4: f32[24, 24, 3]\n"
        "input %wd: f32[8, 16, 3]\n"
        "%a: f32[2, 16, 998] = aten.convolution.default(%x, %w, %b, [4], [0], [1], False, [0], 1)\n"
        "%ra: f32[2, 16, 998] = aten.relu.default(%a)\n"
        "%v: f32[2, 32, 799] = aten.convolution.default(%x, %wv, None, [5], [0], [1], False, [0], 1)\n"
        "%gv: f32[2, 32, 799] = aten.gelu.default(%v)\n"
        "%c: f32[1, 24, 1000] = aten.convolution.default(%m, %w3, %b3, [1], [1], [1], False, [0], 1)\n"
        "%gc: f32[1, 24, 1000] = aten.gelu.default(%c)\n"
        "%e: f32[1, 24, 500] = aten.convolution.default(%gc, %w4, None, [2], [1], [1], False, [0], 1)\n"
        "%d: f32[1, 8, 1000] = aten.convolution.default(%m, %wd, None, [1], [2], [2], False, [0], 1)\n"
        "output %ra, %gv, %e, %d\n");
}

/* Grouped convs (ResNeXt, RegNet) were refused past small batches: each
 * group's product held C/G channels of a shared output stick, so its store
 * staged all of y in LX (64 channels in 8 groups at 28x28: from batch 2 on
 * the 4-core chip).  They run as one product over a block-diagonal weight
 * (lower_conv.c, conv_blockdiag).  With 8 and 32 groups (4 channels a group, a
 * BN-free ResNeXt 3x3 between two relus), stride 2, a channel multiplier,
 * no bias, and a 1-D one, every output runs natively and validates on both
 * chips. */
static void test_grouped_convolutions_run_natively_and_validate(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph grouped\n"
        "input %x: f32[2, 64, 28, 28]\ninput %w: f32[64, 8, 3, 3]\ninput %b: f32[64]\n"
        "input %x2: f32[2, 128, 14, 14]\ninput %w2: f32[128, 4, 3, 3]\ninput %wm: f32[32, 1, 3, 3]\ninput %xm: f32[2, 16, 10, 10]\n"
        "input %x1: f32[2, 32, 50]\ninput %w1: f32[64, 8, 5]\n"
        "%a: f32[2, 64, 28, 28] = aten.convolution.default(%x, %w, %b, [1, 1], [1, 1], [1, 1], False, [0, 0], 8)\n"
        "%r: f32[2, 128, 14, 14] = aten.relu.default(%x2)\n"
        "%c: f32[2, 128, 14, 14] = aten.convolution.default(%r, %w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 32)\n"
        "%rc: f32[2, 128, 14, 14] = aten.relu.default(%c)\n"
        "%s: f32[2, 128, 7, 7] = aten.convolution.default(%x2, %w2, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 32)\n"
        "%m: f32[2, 32, 5, 5] = aten.convolution.default(%xm, %wm, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 16)\n"
        "%o: f32[2, 64, 46] = aten.convolution.default(%x1, %w1, None, [1], [0], [1], False, [0], 4)\n"
        "output %a, %rc, %s, %m, %o\n");
}

/* 3-D convolutions (video ResNets' Conv3d) ran on the host: each is the
 * sum over its kernel's depth taps of 2-D convolutions of the depth slices
 * as a batch (dec_convt.c, conv3d_depth_taps).  With padding, bias, stride
 * and dilation along depth and the rows, groups, a depthwise one, batch 2,
 * a 1x1x1 of stride 2 (r3d_18's downsample), a kernel of one depth tap,
 * and a relu and residual add between two (realized channels-last, 5-D),
 * every output runs natively and validates on both chips. */
static void test_3d_convolutions_run_natively_and_validate(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph conv3d\n"
        "input %x: f32[2, 4, 5, 6, 7]\ninput %w: f32[6, 4, 3, 3, 3]\ninput %b: f32[6]\n"
        "input %wg: f32[6, 2, 2, 3, 1]\ninput %wd: f32[4, 1, 3, 3, 3]\ninput %w1: f32[8, 4, 1, 1, 1]\n"
        "input %wf: f32[5, 4, 1, 3, 3]\n"
        "%a: f32[2, 6, 5, 6, 7] = aten.convolution.default(%x, %w, %b, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 1)\n"
        "%s: f32[2, 6, 3, 2, 3] = aten.convolution.default(%x, %w, None, [2, 2, 2], [1, 0, 0], [1, 1, 1], False, [0, 0, 0], 1)\n"
        "%d: f32[2, 6, 3, 6, 3] = aten.convolution.default(%x, %w, %b, [1, 1, 1], [1, 1, 0], [2, 1, 2], False, [0, 0, 0], 1)\n"
        "%g: f32[2, 6, 4, 4, 7] = aten.convolution.default(%x, %wg, %b, [1, 1, 1], [0, 0, 0], [1, 1, 1], False, [0, 0, 0], 2)\n"
        "%dw: f32[2, 4, 5, 6, 7] = aten.convolution.default(%x, %wd, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 4)\n"
        "%p: f32[2, 8, 3, 3, 4] = aten.convolution.default(%x, %w1, None, [2, 2, 2], [0, 0, 0], [1, 1, 1], False, [0, 0, 0], 1)\n"
        "%f: f32[2, 5, 5, 3, 4] = aten.convolution.default(%x, %wf, None, [1, 2, 2], [0, 1, 1], [1, 1, 1], False, [0, 0, 0], 1)\n"
        "input %v: f32[6, 6, 3, 3, 3]\n"
        "%r: f32[2, 6, 5, 6, 7] = aten.relu.default(%a)\n"
        "%b2: f32[2, 6, 5, 6, 7] = aten.convolution.default(%r, %v, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 1)\n"
        "%res: f32[2, 6, 5, 6, 7] = aten.add.Tensor(%b2, %r)\n"
        "output %a, %s, %d, %g, %dw, %p, %f, %res\n");
}

/* 3-D transposed convolutions ran on the host: each is a 2-D one over the
 * depth images, its depth taps stacked as output channels (grouped: one
 * per tap), each tap spread to stride s along depth, shifted and summed
 * (dec_convt.c, convt3d_depth_taps).  With output_padding, groups and
 * dilation along depth, and a depth stride past the kernel (depths only
 * the bias reaches), every output runs natively and validates on both
 * chips. */
static void test_3d_transposed_convolutions_run_natively_and_validate(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph convt3d\n"
        "input %x: f32[2, 4, 3, 4, 4]\ninput %w: f32[4, 3, 3, 3, 3]\ninput %b: f32[3]\n"
        "input %wg: f32[4, 2, 2, 3, 3]\ninput %wt: f32[4, 3, 1, 2, 2]\n"
        "%a: f32[2, 3, 6, 8, 8] = aten.convolution.default(%x, %w, %b, [2, 2, 2], [1, 1, 1], [1, 1, 1], True, [1, 1, 1], 1)\n"
        "%g: f32[2, 4, 5, 4, 4] = aten.convolution.default(%x, %wg, None, [1, 1, 1], [0, 1, 1], [2, 1, 1], True, [0, 0, 0], 2)\n"
        "%t: f32[2, 3, 7, 8, 8] = aten.convolution.default(%x, %wt, %b, [3, 2, 2], [0, 0, 0], [1, 1, 1], True, [0, 0, 0], 1)\n"
        "%r: f32[2, 3, 6, 8, 8] = aten.relu.default(%a)\n"
        "output %r, %g, %t\n");
}

/* An embedding of indices computed on the device (a VQ-VAE's codebook at
 * argmin; an index offset) ran on the host: the gather reads its row
 * numbers from an input only.  Up to 1,024 table rows it is one-hot over
 * them (dec_index.c, dc_r_embedding), natively, and validates on both
 * chips. */
static void test_an_embedding_of_computed_indices_runs_natively_and_validates(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph emb\n"
        "input %x: f32[16, 32]\ninput %w: f32[32, 8]\ninput %cb: f32[40, 6]\n"
        "%i: i64[16] = aten.argmin.default(%x, 1)\n"
        "%q: f32[16, 8] = aten.embedding.default(%w, %i)\n"
        "%j: i64[4, 4] = aten.view.default(%i, [4, 4])\n"
        "%k: i64[4, 4] = aten.add.Tensor(%j, 5)\n"
        "%r: f32[4, 4, 6] = aten.embedding.default(%cb, %k)\n"
        "output %q, %r\n");
}

/* A one-channel Conv3d's depth taps were summed on one core, slower than
 * the host: taps whose channels fill one stick are now one product of K =
 * C KD KH KW (dec_convt.c, conv3d_depth_taps), its output permuted to
 * NCDHW through a rows-first copy.  One-channel 2-D convs (dilated, 1x1)
 * and a stride-1 one-channel Conv1d ran on the host on the 4-core chip:
 * their padded input was a stick per pixel, staged whole.  Every output
 * runs natively and validates on both chips. */
static void test_one_channel_convs_run_natively_and_validate(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph onech\n"
        "input %x: f32[2, 1, 32, 32]\ninput %w: f32[8, 1, 3, 3]\ninput %b: f32[8]\ninput %w1: f32[8, 1, 1, 1]\n"
        "input %s: f32[2, 1, 1000]\ninput %ws: f32[16, 1, 9]\ninput %b16: f32[16]\n"
        "input %v: f32[1, 1, 6, 10, 12]\ninput %wv: f32[4, 1, 3, 3, 3]\ninput %bv: f32[4]\n"
        "%d: f32[2, 8, 32, 32] = aten.convolution.default(%x, %w, %b, [1, 1], [2, 2], [2, 2], False, [0, 0], 1)\n"
        "%p: f32[2, 8, 32, 32] = aten.convolution.default(%x, %w1, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "%a: f32[2, 16, 1000] = aten.convolution.default(%s, %ws, %b16, [1], [4], [1], False, [0], 1)\n"
        "%c: f32[1, 4, 6, 10, 12] = aten.convolution.default(%v, %wv, %bv, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, "
        "[0, 0, 0], 1)\n"
        "output %d, %p, %a, %c\n");
}

static char *report_of(const char *text, const char *cfgname);

/* A dilated or 1x1 one-channel conv ran slower natively than on the host
 * on spyre-4core (an im2col of three restickifies per output pixel, y's
 * 8 channels a stick copied into NCHW): it is now one product the other
 * way round, wt[co, k] xt[n, oh, k, ow], its result NCHW.  A strided
 * dilated conv of 3 channels takes the per-channel im2col (its taps d
 * apart), where it took 9 products.  Every output validates on both
 * chips. */
static void test_one_channel_dilated_and_1x1_convs_are_one_nchw_product(void)
{
    static const char *text = "graph onenchw\n"
                              "input %x: f32[2, 1, 20, 24]\ninput %w: f32[8, 1, 3, 2]\ninput %b: f32[8]\n"
                              "input %w1: f32[5, 1, 1, 1]\ninput %x3: f32[2, 3, 20, 24]\ninput %w3: f32[4, 3, 3, 3]\n"
                              "%d: f32[2, 8, 18, 11] = aten.convolution.default(%x, %w, %b, [1, 2], [2, 1], [3, 4], "
                              "False, [0, 0], 1)\n"
                              "%p: f32[2, 5, 20, 24] = aten.convolution.default(%x, %w1, None, [1, 1], [0, 0], [1, 1], "
                              "False, [0, 0], 1)\n"
                              "%e: f32[2, 4, 9, 12] = aten.convolution.default(%x3, %w3, None, [2, 2], [1, 2], [2, 2], "
                              "False, [0, 0], 1)\n"
                              "output %d, %p, %e\n";
    expect_text_runs_natively_and_validates_on_both_chips(text);
    char *rep = report_of(text, "spyre-4core");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
    TU_ASSERT_CONTAINS(rep, "writes: conv_tap f32[2, 8, 18, 11]");
    TU_ASSERT_CONTAINS(rep, "writes: conv_tap.1 f32[2, 5, 20, 24]");
    TU_ASSERT_CONTAINS(rep, " f32[2, 9, 12, 3, 64]\n"); /* the 3-channel conv's im2col */
    free(rep);
}

/* A strided 1x1 one-channel conv (padded or not) read x at stride 1 in
 * the NCHW product, as did a strided 1x1 Conv1d whose row misses LX on
 * spyre-4core (the same product): a 1x1 conv keeps its stride as the
 * copy's (cs). */
static void test_a_strided_1x1_one_channel_conv_validates(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph onestrided\n"
        "input %x: f32[1, 1, 9, 20]\ninput %w: f32[2, 1, 1, 1]\ninput %b: f32[2]\n"
        "input %l: f32[1, 1, 9000]\ninput %v: f32[4, 1, 1]\n"
        "%y: f32[1, 2, 4, 8] = aten.convolution.default(%x, %w, %b, [3, 3], [1, 1], [1, 1], False, [0, 0], 1)\n"
        "%z: f32[1, 2, 5, 10] = aten.convolution.default(%x, %w, None, [2, 2], [0, 0], [2, 2], False, [0, 0], 1)\n"
        "%c: f32[1, 4, 4500] = aten.convolution.default(%l, %v, None, [2], [0], [2], False, [0], 1)\n"
        "output %y, %z, %c\n");
}

/* A one-channel Conv3d's summing tap reads its two other taps' products
 * as epilogue tiles: priced from DRAM on every batch split alike, it ran on
 * one core (141,397 cycles, the conv slower than the host).  Priced as
 * read from the LX its producers may keep them in, it splits the batch as
 * they do (16 parts) and validates. */
static void test_a_summing_conv_tap_splits_its_batch_as_the_taps_it_reads(void)
{
    static const char *text =
        "graph c3sum\n"
        "input %v: f32[1, 1, 16, 32, 32]\ninput %w: f32[8, 1, 3, 3, 3]\ninput %b: f32[8]\n"
        "%c: f32[1, 8, 16, 32, 32] = aten.convolution.default(%v, %w, %b, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, "
        "[0, 0, 0], 1)\n"
        "output %c\n";
    char *rep = report_of(text, "spyre");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
    TU_ASSERT_CONTAINS(rep, "conv_sum.1 f32[16, 32, 34, 8]\n");
    TU_ASSERT_CONTAINS(rep, "\nk5_convolution: grid 1x1b16 on 16 cores");
    free(rep);
    expect_text_runs_natively_and_validates_on_both_chips(text);
}

/* 3-D pools (max with indices, average with and without the padding
 * counted, adaptive average and max, even and uneven) are the 2-D ones'
 * strided slices with one more axis (decompose.c, pool_win): every output
 * runs natively and validates on both chips, the indices exactly. */
static void test_3d_pools_run_natively_and_validate(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph pool3d\n"
        "input %x: f32[1, 3, 6, 7, 9]\n"
        "%mp: (f32[1, 3, 3, 4, 5], i64[1, 3, 3, 4, 5]) = aten.max_pool3d_with_indices.default(%x, [2, 3, 3], [2, 2, 2], [0, 1, 1])\n"
        "%mv: f32[1, 3, 3, 4, 5] = getitem(%mp, 0)\n"
        "%mi: i64[1, 3, 3, 4, 5] = getitem(%mp, 1)\n"
        "%ap: f32[1, 3, 3, 4, 5] = aten.avg_pool3d.default(%x, [3, 3, 3], [2, 2, 2], [1, 1, 1], False, False)\n"
        "%ai: f32[1, 3, 2, 3, 4] = aten.avg_pool3d.default(%x, [2, 2, 2], [3, 2, 2], [0, 0, 0], False, True)\n"
        "%aa: f32[1, 3, 1, 1, 1] = aten._adaptive_avg_pool3d.default(%x, [1, 1, 1])\n"
        "%au: f32[1, 3, 4, 3, 2] = aten._adaptive_avg_pool3d.default(%x, [4, 3, 2])\n"
        "%amx: (f32[1, 3, 4, 3, 2], i64[1, 3, 4, 3, 2]) = aten.adaptive_max_pool3d.default(%x, [4, 3, 2])\n"
        "%am: f32[1, 3, 4, 3, 2] = getitem(%amx, 0)\n"
        "%ami: i64[1, 3, 4, 3, 2] = getitem(%amx, 1)\n"
        "output %mv, %mi, %ap, %ai, %aa, %au, %am, %ami\n");
}

/* A NaN reaching a max or a min is NaN, as PyTorch's maximum, minimum, amax,
 * clamp, max pooling and relu (sfp.max, sfp.min, sfp.rmax and sfp.relu; fmaxf
 * dropped it, so a pooled NaN pixel came out as its window's largest other
 * value, and relu made it 0).  sqrt of a negative makes the NaNs; the
 * reference executor has them NaN too. */
static void test_a_nan_in_a_max_or_a_min_is_nan_as_pytorch(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph nanmax\n"
        "%i: i64[24] = aten.arange.default(24)\n"
        "%f: f32[24] = aten.sub.Tensor(%i, 2.0)\n"
        "%s: f32[24] = aten.sqrt.default(%f)\n"
        "%g: f32[24] = aten.sub.Tensor(%i, 10.0)\n"
        "%mx: f32[24] = aten.maximum.default(%g, %s)\n"
        "%mn: f32[24] = aten.minimum.default(%s, %g)\n"
        "%cl: f32[24] = aten.clamp.default(%s, 0.5, 3.0)\n"
        "%am: f32[] = aten.amax.default(%s, [0])\n"
        "%x: f32[1, 1, 4, 6] = aten.view.default(%s, [1, 1, 4, 6])\n"
        "%mp: (f32[1, 1, 2, 3], i64[1, 1, 2, 3]) = aten.max_pool2d_with_indices.default(%x, [2, 2], [2, 2])\n"
        "%mv: f32[1, 1, 2, 3] = getitem(%mp, 0)\n"
        "%ap: (f32[1, 1, 2, 2], i64[1, 1, 2, 2]) = aten.adaptive_max_pool2d.default(%x, [2, 2])\n"
        "%av: f32[1, 1, 2, 2] = getitem(%ap, 0)\n"
        "%r: f32[24] = aten.relu.default(%s)\n"
        "output %mx, %mn, %cl, %am, %mv, %av, %r\n");
}

/* clamp of floats with min above max is max everywhere, its DL16 rounding
 * within --check's bound (the bound left it out below max); a NaN scalar
 * bound of clamp beside None is ignored, as torch 1.13 does (the device gave
 * NaN), while clamp_min's NaN and clamp's beside another bound give NaN
 * (fuzz40: both kept x there).  An infinite
 * bound clamps to itself (fuzz40: the reference's bound was inf - inf, an
 * internal error). */
static void test_clamp_with_min_above_max_or_a_nan_bound_is_as_pytorch(void)
{
    expect_text_runs_natively_and_validates_on_both_chips("graph clampsem\n"
                                                          "input %x: f32[8, 64]\n"
                                                          "%a: f32[8, 64] = aten.clamp.default(%x, 1.83, 1.41)\n"
                                                          "%b: f32[8, 64] = aten.clamp.default(%x, None, nan)\n"
                                                          "%c: f32[8, 64] = aten.clamp.default(%x, nan, 0.5)\n"
                                                          "%d: f32[8, 64] = aten.clamp_min.default(%x, nan)\n"
                                                          "%e: f32[8, 64] = aten.clamp_min.default(%x, inf)\n"
                                                          "%f: f32[8, 64] = aten.clamp_max.default(%x, -inf)\n"
                                                          "output %a, %b, %c, %d, %e, %f\n");
}

/* A finite mask constant beyond DL16's range (-1e30, float32's lowest as
 * Hugging Face masks with) was stored as NINF, a NaN: the softmax of every
 * masked row came out NaN.  It is written as a finite stand-in
 * (isa_dl16_standin), and --check takes it for a reference beyond DL16's range. */
static void test_a_mask_constant_beyond_dl16_is_the_stand_in(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph bigmask\n"
        "input %x: f32[16, 16]\n"
        "%o: f32[16, 16] = aten.ones.default([16, 16], dtype=f32)\n"
        "%t: f32[16, 16] = aten.triu.default(%o, 1)\n"
        "%m: bool[16, 16] = aten.gt.Scalar(%t, 0.5)\n"
        "%a: f32[16, 16] = aten.masked_fill.Scalar(%x, %m, -1e30)\n"
        "%b: f32[16, 16] = aten.masked_fill.Scalar(%x, %m, -3.4028234663852886e+38)\n"
        "%sa: f32[16, 16] = aten._softmax.default(%a, -1, False)\n"
        "%sb: f32[16, 16] = aten._softmax.default(%b, -1, False)\n"
        "%c: f32[16, 16] = aten.sub.Tensor(%x, 1e30)\n"
        "output %sa, %sb, %c\n");
}

/* fuzz40: remainder by an infinity is b where the signs differ, else a; the
 * device's a / b underflowed, floor gave 0 and it kept a (the reference's
 * bound of 0 inf was NaN, an internal error). fmod by an infinity is a. */
static void test_remainder_and_fmod_by_an_infinity_are_as_pytorch(void)
{
    expect_text_runs_natively_and_validates_on_both_chips("graph reminf\n"
                                                          "input %x: f32[4, 6]\n"
                                                          "%a: f32[4, 6] = aten.fmod.Scalar(%x, inf)\n"
                                                          "%b: f32[4, 6] = aten.remainder.Scalar(%x, inf)\n"
                                                          "%c: f32[4, 6] = aten.fmod.Scalar(%x, -inf)\n"
                                                          "%d: f32[4, 6] = aten.remainder.Scalar(%x, -inf)\n"
                                                          "output %a, %b, %c, %d\n");
}

/* fmod and remainder by an infinity of a finite a beyond the stand-in 2^30
 * (DL16 holds 2e9) are a as in PyTorch, not a - trunc(a / 2^30) 2^30; of an
 * infinite a (the stand-in, as uploaded) NaN, and so is the reference's. */
static void test_fmod_and_remainder_by_an_infinity_of_big_and_infinite_values_are_as_pytorch(void)
{
    const char *text = "graph remb\n"
                       "input %x: f32[8]\n"
                       "%a: f32[8] = aten.fmod.Scalar(%x, inf)\n"
                       "%b: f32[8] = aten.remainder.Scalar(%x, inf)\n"
                       "%c: f32[8] = aten.remainder.Scalar(%x, -inf)\n"
                       "%d: f32[8] = aten.fmod.Scalar(%x, -inf)\n"
                       "output %a, %b, %c, %d\n";
    const float I = INFINITY, N = NAN;
    float x[8] = {2e9f, -2e9f, 1.5e9f, 7e9f, I, -I, 3, -3};
    const float want[4][8] = {{2e9f, -2e9f, 1.5e9f, 7e9f, N, N, 3, -3}, /* torch 1.13 */
                              {2e9f, I, 1.5e9f, 7e9f, N, N, 3, I},
                              {-I, -2e9f, -I, -I, N, N, -I, -3},
                              {2e9f, -2e9f, 1.5e9f, 7e9f, N, N, 3, -3}};
    rt_st_entry e[1] = {{.name = "x", .dtype = RT_ST_F32, .rank = 1, .shape = {8}, .data = x}};
    char path[1024], err[256];
    tu_tmpfile(".safetensors", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, e, 1, err, sizeof err), 0);
    const char *names[] = {"a", "b", "c", "d"};
    for (int c = 0; c < 2; c++) {
        float *v[4] = {0};
        int64_t n[4] = {0};
        CU_ASSERT_EQUAL(run_and_read_from(text, "remb.txt", both_chips[c], path, 4, names, v, n), 0);
        for (int o = 0; o < 4; o++) {
            int same = 0;
            for (int k = 0; k < 8 && v[o]; k++) {
                float y = v[o][k], w = want[o][k];
                same += isnan(w)   ? isnan(y)
                        : isinf(w) ? (y < 0) == (w < 0) && fabsf(y) >= ISA_DL16_INF
                                   : fabsf(y - w) <= 0x1p-10f * fabsf(w);
            }
            CU_ASSERT_EQUAL(same, 8);
            free(v[o]);
        }
    }
    remove(path);
}

/* F.interpolate(mode="nearest-exact") (_upsample_nearest_exact1d/2d/3d)
 * faulted: neither the compiler nor the host had it.  It is nearest's
 * slices from the pixel centre's source, floor((i + 0.5) * scale). */
static void test_nearest_exact_upsampling_runs_natively_and_validates(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph nex\n"
        "input %x: f32[2, 3, 7, 9]\n"
        "input %s: f32[2, 4, 10]\n"
        "input %v: f32[1, 2, 3, 4, 5]\n"
        "%a: f32[2, 3, 13, 11] = aten._upsample_nearest_exact2d.vec(%x, [13, 11], None)\n"
        "%b: f32[2, 3, 14, 18] = aten._upsample_nearest_exact2d.vec(%x, None, [2.0, 2.0])\n"
        "%c: f32[2, 4, 4] = aten._upsample_nearest_exact1d.vec(%s, [4], None)\n"
        "%d: f32[1, 2, 5, 3, 7] = aten._upsample_nearest_exact3d.vec(%v, [5, 3, 7], None)\n"
        "output %a, %b, %c, %d\n");
}

/* A graph returning a reshaped copy and a value computed from it (F.unfold's
 * patches and F.fold of them): the fused chain's buffer took the output's
 * name, the output's own buffer then clashed with it and the compile failed
 * ("two values of the graph would be this one tensor"). */
static void test_an_output_reshaped_from_a_fused_buffer_runs_and_validates(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph twin\n"
        "input %x: f32[2, 4, 3]\n"
        "%permute: f32[2, 3, 4] = aten.permute.default(%x, [0, 2, 1])\n"
        "%clone: f32[2, 3, 4] = aten.clone.default(%permute, memory_format=\"contiguous_format\")\n"
        "%view: f32[2, 12] = aten.view.default(%clone, [2, 12])\n"
        "%view_1: f32[2, 3, 4] = aten.view.default(%view, [2, 3, 4])\n"
        "%permute_1: f32[2, 4, 3] = aten.permute.default(%view_1, [0, 2, 1])\n"
        "%mul: f32[2, 4, 3] = aten.mul.Tensor(%permute_1, 2)\n"
        "output %view, %mul\n");
}

/* A global max pool whose indices are not read (AdaptiveMaxPool3d(1) over
 * 6x8x10, AdaptiveMaxPool2d(1) over 20x24) builds no index chain: one of
 * 480 taps took minutes to compile, then was dropped. */
static void test_a_global_max_pool_without_indices_compiles_quickly(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph gmp\ninput %x: f32[2, 8, 6, 8, 10]\ninput %y: f32[1, 2, 20, 24]\n"
        "%p: (f32[2, 8, 1, 1, 1], i64[2, 8, 1, 1, 1]) = aten.adaptive_max_pool3d.default(%x, [1, 1, 1])\n"
        "%pv: f32[2, 8, 1, 1, 1] = getitem(%p, 0)\n"
        "%q: (f32[1, 2, 1, 1], i64[1, 2, 1, 1]) = aten.adaptive_max_pool2d.default(%y, [1, 1])\n"
        "%qv: f32[1, 2, 1, 1] = getitem(%q, 0)\noutput %pv, %qv\n");
}

/* A transposed convolution (kernel 9x7, stride 5, padding 3x1, dilation
 * 1x3) whose row kernel has a block of RK_SPAN_BLOCK rows taking no
 * spans: its merge added an offset to the block spans' array before any
 * was made (NULL; UBSan: "applying zero offset to null pointer",
 * be_rows.c rk_merge_rows, on the 32-core chip; SPYRE_SANITIZE build).
 * It runs natively and validates on both chips. */
static void test_a_transposed_conv_with_a_block_of_rows_without_spans_validates(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph convt_blocks\n"
        "input %x: f32[1, 2, 10, 6]\ninput %w: f32[2, 3, 9, 7]\ninput %b: f32[3]\n"
        "%y: f32[1, 3, 48, 42] = aten.convolution.default(%x, %w, %b, [5, 5], [3, 1], [1, 3], True, [0, 0], 1)\n"
        "output %y\n");
}

/* A kernel a multiple of its stride (FCN's 2x ConvTranspose2d(4, s2, p1),
 * 8x (16, s8, p4) and 16x (32, s16, p8), DCGAN's 4x4 s2, a 1-D k8 s4) is
 * one 1x1 convolution of J.. s.. Cout channels and J.. shifted sums
 * (dec_convt.c, phases_as_sums).  The 16x one was refused by the back half
 * as 256 phase convolutions ("more than 64 nodes in one kernel"), the 8x
 * ran 320,184 cycles; with output_padding past the padding (the sums
 * padded beyond (in - 1) s + K), uneven strides, bias and batch 2, and
 * kernels of 5 and 3 over strides 3 and 2, of 8 over 3 (padded with zero
 * taps), every output runs natively and validates on both chips. */
static void test_a_transposed_conv_kernel_a_multiple_of_its_stride_runs_as_sums(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph convt_sums\n"
        "input %x: f32[1, 5, 4, 4]\ninput %w16: f32[5, 5, 16, 16]\ninput %w32: f32[5, 5, 32, 32]\n"
        "input %x2: f32[2, 3, 3, 5]\ninput %w4: f32[3, 6, 8, 4]\ninput %b6: f32[6]\n"
        "input %x1: f32[2, 4, 6]\ninput %w1: f32[4, 3, 8]\ninput %b3: f32[3]\n"
        "%u8: f32[1, 5, 32, 32] = aten.convolution.default(%x, %w16, None, [8, 8], [4, 4], [1, 1], True, [0, 0], 1)\n"
        "%u16: f32[1, 5, 64, 64] = aten.convolution.default(%x, %w32, None, [16, 16], [8, 8], [1, 1], True, [0, 0], 1)\n"
        "%v: f32[2, 6, 17, 13] = aten.convolution.default(%x2, %w4, %b6, [4, 2], [1, 0], [1, 1], True, [3, 1], 1)\n"
        "%a: f32[2, 3, 24] = aten.convolution.default(%x1, %w1, %b3, [4], [2], [1], True, [0], 1)\n"
        "%o: f32[2, 3, 31] = aten.convolution.default(%x1, %w1, %b3, [4], [0], [1], True, [3], 1)\n"
        "input %w5: f32[5, 4, 5, 3]\n"
        "%k5: f32[1, 4, 14, 8] = aten.convolution.default(%x, %w5, None, [3, 2], [1, 1], [1, 1], True, [2, 1], 1)\n"
        "%k3: f32[2, 3, 22] = aten.convolution.default(%x1, %w1, %b3, [3], [1], [1], True, [1], 1)\n"
        "output %u8, %u16, %v, %a, %o, %k5, %k3\n");
}

/* A long last axis was interleaved by one 0/1 matrix of (s Q) x OUT: a 1-D
 * stride-4 one to 4,096 outputs read 33.5 MB of it, 354,446 cycles against
 * the host's 27,266.  Now by blocks of a stick (dec_convt.c, CT_BLOCK):
 * 20,801.  1-D outputs of 1,024 (kernel a multiple of the stride) and 383
 * (cut from 384: output_padding), and a 2-D one 256 wide, validate. */
static void test_a_long_transposed_conv_interleaves_by_blocks(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph convt_long\n"
        "input %x: f32[1, 4, 256]\ninput %w: f32[4, 4, 8]\ninput %b: f32[4]\n"
        "input %x3: f32[1, 3, 128]\ninput %w3: f32[3, 2, 5]\n"
        "input %x2: f32[1, 2, 3, 128]\ninput %w2: f32[2, 3, 3, 3]\n"
        "%l: f32[1, 4, 1024] = aten.convolution.default(%x, %w, %b, [4], [2], [1], True, [0], 1)\n"
        "%m: f32[1, 2, 383] = aten.convolution.default(%x3, %w3, None, [3], [2], [1], True, [1], 1)\n"
        "%n: f32[1, 3, 6, 256] = aten.convolution.default(%x2, %w2, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)\n"
        "output %l, %m, %n\n");
}

/* A grouped convolution's product has the groups as its batch, their
 * output channels side by side in one stick (2 groups of 8 of 16): the
 * work division split the batch over cores, and each would write half a
 * stick ("core 0 writes 8 of the 16 elements of a stick"), so a grouped
 * Conv2d on 7x7 and a user's grouped ConvTranspose2d ran on the host.  A
 * batch split is now taken only where every core's part starts a stick
 * (be_matmul.c, mm_batch_whole): both run natively and validate. */
static void test_a_grouped_conv_sharing_a_stick_is_not_split_by_group(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph gconv\n"
        "input %x: f32[1, 8, 7, 7]\ninput %w: f32[16, 4, 2, 2]\ninput %w3: f32[16, 4, 3, 3]\n"
        "input %x6: f32[1, 8, 6, 6]\ninput %wt: f32[8, 8, 3, 3]\ninput %bt: f32[16]\n"
        "%y: f32[1, 16, 6, 6] = aten.convolution.default(%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2)\n"
        "%y3: f32[1, 16, 5, 5] = aten.convolution.default(%x, %w3, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2)\n"
        "%t: f32[1, 16, 12, 12] = aten.convolution.default(%x6, %wt, %bt, [2, 2], [1, 1], [1, 1], True, [1, 1], 2)\n"
        "output %y, %y3, %t\n");
}

/* mv's 250 results stored as [5, 5, 10] (OpInfo matmul#12, #13: a
 * reshaped mv): a split of its 4 sticks of columns over 2 cores began
 * core 1's part at 128, 8 elements into a row of 10, and core 0 wrote 8
 * of that stick's 10.  Column splits whose parts begin mid-stick are
 * skipped, as the rows' and the batch's are. */
static void test_an_mv_stored_in_short_rows_is_not_split_mid_stick(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph mvrows\n"
        "input %a: f32[5, 5, 10, 10]\ninput %v: f32[10]\n"
        "input %b: f32[5, 5, 10, 5]\ninput %u: f32[10]\n"
        "%r: f32[250, 10] = aten._reshape_alias.default(%a, [250, 10], [10, 1])\n"
        "%mv: f32[250] = aten.mv.default(%r, %v)\n"
        "%y: f32[5, 5, 10] = aten._unsafe_view.default(%mv, [5, 5, 10])\n"
        "%t: f32[5, 5, 5, 10] = aten.transpose.int(%b, -2, -1)\n"
        "%c: f32[5, 5, 5, 10] = aten.clone.default(%t, memory_format=\"contiguous_format\")\n"
        "%uv: f32[125, 10] = aten._unsafe_view.default(%c, [125, 10])\n"
        "%mv2: f32[125] = aten.mv.default(%uv, %u)\n"
        "%y2: f32[5, 5, 5] = aten._unsafe_view.default(%mv2, [5, 5, 5])\n"
        "output %y, %y2\n");
}

/* A kernel one tap wide taking the im2col copy (few channels, or rows of
 * whole sticks) read its weight as though folded by rows of taps, which
 * only a wider kernel copies (conv_weight_rows): a use before any write
 * (an assertion in deps) or, with 64 channels, a wrong weight.  A phase of
 * a transposed convolution found it. */
static void test_a_conv_one_tap_wide_through_im2col_runs_natively(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph k21\n"
        "input %x: f32[1, 3, 6, 5]\ninput %w: f32[4, 3, 2, 1]\n"
        "input %x2: f32[1, 64, 6, 5]\ninput %w2: f32[4, 64, 2, 1]\n"
        "%y: f32[1, 4, 5, 5] = aten.convolution.default(%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "%y2: f32[1, 4, 3, 5] = aten.convolution.default(%x2, %w2, None, [2, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "output %y, %y2\n");
}

/* A 2-D transposed convolution of stride 9 x 9 has 81 phases, one tap each:
 * its weight fits the union's bound, and the union's stack of phase
 * weights held 64 (a stack overflow, AddressSanitizer's report).  It is
 * computed right (one convolution a phase, or the host's). */
static void test_a_transposed_conv_of_81_phases_validates(void)
{
    expect_text_validates_on_both_chips(
        "graph ct81\n"
        "input %x: f32[1, 1, 2, 2]\ninput %w: f32[1, 1, 9, 9]\n"
        "%y: f32[1, 1, 19, 19] = aten.convolution.default(%x, %w, None, [9, 9], [0, 0], [1, 1], True, [1, 1], 1)\n"
        "output %y\n");
}

/* A transposed convolution's output extent is the arguments' (PyTorch's
 * (in - 1) s - 2 p + d (k - 1) + output_padding + 1): it was read from the
 * declared type, so a declared 9 x 9 where the op makes 8 x 8 ran with a
 * row and a column of bias alone.  It is the graph's mistake, said as for
 * any op; an output_padding of stride or more is not lowered (the host
 * refuses it, as PyTorch). */
static void test_a_transposed_conv_declared_with_another_extent_is_refused(void)
{
    char err[512];
    compile_error("graph ctd\ninput %x: f32[1, 2, 4, 4]\ninput %w: f32[2, 3, 3, 3]\n"
                  "%y: f32[1, 3, 9, 9] = aten.convolution.default(%x, %w, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)\n"
                  "output %y\n",
                  "spyre", err, sizeof err);
    TU_ASSERT_CONTAINS(err, "%y is declared f32[1, 3, 9, 9] but the op produces f32[1, 3, 8, 8]");
    compile_error("graph cto\ninput %x: f32[1, 2, 4, 4]\ninput %w: f32[2, 3, 3, 3]\n"
                  "%y: f32[1, 3, 10, 10] = aten.convolution.default(%x, %w, None, [2, 2], [1, 1], [1, 1], True, [3, 3], 1)\n"
                  "output %y\n",
                  "spyre", err, sizeof err);
    TU_ASSERT_CONTAINS(err, "output_padding below stride or dilation");
}

/* A pixel_shuffle factor whose square overflows 64 bits (2^32) divided by
 * the wrapped square, 0 (SIGFPE; undefined behaviour in any case): the
 * decomposition refuses it as a shape the factor does not divide. */
static void test_a_pixel_shuffle_factor_squared_past_64_bits_is_refused(void)
{
    char err[512];
    compile_error("graph ps\ninput %e: f32[1, 4, 2, 2]\n"
                  "%d: f32[1, 1, 4, 4] = aten.pixel_shuffle.default(%e, 4294967296)\noutput %d\n",
                  "spyre", err, sizeof err);
    TU_ASSERT_CONTAINS(err, "the shape does not divide by the factor 4294967296");
}

/* torchvision's ResNet-50 ran a layer4 conv on the host: a stride-2 3x3
 * conv of 512 channels took the im2col copy, whose zeros past kw*C were
 * told by an index up to 1535, not exact in DL16 ("index values from 0 to
 * 1535").  Rows of whole sticks (3 x 384) need no zeros and no index; rows
 * padded past 1024 (3 x 352 -> 1088) take the per-row products instead.
 * Both run natively and validate on both chips. */
static void test_a_wide_strided_conv_runs_natively_whatever_its_row_of_taps(void)
{
    for (int i = 0; i < 2; i++) {
        char text[600];
        int cin = i ? 352 : 384;
        snprintf(text, sizeof text,
                 "graph wide\n"
                 "input %%x: f32[1, %d, 6, 6]\n"
                 "input %%w: f32[16, %d, 3, 3]\n"
                 "%%y: f32[1, 16, 3, 3] = aten.convolution.default(%%x, %%w, None, [2, 2], [1, 1], [1, 1], False, "
                 "[0, 0], 1)\n"
                 "output %%y\n",
                 cin, cin);
        expect_text_runs_natively_and_validates_on_both_chips(text);
    }
}

/* torchvision's ConvNeXt and Swin ran an as_strided on the host: the
 * global pool's mean seen as [1, 768, 1, 1] with strides [768, 1, 768,
 * 768].  Over a fresh tensor's own storage, a permuted row-major layout
 * from offset 0 is a reshape and a permute, natively (here also a
 * transposition); the reference reads the storage itself. */
static void test_as_strided_of_a_fresh_tensor_is_a_reshape_and_permute(void)
{
    const char *text = "graph ast\n"
                       "input %x: f32[2, 3, 4]\n"
                       "%m: f32[2, 3, 1] = aten.mean.dim(%x, [-1], True)\n"
                       "%a: f32[2, 3, 1, 1] = aten.as_strided.default(%m, [2, 3, 1, 1], [3, 1, 3, 3])\n"
                       "%r: f32[2, 3] = aten.sum.dim_IntList(%x, [-1])\n"
                       "%b: f32[3, 2] = aten.as_strided.default(%r, [3, 2], [1, 3])\n"
                       "output %a, %b\n";
    expect_text_runs_natively_and_validates_on_both_chips(text);
}

/* A cat along more than 1024 elements (Swin's patch merging: 4 x 384
 * channels) was refused ("index values from 0 to 1535 are not exact in
 * DL16") and ran on the host: its conditions compare the index with the
 * pieces' starts.  i < k is now computed as (i - k) < 0, exact in sign
 * however large i is; shorter indices keep the shared index itself. */
/* A decode step's grouped-query attention as Llama exports it: each KV
 * head's cache and new row are catted, expanded to its 4 query heads and
 * cloned contiguous (repeat_kv), then read by the products of one row. */
static const char *gqa_decode_graph =
    "graph gqa_decode\n"
    "input %q: f32[1, 8, 1, 64]\n"
    "input %k_new: f32[1, 2, 1, 64]\n"
    "input %v_new: f32[1, 2, 1, 64]\n"
    "input %k_cache: f32[1, 2, 63, 64]\n"
    "input %v_cache: f32[1, 2, 63, 64]\n"
    "%kc: f32[1, 2, 64, 64] = aten.cat.default([%k_cache, %k_new], 2)\n"
    "%ku: f32[1, 2, 1, 64, 64] = aten.unsqueeze.default(%kc, 2)\n"
    "%ke: f32[1, 2, 4, 64, 64] = aten.expand.default(%ku, [1, 2, 4, 64, 64])\n"
    "%kcl: f32[1, 2, 4, 64, 64] = aten.clone.default(%ke, memory_format=\"contiguous_format\")\n"
    "%kv: f32[1, 8, 64, 64] = aten._unsafe_view.default(%kcl, [1, 8, 64, 64])\n"
    "%vc: f32[1, 2, 64, 64] = aten.cat.default([%v_cache, %v_new], 2)\n"
    "%vu: f32[1, 2, 1, 64, 64] = aten.unsqueeze.default(%vc, 2)\n"
    "%ve: f32[1, 2, 4, 64, 64] = aten.expand.default(%vu, [1, 2, 4, 64, 64])\n"
    "%vcl: f32[1, 2, 4, 64, 64] = aten.clone.default(%ve, memory_format=\"contiguous_format\")\n"
    "%vv: f32[1, 8, 64, 64] = aten._unsafe_view.default(%vcl, [1, 8, 64, 64])\n"
    "%kt: f32[1, 8, 64, 64] = aten.transpose.int(%kv, 2, 3)\n"
    "%qr: f32[8, 1, 64] = aten._reshape_alias.default(%q, [8, 1, 64], [64, 64, 1])\n"
    "%kte: f32[1, 8, 64, 64] = aten.expand.default(%kt, [1, 8, 64, 64])\n"
    "%kr: f32[8, 64, 64] = aten._reshape_alias.default(%kte, [8, 64, 64], [4096, 1, 64])\n"
    "%s: f32[8, 1, 64] = aten.bmm.default(%qr, %kr)\n"
    "%sv: f32[1, 8, 1, 64] = aten._unsafe_view.default(%s, [1, 8, 1, 64])\n"
    "%p: f32[1, 8, 1, 64] = aten._softmax.default(%sv, -1, False)\n"
    "%pr: f32[8, 1, 64] = aten._reshape_alias.default(%p, [8, 1, 64], [64, 64, 1])\n"
    "%vr: f32[8, 64, 64] = aten._reshape_alias.default(%vv, [8, 64, 64], [4096, 64, 1])\n"
    "%o: f32[8, 1, 64] = aten.bmm.default(%pr, %vr)\n"
    "output %o\n";

/* The products read each KV head through the expand's broadcast: the
 * values match the reference on both chips, and the program writes to
 * DRAM less than the two repeat_kv copies alone would take (8 heads x
 * 64 x 64 elements of 2 bytes each, 131,072 bytes; the lowering that
 * copied them wrote 134,144 bytes, this one the two cats' 32,768 and the
 * small results).  Each cat reads its new row once per chunk, not once
 * per cache row: the program reads the caches, the new rows and q once
 * and the cats once more, about 67 KB (69,376 bytes; 101,120 when each
 * cat row read the new row's stick again, 395,264 with the copies). */
/* A graph's report on cfgname (NULL if it does not compile). */
static char *report_of(const char *text, const char *cfgname)
{
    char err[1024];
    gr_graph *g = gr_graph_parse(text, "test.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    chip_config cfg;
    cc_result *r = compile_for(g, cfgname, &cfg, err, sizeof err);
    gr_graph_free(g);
    if (!r)
        return NULL;
    char *rep = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&rep, &len);
    cc_compile_report(r, f);
    fclose(f);
    cc_result_free(r);
    return rep;
}

/* A mask added to every head's scores, and rotary-style tables multiplied
 * into every head: each core's part is whole heads, so every core reads
 * the same rows of the mask or tables.  On spyre (32 and 16 cores) they
 * are held whole in LX, each core loading a share and sending it to the
 * others over the ring: the DRAM reads are the scores or q once and the
 * mask or tables once (fp16 in DRAM), against once per core before
 * (4,194,304 + 32 x 131,072 and 819,200 + 16 x 2 x 51,200 bytes).  On
 * spyre-4core a part is several heads, more than LX holds whole, so they
 * are read per chunk as before.  Both validate on both chips (the
 * simulator's race checker on: the ring's writes into another core's LX
 * are ordered by its tokens). */
static void test_a_table_every_core_reads_alike_is_read_once_and_shared_over_the_ring(void)
{
    static const char *mask_graph = "graph shared_mask\n"
                                    "input %s: f32[1, 32, 128, 512]\n"
                                    "input %m: f32[128, 512]\n"
                                    "%a: f32[1, 32, 128, 512] = aten.add.Tensor(%s, %m)\n"
                                    "%y: f32[1, 32, 128, 512] = aten._softmax.default(%a, -1, False)\n"
                                    "output %y\n";
    static const char *table_graph = "graph shared_tables\n"
                                     "input %q: f32[1, 16, 200, 128]\n"
                                     "input %c: f32[200, 128]\n"
                                     "input %n: f32[200, 128]\n"
                                     "%a: f32[1, 16, 200, 128] = aten.mul.Tensor(%q, %c)\n"
                                     "%b: f32[1, 16, 200, 128] = aten.mul.Tensor(%q, %n)\n"
                                     "%y: f32[1, 16, 200, 128] = aten.add.Tensor(%a, %b)\n"
                                     "output %y\n";
    static const struct {
        const char **text;
        const char *tiles;
        uint64_t read;
    } cases[] = {
        {&mask_graph, "two slots; held whole and shared over the ring: m\n", 4194304 + 131072},
        {&table_graph, "two slots; held whole and shared over the ring: c, n\n", 819200 + 2 * 51200},
    };
    char err[512];
    for (int i = 0; i < 2; i++) {
        char *rep = report_of(*cases[i].text, "spyre");
        CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
        TU_ASSERT_CONTAINS(rep, cases[i].tiles);
        free(rep);
        rep = report_of(*cases[i].text, "spyre-4core");
        CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
        CU_ASSERT_PTR_NULL(strstr(rep, "shared over the ring"));
        free(rep);
        gr_graph *g = gr_graph_parse(*cases[i].text, "test.txt", err, sizeof err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        sim_stats st;
        CU_ASSERT_EQUAL(run_graph(g, "spyre", NULL, NULL, &st), 0);
        CU_ASSERT_EQUAL(st.dram_bytes_read, cases[i].read);
        CU_ASSERT_EQUAL(run_graph(g, "spyre-4core", NULL, NULL, NULL), 0);
        gr_graph_free(g);
    }
    /* every share sent is awaited by its destination inside the kernel, so
     * the kernels after it on the same rows need only a fence */
    static const char *after_graph = "graph shared_then_fenced\n"
                                     "input %x: f32[1, 32, 128, 512]\n"
                                     "input %m: f32[128, 512]\n"
                                     "%s: f32[1, 32, 128, 512] = aten.exp.default(%x)\n"
                                     "%a: f32[1, 32, 128, 512] = aten.add.Tensor(%s, %m)\n"
                                     "%y: f32[1, 32, 128, 512] = aten._softmax.default(%a, -1, False)\n"
                                     "%z: f32[1, 32, 128, 512] = aten._softmax.default(%y, -2, False)\n"
                                     "output %z\n";
    char *rep = report_of(after_graph, "spyre");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
    TU_ASSERT_CONTAINS(rep, "shared over the ring: m\n", "\nboundaries: 0 bars, 4 fences\n");
    free(rep);
    expect_text_validates_on_both_chips(after_graph);
}

static void test_gqa_decode_reads_kv_heads_through_the_broadcast(void)
{
    char err[512];
    gr_graph *g = gr_graph_parse(gqa_decode_graph, "gqa.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    sim_stats st;
    CU_ASSERT_EQUAL(run_graph(g, "spyre", NULL, NULL, &st), 0);
    CU_ASSERT(st.dram_bytes_written < 2 * 8 * 64 * 64 * 2);
    CU_ASSERT(st.dram_bytes_read < 80000);
    CU_ASSERT_EQUAL(run_graph(g, "spyre-4core", NULL, NULL, NULL), 0);
    gr_graph_free(g);
}

static void test_a_cat_along_1536_columns_runs_natively(void)
{
    const char *text = "graph cat1536\n"
                       "input %a: f32[4, 768]\n"
                       "input %b: f32[4, 384]\n"
                       "input %c: f32[4, 384]\n"
                       "%x: f32[4, 1536] = aten.cat.default([%a, %b, %c], -1)\n"
                       "%y: f32[4, 1536] = aten.relu.default(%x)\n"
                       "output %y\n";
    expect_text_runs_natively_and_validates_on_both_chips(text);
}

/* torchvision's Swin block aborted the compiler (an assert in reshape_to):
 * its attention adds a bias gathered from a table (index, permute, clone)
 * to the scores, and the softmax's result, reshaped for the product with
 * the values, was flattened in place though its view was not its whole
 * base in row-major order.  Such a view is now copied, then reshaped. */
static void test_a_swin_attention_with_a_gathered_bias_compiles_and_validates(void)
{
    const char *text = "graph swin_bias\n"
                       "input %s: f32[4, 2, 9, 9]\n"
                       "input %tab: f32[25, 2]\n"
                       "input %idx: i64[81]\n"
                       "input %v: f32[8, 9, 8]\n"
                       "%index: f32[81, 2] = aten.index.Tensor(%tab, [%idx])\n"
                       "%view: f32[9, 9, 2] = aten.view.default(%index, [9, 9, -1])\n"
                       "%permute: f32[2, 9, 9] = aten.permute.default(%view, [2, 0, 1])\n"
                       "%clone: f32[2, 9, 9] = aten.clone.default(%permute, memory_format=\"contiguous_format\")\n"
                       "%unsqueeze: f32[1, 2, 9, 9] = aten.unsqueeze.default(%clone, 0)\n"
                       "%add: f32[4, 2, 9, 9] = aten.add.Tensor(%s, %unsqueeze)\n"
                       "%sm: f32[4, 2, 9, 9] = aten._softmax.default(%add, -1, False)\n"
                       "%e: f32[4, 2, 9, 9] = aten.expand.default(%sm, [4, 2, 9, 9])\n"
                       "%r: f32[8, 9, 9] = aten._reshape_alias.default(%e, [8, 9, 9], [81, 9, 1])\n"
                       "%o: f32[8, 9, 8] = aten.bmm.default(%r, %v)\n"
                       "output %o\n";
    expect_text_runs_natively_and_validates_on_both_chips(text);
}

/* A 1x1 conv over 768 channels read across their sticks (a cat of NCHW
 * values) needs 199,680 bytes of LX a row of its channels-last copy on
 * spyre-4core, more than a core has: it runs as K blocks of 256 channels
 * (the middle block straddling the cat's pieces), each a copy and a
 * product, summed (DeepLab's ASPP projection, 1,280 channels, ran on the
 * host). */
static void test_a_conv_whose_channel_row_misses_lx_runs_in_k_blocks(void)
{
    const char *text = "graph kblocks\n"
                       "input %a: f32[1, 384, 4, 4]\n"
                       "input %b: f32[1, 384, 4, 4]\n"
                       "input %w: f32[32, 768, 1, 1]\n"
                       "input %bias: f32[32]\n"
                       "%r: f32[1, 384, 4, 4] = aten.relu.default(%a)\n"
                       "%x: f32[1, 768, 4, 4] = aten.cat.default([%r, %b], 1)\n"
                       "%y: f32[1, 32, 4, 4] = aten.convolution.default(%x, %w, %bias, [1, 1], [0, 0], [1, 1], False, "
                       "[0, 0], 1)\n"
                       "output %y\n";
    char *report = NULL;
    isa_program_free(compile_reroll(text, "spyre-4core", 0, &report));
    TU_ASSERT_CONTAINS(report, "matmul [16, 32 | 256]");
    free(report);
    expect_text_runs_natively_and_validates_on_both_chips(text);
    /* a padded, dilated 3x3 (a tap a product): every block's taps */
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph kblocks_taps\n"
        "input %a: f32[1, 700, 6, 5]\n"
        "input %w: f32[16, 700, 3, 3]\n"
        "input %bias: f32[16]\n"
        "%y: f32[1, 16, 6, 5] = aten.convolution.default(%a, %w, %bias, [1, 1], [2, 2], [2, 2], False, [0, 0], 1)\n"
        "output %y\n");
}

/* MobileViT's fold (a clone stored 2 elements a stick) copied rows-first
 * for a 1x1 conv: chunks of 16 rows fit LX, of 9 to 24 others not (they
 * straddle the channels' wrap), so the chunk search tries powers of two
 * past its bisection's 4 rows (46,825 -> 15,716 cycles on spyre-4core). */
static void test_a_staged_copy_takes_the_largest_chunk_that_fits_and_validates(void)
{
    const char *text = "graph fold\n"
                       "input %a: f32[4, 16, 32]\n"
                       "input %w: f32[16, 32, 1, 1]\n"
                       "%r: f32[4, 16, 32] = aten.relu.default(%a)\n"
                       "%ra: f32[1, 2, 2, 4, 4, 32] = aten._reshape_alias.default(%r, [1, 2, 2, 4, 4, 32], "
                       "[2048, 1024, 512, 128, 32, 1])\n"
                       "%p: f32[1, 32, 4, 2, 4, 2] = aten.permute.default(%ra, [0, 5, 3, 1, 4, 2])\n"
                       "%c: f32[1, 32, 4, 2, 4, 2] = aten.clone.default(%p, memory_format=\"contiguous_format\")\n"
                       "%u: f32[1, 32, 8, 8] = aten._unsafe_view.default(%c, [1, 32, 8, 8])\n"
                       "%y: f32[1, 16, 8, 8] = aten.convolution.default(%u, %w, None, [1, 1], [0, 0], [1, 1], False, "
                       "[0, 0], 1)\n"
                       "output %y\n";
    char *report = NULL;
    isa_program_free(compile_reroll(text, "spyre-4core", 0, &report));
    TU_ASSERT_CONTAINS(report, "core part 256 rows in chunks of 16 rows x 1 sticks (8 columns)");
    free(report);
    expect_text_runs_natively_and_validates_on_both_chips(text);
}

/* A dense layer at 1x1 pixels (DenseNet's last block): BN and ReLU over a
 * cat of NCHW [1, C, 1, 1] values into a 1x1 conv of 640 channels.  Each
 * channel is a row of its own, so the channels-last copy stages a stick per
 * channel though its stride is one (197,120 bytes of LX a row on
 * spyre-4core, more than a core has): it runs as K blocks. */
static void test_a_dense_layer_at_one_pixel_runs_in_k_blocks(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph dense_1x1\n"
        "input %a: f32[1, 512, 1, 1]\n"
        "input %b0: f32[1, 32, 1, 1]\n"
        "input %b1: f32[1, 32, 1, 1]\n"
        "input %b2: f32[1, 32, 1, 1]\n"
        "input %b3: f32[1, 32, 1, 1]\n"
        "input %g: f32[640]\n"
        "input %be: f32[640]\n"
        "input %m: f32[640]\n"
        "input %v: f32[640]\n"
        "input %w: f32[64, 640, 1, 1]\n"
        "%ve: f32[640] = aten.exp.default(%v)\n"
        "%x: f32[1, 640, 1, 1] = aten.cat.default([%a, %b0, %b1, %b2, %b3], 1)\n"
        "%bn: (f32[1, 640, 1, 1], f32[0], f32[0]) = aten.native_batch_norm.default(%x, %g, %be, %m, %ve, False, 0.1, "
        "1e-05)\n"
        "%bn0: f32[1, 640, 1, 1] = getitem(%bn, 0)\n"
        "%r: f32[1, 640, 1, 1] = aten.relu.default(%bn0)\n"
        "%y: f32[1, 64, 1, 1] = aten.convolution.default(%r, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "output %y\n");
}

/* densenet121's block 3 cat (a 256-channel piece and 18 of 32 at 2x2)
 * into a 1x1 conv: on spyre-4core a tile per piece at full width and a
 * condition cell per where of the chain left no row room (216,320 bytes
 * of LX a row), so the cat ran on the host; its tiles narrowed to each
 * piece's columns it runs on the device and validates.  The conv's K-block
 * copies, fused horizontally, need 399,104 bytes a row, each alone fits:
 * the refused fusion is undone (IR_SRC_ALONE), and no op goes to the host. */
static void test_a_cat_of_many_pieces_narrows_its_tiles_and_validates(void)
{
    char text[4096];
    int n = snprintf(text, sizeof text, "graph dense_cat19\ninput %%a: f32[1, 256, 2, 2]\n");
    for (int i = 0; i < 18; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "input %%b%d: f32[1, 32, 2, 2]\n", i);
    n += snprintf(text + n, sizeof text - (size_t)n,
                  "input %%w: f32[128, 832, 1, 1]\n%%x: f32[1, 832, 2, 2] = aten.cat.default([%%a");
    for (int i = 0; i < 18; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, ", %%b%d", i);
    snprintf(text + n, sizeof text - (size_t)n,
             "], 1)\n%%r: f32[1, 832, 2, 2] = aten.relu.default(%%x)\n"
             "%%y: f32[1, 128, 2, 2] = aten.convolution.default(%%r, %%w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
             "output %%y\n");
    char err[512];
    compile_error(text, "spyre-4core", err, sizeof err);
    CU_ASSERT_PTR_NULL(strstr(err, "832 columns"));
    char *report = NULL;
    isa_program_free(compile_reroll(text, "spyre-4core", 0, &report));
    TU_ASSERT_CONTAINS(report, "k3_relu_convolution: pointwise [4, 256]"); /* a K block's copy alone */
    free(report);
    expect_text_runs_natively_and_validates_on_both_chips(text);
}

/* Swin's bias table and index are parameters (a weight and a buffer): the
 * rows the index picks are the row gather (one DMA a row, not one-hot over
 * the table's 49 rows per element: swin 33,880 -> 18,166 cycles on spyre),
 * its [N, heads] result read permuted from its own buffer.  A negative
 * position, which PyTorch counts from the end, is uploaded wrapped (the
 * gather's DMA would fault on it: ISA_TF_WRAP).  _unsafe_view is the same
 * view as view (ir_op_attrs: IR_OP_RESHAPE). */
static void test_a_table_indexed_by_a_parameter_is_a_row_gather_and_validates_with_negative_positions(void)
{
    static const char *const views[] = {"view", "_unsafe_view"};
    float tab[50];
    int64_t rel[81];
    for (int k = 0; k < 50; k++)
        tab[k] = (float)((k * 37) % 50) / 25.0f - 1.0f;
    for (int k = 0; k < 81; k++)
        rel[k] = (k / 9 - k % 9 + 8) * 3 % 50 - 25; /* [-25, 25) */
    rt_st_entry e[2] = {{.name = "tab", .dtype = RT_ST_F32, .rank = 2, .shape = {25, 2}, .data = tab},
                        {.name = "rel", .dtype = RT_ST_I64, .rank = 2, .shape = {9, 9}, .data = rel}};
    char path[1024], err[256], text[2048];
    tu_tmpfile(".safetensors", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, e, 2, err, sizeof err), 0);
    for (int v = 0; v < 2; v++) {
        snprintf(text, sizeof text,
                 "graph swin_rows\n"
                 "weights \"%s\"\n"
                 "input %%s: f32[4, 2, 9, 9]\n"
                 "param %%tab: f32[25, 2] = \"tab\"\n"
                 "param %%rel: i64[9, 9] = \"rel\"\n"
                 "%%flat: i64[81] = aten.%s.default(%%rel, [-1])\n"
                 "%%index: f32[81, 2] = aten.index.Tensor(%%tab, [%%flat])\n"
                 "%%view: f32[9, 9, 2] = aten.view.default(%%index, [9, 9, -1])\n"
                 "%%permute: f32[2, 9, 9] = aten.permute.default(%%view, [2, 0, 1])\n"
                 "%%unsqueeze: f32[1, 2, 9, 9] = aten.unsqueeze.default(%%permute, 0)\n"
                 "%%add: f32[4, 2, 9, 9] = aten.add.Tensor(%%s, %%unsqueeze)\n"
                 "output %%add\n",
                 path, views[v]);
        char *report = NULL;
        isa_program_free(compile_reroll(text, "spyre", 0, &report));
        TU_ASSERT_CONTAINS(report, "_index: pointwise [81, 2]"); /* one-hot would reduce over the rows */
        free(report);
        expect_text_runs_natively_and_validates_on_both_chips(text);
    }
    remove(path);
}

/* The device copy of a parameter holds wrapped positions only when row
 * gathers from tables of one size are its only readers: read also as
 * values, or indexing two tables of different rows, it stays one-hot and
 * every reader sees the model's (negative) positions. */
static void test_a_parameter_read_beside_its_row_gather_keeps_its_values_on_both_chips(void)
{
    float t1[50], t2[20];
    int64_t idx[8] = {-3, 0, 4, -1, 7, -8, 2, 9};
    for (int k = 0; k < 50; k++)
        t1[k] = (float)((k * 37) % 50) / 25.0f - 1.0f;
    for (int k = 0; k < 20; k++)
        t2[k] = (float)((k * 7) % 20) / 10.0f - 1.0f;
    rt_st_entry e[3] = {{.name = "t1", .dtype = RT_ST_F32, .rank = 2, .shape = {25, 2}, .data = t1},
                        {.name = "t2", .dtype = RT_ST_F32, .rank = 2, .shape = {10, 2}, .data = t2},
                        {.name = "idx", .dtype = RT_ST_I64, .rank = 1, .shape = {8}, .data = idx}};
    char path[1024], err[256], text[2048];
    tu_tmpfile(".safetensors", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, e, 3, err, sizeof err), 0);
    const char *readers[] = {
        "%f: f32[8] = aten._to_copy.default(%idx, dtype=f32)\n"
        "%u: f32[8, 1] = aten.unsqueeze.default(%f, 1)\n"
        "%b: f32[8, 2] = aten.add.Tensor(%g1, %u)\n",
        "%g2: f32[8, 2] = aten.index.Tensor(%t2, [%idx])\n"
        "%b: f32[8, 2] = aten.add.Tensor(%g1, %g2)\n"};
    for (int r = 0; r < 2; r++) {
        snprintf(text, sizeof text,
                 "graph wrap_readers\n"
                 "weights \"%s\"\n"
                 "input %%x: f32[8, 2]\n"
                 "param %%t1: f32[25, 2] = \"t1\"\n"
                 "param %%t2: f32[10, 2] = \"t2\"\n"
                 "param %%idx: i64[8] = \"idx\"\n"
                 "%%g1: f32[8, 2] = aten.index.Tensor(%%t1, [%%idx])\n"
                 "%s"
                 "%%y: f32[8, 2] = aten.add.Tensor(%%b, %%x)\n"
                 "output %%y\n",
                 path, readers[r]);
        expect_text_runs_natively_and_validates_on_both_chips(text);
    }
    remove(path);
}

/* Issue 14: an uneven adaptive max pool refused its indices.  Each is the
 * first maximum of its window in row-major order (window i of an axis:
 * [floor(i in / out), ceil((i + 1) in / out))), which the test finds
 * itself in the values it reads back; an index is exact (compared equal). */
static void test_uneven_adaptive_max_pool_indices_on_both_chips(void)
{
    const char *text = "graph amp\n"
                       "input %x: f32[1, 3, 7, 5]\n"
                       "%m: (f32[1, 3, 3, 2], i64[1, 3, 3, 2]) = aten.adaptive_max_pool2d.default(%x, [3, 2])\n"
                       "%v: f32[1, 3, 3, 2] = getitem(%m, 0)\n"
                       "%i: i64[1, 3, 3, 2] = getitem(%m, 1)\n"
                       "output %v, %i\n";
    const char *names[] = {"x", "v", "i"};
    for (int c = 0; c < 2; c++) {
        float *v[3] = {0};
        int64_t n[3] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "amp.txt", both_chips[c], 3, names, v, n), 0);
        CU_ASSERT_EQUAL_FATAL(n[2], 18);
        for (int k = 0; k < 18; k++) {
            int ch = k / 6, oh = k / 2 % 3, ow = k % 2, best = -1;
            for (int h = oh * 7 / 3; h < ((oh + 1) * 7 + 2) / 3; h++)
                for (int w = ow * 5 / 2; w < ((ow + 1) * 5 + 1) / 2; w++)
                    if (best < 0 || v[0][ch * 35 + h * 5 + w] > v[0][ch * 35 + best])
                        best = h * 5 + w;
            CU_ASSERT_EQUAL(v[2][k], (float)best);
            CU_ASSERT_EQUAL(v[1][k], v[0][ch * 35 + best]);
        }
        for (int i = 0; i < 3; i++)
            free(v[i]);
    }
}

/* Issue 14: bilinear upsampling ran on the host.  It is now one product
 * per axis with a constant matrix of the weights, baked into the program
 * (no weights file here).  With align_corners and 4 x 5 -> 7 x 9 every
 * output sits at (oh / 2, ow / 2) of the input: the test interpolates the
 * values it reads back itself.  Tolerance: the device rounds each axis's
 * result to DL16 (9 fraction bits), two passes, each within 2^-9 of the
 * magnitudes it sums (the weights 0.5 and 1 are exact). */
static void test_bilinear_upsampling_is_a_product_per_axis_on_both_chips(void)
{
    const char *text = "graph up\n"
                       "input %x: f32[1, 2, 4, 5]\n"
                       "%y: f32[1, 2, 7, 9] = aten.upsample_bilinear2d.default(%x, [7, 9], True)\n"
                       "output %y\n";
    const char *names[] = {"x", "y"};
    for (int c = 0; c < 2; c++) {
        float *v[2] = {0};
        int64_t n[2] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "up.txt", both_chips[c], 2, names, v, n), 0);
        CU_ASSERT_EQUAL_FATAL(n[1], 2 * 7 * 9);
        double worst = 0;
        for (int k = 0; k < 2 * 7 * 9; k++) {
            int ch = k / 63, oh = k / 9 % 7, ow = k % 9, h = oh / 2, w = ow / 2;
            double fh = oh % 2 ? 0.5 : 0, fw = ow % 2 ? 0.5 : 0, want = 0, mag = 0;
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) {
                    double wt = (i ? fh : 1 - fh) * (j ? fw : 1 - fw);
                    if (wt == 0)
                        continue;
                    double x = v[0][ch * 20 + (h + i) * 5 + w + j];
                    want += wt * x;
                    mag += fabs(wt * x);
                }
            double e = fabs(v[1][k] - want) / (2 * 0x1p-9 * mag + 1e-30);
            worst = e > worst ? e : worst;
        }
        CU_ASSERT(worst <= 1.0);
        free(v[0]);
        free(v[1]);
    }
    const char *cubic = "graph upc\n"
                        "input %x: f32[2, 3, 6, 7]\n"
                        "%y: f32[2, 3, 11, 5] = aten.upsample_bicubic2d.vec(%x, [11, 5], False, None)\n"
                        "%z: f32[2, 3, 13] = aten.upsample_linear1d.default(%y.view, [13], False)\n"
                        "%y.view: f32[2, 3, 55] = aten.view.default(%y, [2, 3, 55])\n"
                        "output %y, %z\n";
    expect_text_runs_natively_and_validates_on_both_chips(cubic);
}

/* Cycles of text on cfgname (its outputs validated against the reference
 * executor). */
static double validated_text_cycles(const char *text, const char *cfgname)
{
    char err[512];
    gr_graph *g = gr_graph_parse(text, "test.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    sim_stats st;
    CU_ASSERT_EQUAL(run_graph(g, cfgname, NULL, NULL, &st), 0);
    gr_graph_free(g);
    return st.cycles;
}

/* Session 33: an autoencoder's Upsample(nearest) cost more than bilinear
 * (107,829 against 77,794 cycles): the expand along the last axis made a
 * last dim of 2, every pair of values a padded stick (512 KB written for
 * 32 KB; the NCL one here was refused, a core writing part of a stick, and
 * ran on the host).  Now that axis, as long as the tensor has as many rows,
 * is a product with a 0/1 matrix.  Nearest by 2 of NCHW and of NCL gives
 * PyTorch's y[.., h, w] = x[.., h/2, w/2], with no host op, in no more
 * cycles than bilinear.  Tolerance: the device stores results in DL16 (9
 * fraction bits; the product adds one term in fp32), so within 2^-9 of |x|. */
static void test_nearest_upsampling_by_2_gives_pytorchs_values_natively_no_slower_than_bilinear(void)
{
    const char *near = "graph up\n"
                       "input %x: f32[1, 8, 16, 16]\n"
                       "input %s: f32[4, 16, 40]\n"
                       "%y: f32[1, 8, 32, 32] = aten.upsample_nearest2d.vec(%x, None, [2.0, 2.0])\n"
                       "%z: f32[4, 16, 80] = aten.upsample_nearest1d.vec(%s, None, [2.0])\n"
                       "output %y, %z\n";
    const char *bil = "graph upb\n"
                      "input %x: f32[1, 8, 16, 16]\n"
                      "input %s: f32[4, 16, 40]\n"
                      "%y: f32[1, 8, 32, 32] = aten.upsample_bilinear2d.vec(%x, None, False, [2.0, 2.0])\n"
                      "%z: f32[4, 16, 80] = aten.upsample_linear1d.vec(%s, None, False, [2.0])\n"
                      "output %y, %z\n";
    const char *names[] = {"x", "y", "s", "z"};
    expect_text_runs_natively_and_validates_on_both_chips(near);
    for (int c = 0; c < 2; c++) {
        float *v[4] = {0};
        int64_t n[4] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(near, "up.txt", both_chips[c], 4, names, v, n), 0);
        int off = 0;
        for (int64_t k = 0; k < n[1]; k++) {
            float x = v[0][k / 1024 * 256 + k / 32 % 32 / 2 * 16 + k % 32 / 2];
            off += fabsf(v[1][k] - x) > 0x1p-9f * fabsf(x);
        }
        for (int64_t k = 0; k < n[3]; k++) {
            float x = v[2][k / 80 * 40 + k % 80 / 2];
            off += fabsf(v[3][k] - x) > 0x1p-9f * fabsf(x);
        }
        CU_ASSERT_EQUAL(off, 0);
        for (int i = 0; i < 4; i++)
            free(v[i]);
        double tn = validated_text_cycles(near, both_chips[c]), tb = validated_text_cycles(bil, both_chips[c]);
        printf("\n  %s: nearest %.0f cycles, bilinear %.0f", both_chips[c], tn, tb);
        CU_ASSERT(tn <= tb);
    }
}

/* Issue 12: mm of f32[8, 0] by f32[0, 8] divided by zero in coords_of.  A
 * matmul or a sum over K = 0 is a fill with 0 (addmm: the bias), an op
 * with no output element is no kernel and leaves an empty tensor. */
static void test_a_product_or_sum_over_no_element_gives_zeros_or_the_bias_on_both_chips(void)
{
    const char *text = "graph k0\n"
                       "input %a: f32[8, 0]\n"
                       "input %b: f32[0, 8]\n"
                       "input %bias: f32[8]\n"
                       "%mm: f32[8, 8] = aten.mm.default(%a, %b)\n"
                       "%addmm: f32[8, 8] = aten.addmm.default(%bias, %a, %b)\n"
                       "%s: f32[8] = aten.sum.dim_IntList(%a, [1])\n"
                       "%e: f32[8, 0] = aten.exp.default(%a)\n"
                       "output %mm, %addmm, %s, %e\n";
    const char *names[] = {"mm", "addmm", "s", "e", "bias"};
    for (int c = 0; c < 2; c++) {
        float *v[5] = {0};
        int64_t n[5] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "k0.txt", both_chips[c], 5, names, v, n), 0);
        CU_ASSERT_EQUAL(n[0], 64);
        CU_ASSERT_EQUAL(n[2], 8);
        CU_ASSERT_EQUAL(n[3], 0);
        int zeros = 0, bias = 0;
        for (int i = 0; i < 64; i++) {
            zeros += v[0][i] == 0.0f && (i >= 8 || v[2][i] == 0.0f);
            /* DL16 keeps 9 fraction bits */
            bias += fabsf(v[1][i] - v[4][i % 8]) <= 0x1p-9f * fabsf(v[4][i % 8]) + 1e-6f;
        }
        CU_ASSERT_EQUAL(zeros, 64);
        CU_ASSERT_EQUAL(bias, 64);
        for (int i = 0; i < 5; i++)
            free(v[i]);
    }
}

/* Issue 12: traces/mlp with every [8, made [0, divided by zero in refine;
 * F.linear of a (0, 3) batch and exp of a (0, 5) tensor likewise failed.
 * They run: no kernel, empty outputs, checked. */
static void test_graphs_with_an_empty_batch_run_to_empty_outputs_on_both_chips(void)
{
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/traces/mlp/graph.txt", SPYRE_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char mlp[4096];
    size_t len = fread(mlp, 1, sizeof mlp - 1, f);
    fclose(f);
    mlp[len] = 0;
    for (char *q = mlp; (q = strstr(q, "[8, ")); q++)
        q[1] = '0';
    const char *linear = "graph linear0\n"
                         "input %x: f32[0, 3]\n"
                         "input %w: f32[4, 3]\n"
                         "input %b: f32[4]\n"
                         "%t: f32[3, 4] = aten.t.default(%w)\n"
                         "%y: f32[0, 4] = aten.addmm.default(%b, %x, %t)\n"
                         "output %y\n";
    const char *expo = "graph exp0\ninput %x: f32[0, 5]\n%y: f32[0, 5] = aten.exp.default(%x)\noutput %y\n";
    const char *texts[] = {mlp, linear, expo}, *paths[] = {path, "linear0.txt", "exp0.txt"};
    const char *outs[] = {"addmm_1", "y", "y"};
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 3; i++) {
            float *v = NULL;
            int64_t n = -1;
            CU_ASSERT_EQUAL(run_and_read(texts[i], paths[i], both_chips[c], 1, &outs[i], &v, &n), 0);
            CU_ASSERT_EQUAL(n, 0);
            free(v);
        }
    /* no kernel is generated for them */
    gr_graph *g = gr_graph_parse(mlp, path, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_result *r = cc_compile(g, NULL, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(cc_result_nkernels(r), 0);
    cc_result_free(r);
    gr_graph_free(g);
}

/* An empty input feeding a cat with a full one, a reshape and a mean over
 * no element (NaN, as in PyTorch). */
static void test_empty_inputs_feed_cat_reshape_and_mean_on_both_chips(void)
{
    const char *text = "graph mix\n"
                       "input %a: f32[0, 16]\n"
                       "input %b: f32[3, 16]\n"
                       "%c: f32[3, 16] = aten.cat.default([%a, %b])\n"
                       "%d: f32[3, 16] = aten.exp.default(%c)\n"
                       "%r: f32[0, 4, 4] = aten.reshape.default(%a, [-1, 4, 4])\n"
                       "%m: f32[16] = aten.mean.dim(%a, [0])\n"
                       "output %d, %r, %m\n";
    const char *names[] = {"d", "b", "r", "m"};
    for (int c = 0; c < 2; c++) {
        float *v[4] = {0};
        int64_t n[4] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "mix.txt", both_chips[c], 4, names, v, n), 0);
        CU_ASSERT_EQUAL(n[0], 48);
        CU_ASSERT_EQUAL(n[2], 0);
        CU_ASSERT_EQUAL(n[3], 16);
        int ok = 0, nan = 0;
        for (int i = 0; i < 48; i++)
            ok += fabsf(v[0][i] - expf(v[1][i])) <= 0x1p-7f * expf(v[1][i]);
        for (int i = 0; i < 16; i++)
            nan += isnan(v[3][i]);
        CU_ASSERT_EQUAL(ok, 48);
        CU_ASSERT_EQUAL(nan, 16);
        for (int i = 0; i < 4; i++)
            free(v[i]);
    }
}

/* OpInfo's pad.constant#7: a constant pad of an empty input loaded the
 * input's one stick anyway (its where never picks it), a DRAM read of bytes
 * the output overwrote with no order between the two: a race fault.  The
 * pad of nothing is the value everywhere, with no load. */
static void test_a_constant_pad_of_an_empty_input_is_the_value_on_both_chips(void)
{
    const char *text = "graph pad0\n"
                       "input %x: f32[0, 3, 3]\n"
                       "%p: f32[2, 5, 5] = aten.constant_pad_nd.default(%x, [1, 1, 1, 1, 1, 1], 1.5)\n"
                       "output %p\n";
    const char *names[] = {"p"};
    for (int c = 0; c < 2; c++) {
        float *v[1] = {0};
        int64_t n[1] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "pad0.txt", both_chips[c], 1, names, v, n), 0);
        CU_ASSERT_EQUAL_FATAL(n[0], 50);
        int value = 0;
        for (int i = 0; i < 50; i++)
            value += v[0][i] == 1.5f;
        CU_ASSERT_EQUAL(value, 50);
        free(v[0]);
    }
}

/* OpInfo's mean#1: the mean over dim 0 of a 0-d tensor divided by a
 * count read past the shape (0: NaN).  A 0-d tensor's dim 0 is its one
 * element: mean, sum and amax over it give the element, and so does
 * index_select of index [0] (index_select#0: "every index is out of range
 * of an empty dimension 0"). */
static void test_reductions_over_dim_0_of_a_0d_tensor_give_the_element_on_both_chips(void)
{
    const char *text = "graph zerod\n"
                       "input %x: f32[]\n"
                       "%m: f32[] = aten.mean.dim(%x, [0], True)\n"
                       "%s: f32[] = aten.sum.dim_IntList(%x, [-1])\n"
                       "%a: f32[] = aten.amax.default(%x, [0])\n"
                       "%z: i64[1] = aten.zeros.default([1], dtype=i64)\n"
                       "%e: f32[] = aten.index_select.default(%x, 0, %z)\n"
                       "output %m, %s, %a, %e\n";
    /* index_select's result is x itself, copied to its own output tensor */
    const char *names[] = {"x", "m", "s", "a", "e"};
    for (int c = 0; c < 2; c++) {
        float *v[5] = {0};
        int64_t n[5] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "zerod.txt", both_chips[c], 5, names, v, n), 0);
        for (int i = 1; i < 5; i++) {
            CU_ASSERT_EQUAL(n[i], 1);
            /* DL16 keeps 9 fraction bits */
            CU_ASSERT(fabsf(v[i][0] - v[0][0]) <= 0x1p-9f * fabsf(v[0][0]));
        }
        for (int i = 0; i < 5; i++)
            free(v[i]);
    }
}

/* Issue 14: an identity stopped with "the graph returns one of its inputs
 * unchanged". An output that is an input is a copy named "outputN" (as
 * PyTorch's expected outputs are); a view of an input, a 0-d input and a
 * bool input (its random values made 0 and 1) likewise; the check maps
 * each to its graph output. */
static void test_outputs_that_are_inputs_or_views_of_inputs_run_and_validate_on_both_chips(void)
{
    const char *text = "graph ident\n"
                       "input %x: f32[4, 8]\n"
                       "input %s: f32[]\n"
                       "%v: f32[8, 4] = aten.t.default(%x)\n"
                       "%r: f32[32] = aten.view.default(%x, [32])\n"
                       "input %b: bool[2, 8]\n"
                       "output %x, %v, %s, %r, %b\n";
    const char *names[] = {"x", "output0", "v", "s", "output2", "r", "output4"};
    for (int c = 0; c < 2; c++) {
        float *v[7] = {0};
        int64_t n[7] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "ident.txt", both_chips[c], 7, names, v, n), 0);
        CU_ASSERT_EQUAL(n[1], 32);
        CU_ASSERT_EQUAL(n[4], 1);
        int ok = 0;
        for (int i = 0; i < 32; i++) {
            float x = isa_dl16_round(v[0][i]);
            ok += v[1][i] == x && v[5][i] == x && v[2][(i % 8) * 4 + i / 8] == x;
        }
        CU_ASSERT_EQUAL(ok, 32);
        CU_ASSERT_EQUAL(v[4][0], isa_dl16_round(v[3][0]));
        int ones = 0, bools = 0;
        for (int i = 0; i < 16; i++) {
            bools += v[6][i] == 0.0f || v[6][i] == 1.0f;
            ones += v[6][i] == 1.0f;
        }
        CU_ASSERT_EQUAL(bools, 16);
        CU_ASSERT(ones > 0 && ones < 16);
        for (int i = 0; i < 7; i++)
            free(v[i]);
    }
}

/* OpInfo's full_like#4: a constant output's bound was the larger of its
 * fp32 and DL16 roundings from the exact constant, short of the distance
 * from its fp32 value (the reference's) by an fp32 rounding: a MISMATCH at
 * worst_err_over_tol 1.0000001. A 0-d one likewise. */
static void test_a_constant_output_validates_against_its_fp32_value_on_both_chips(void)
{
    const char *text = "graph fl\n"
                       "input %x: f32[5]\n"
                       "input %s: f32[]\n"
                       "%f: f64[5] = aten.full_like.default(%x, -0.731107023705885, dtype=f64)\n"
                       "%g: f32[] = aten.full_like.default(%s, 0.1)\n"
                       "output %f, %g\n";
    for (int c = 0; c < 2; c++)
        CU_ASSERT_EQUAL(run_text(text, both_chips[c]), 0);
}

/* A mask cast to an integer (x.long(), .int()) is its 0s and 1s, and a
 * count of one over 1000 elements is exact in DL16 (every integer up to
 * 1024 is). */
static void test_bool_masks_cast_to_integers_and_counted_are_exact_on_both_chips(void)
{
    const char *text = "graph counts\n"
                       "input %x: f32[4, 1000]\n"
                       "%g: bool[4, 1000] = aten.gt.Scalar(%x, 0.0)\n"
                       "%l: i64[4, 1000] = aten._to_copy.default(%g, dtype=i64)\n"
                       "%i: i32[4, 1000] = aten._to_copy.default(%g, dtype=i32)\n"
                       "%s: i64[4] = aten.sum.dim_IntList(%g, [1])\n"
                       "output %l, %i, %s\n";
    const char *names[] = {"x", "l", "i", "s"};
    for (int c = 0; c < 2; c++) {
        float *v[4] = {0};
        int64_t n[4] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "counts.txt", both_chips[c], 4, names, v, n), 0);
        int ok = 0;
        for (int r = 0; r < 4; r++) {
            int count = 0;
            for (int k = 0; k < 1000; k++) {
                float want = v[0][r * 1000 + k] > 0;
                count += want == 1.0f;
                ok += v[1][r * 1000 + k] == want && v[2][r * 1000 + k] == want;
            }
            CU_ASSERT_EQUAL(v[3][r], (float)count);
        }
        CU_ASSERT_EQUAL(ok, 4000);
        for (int i = 0; i < 4; i++)
            free(v[i]);
    }
}

/* arange(1000) * 5 came back with 4104 for 4100 and a count over 3000
 * elements with 1504 for 1503: DL16 keeps integers only up to 1024. Such
 * integer results are refused at their graph line. */
static void test_integers_beyond_dl16s_exact_range_are_a_clear_error(void)
{
    const char *mul = "graph a\n%a: i64[1000] = aten.arange.default(1000)\n"
                      "%m: i64[1000] = aten.mul.Tensor(%a, 5)\noutput %m\n";
    const char *count = "graph b\ninput %x: f32[4, 3000]\n%g: bool[4, 3000] = aten.gt.Scalar(%x, 0.0)\n"
                        "%s: i64[4] = aten.sum.dim_IntList(%g, [1])\noutput %s\n";
    char err[1024];
    compile_error(mul, "spyre", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "test.txt:3: aten.mul.Tensor: integer values up to 4995 are not exact on the device"));
    compile_error(count, "spyre", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "test.txt:4: aten.sum.dim_IntList: integer values up to 3000 are not exact"));
}

/* An int64 0/1 mask's count of valid steps minus one (a time-series
 * model's last valid step): refused as inexact while the mask may hold
 * any integer, exact on the device once its line declares range=[0, 1],
 * refused again when the range declared is too wide for the sum. */
static void test_an_integer_inputs_declared_range_bounds_its_sum_on_both_chips(void)
{
    const char *fmt = "graph ts\ninput %%v: i64[3, 9]%s\n%%s: i64[3] = aten.sum.dim_IntList(%%v, [1])\n"
                      "%%l: i64[3] = aten.sub.Tensor(%%s, 1)\noutput %%l\n";
    char text[512], err[1024];
    snprintf(text, sizeof text, fmt, "");
    compile_error(text, "spyre", err, sizeof err);
    TU_ASSERT_CONTAINS(err, "test.txt:3: aten.sum.dim_IntList: integer values up to");
    TU_ASSERT_CONTAINS(err, "declare one (tools/export.py --int-range NAME=LO:HI)");
    snprintf(text, sizeof text, fmt, " range=[0, 5000]");
    compile_error(text, "spyre", err, sizeof err);
    TU_ASSERT_CONTAINS(err, "test.txt:3: aten.sum.dim_IntList: integer values up to 45000 are not exact");
    CU_ASSERT_PTR_NULL(strstr(err, "--int-range")); /* declared: the hint would mislead */
    snprintf(text, sizeof text, fmt, " range=[0, 1]");
    for (int c = 0; c < 2; c++) {
        const char *names[] = {"v", "l"};
        float *v[2] = {0};
        int64_t n[2] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "ts.txt", both_chips[c], 2, names, v, n), 0);
        int ones = 0;
        for (int r = 0; r < 3; r++) {
            float count = 0;
            for (int k = 0; k < 9; k++) {
                CU_ASSERT(v[0][r * 9 + k] == 0 || v[0][r * 9 + k] == 1); /* random inputs within the range */
                count += v[0][r * 9 + k];
            }
            ones += (int)count;
            CU_ASSERT_EQUAL(v[1][r], count - 1);
        }
        CU_ASSERT(ones > 0 && ones < 27);
        for (int i = 0; i < 2; i++)
            free(v[i]);
    }
}

/* RoBERTa's position ids (create_position_ids_from_input_ids): the int32
 * padding mask's cumsum along the tokens, times the mask, plus
 * padding_idx; and a cumsum along the first dim (Switch's capacity count).
 * On the device, no host op: each sum's bound (12 ones, 3 ones) is proven
 * within DL16's exact integers.  The values are PyTorch's, computed here
 * from the ids read back.  Over 2000 positions (a scan by doubling) the
 * bound is not exact: refused, naming it. */
static void test_an_integer_cumsum_of_a_mask_runs_on_the_device_within_its_proven_bound(void)
{
    const char *fmt = "graph rp\ninput %%ids: i64[3, %d] range=[0, 3]\n"
                      "%%ne: bool[3, %d] = aten.ne.Scalar(%%ids, 1)\n"
                      "%%m: i32[3, %d] = aten._to_copy.default(%%ne, dtype=i32)\n"
                      "%%cs: i64[3, %d] = aten.cumsum.default(%%m, 1)\n"
                      "%%c32: i32[3, %d] = aten._to_copy.default(%%cs, dtype=i32)\n"
                      "%%mul: i32[3, %d] = aten.mul.Tensor(%%c32, %%m)\n"
                      "%%c64: i64[3, %d] = aten._to_copy.default(%%mul, dtype=i64)\n"
                      "%%pos: i64[3, %d] = aten.add.Tensor(%%c64, 1)\n"
                      "%%down: i64[3, %d] = aten.cumsum.default(%%m, 0)\n"
                      "output %%pos, %%down\n";
    char text[1024], err[1024];
    snprintf(text, sizeof text, fmt, 12, 12, 12, 12, 12, 12, 12, 12, 12);
    compile_error(text, "spyre", err, sizeof err);
    CU_ASSERT_STRING_EQUAL(err, "");
    expect_text_validates_on_both_chips(text);
    for (int c = 0; c < 2; c++) {
        const char *names[] = {"ids", "pos", "down"};
        float *v[3] = {0};
        int64_t n[3] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "rp.txt", both_chips[c], 3, names, v, n), 0);
        int pads = 0;
        for (int r = 0; r < 3; r++)
            for (int k = 0, run = 0; k < 12; k++) {
                int m = v[0][r * 12 + k] != 1, above = 0;
                run += m;
                pads += !m;
                CU_ASSERT_EQUAL(v[1][r * 12 + k], run * m + 1);
                for (int q = 0; q <= r; q++)
                    above += v[0][q * 12 + k] != 1;
                CU_ASSERT_EQUAL(v[2][r * 12 + k], above);
            }
        CU_ASSERT(pads > 0 && pads < 36);
        for (int i = 0; i < 3; i++)
            free(v[i]);
    }
    snprintf(text, sizeof text, fmt, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000);
    compile_error(text, "spyre", err, sizeof err);
    /* the scan's bound 2048; its last add fuses with the ops after it, the first refused the ids' + 1 */
    TU_ASSERT_CONTAINS(err, "test.txt:9: aten.add.Tensor: integer values up to 2049 are not exact");
}

/* An integer cumsum of a long row (1000 positions) or along the first dim
 * is a scan by doubling, log2(n) adds: the masked sum over k <= i read n^2
 * elements per row ((64, 1000): 800640 cycles, the host's 105694; the scan
 * 45814).  On the device, and PyTorch's running sums of the inputs read back. */
static void test_an_integer_cumsum_of_long_rows_is_a_scan_on_the_device(void)
{
    const char *text = "graph lr\ninput %x: i64[8, 1000] range=[0, 1]\ninput %z: i64[40, 3, 5] range=[-9, 9]\n"
                       "%y: i64[8, 1000] = aten.cumsum.default(%x, 1)\n"
                       "%w: i64[40, 3, 5] = aten.cumsum.default(%z, 0)\n"
                       "output %y, %w\n";
    expect_text_runs_natively_and_validates_on_both_chips(text);
    for (int c = 0; c < 2; c++) {
        const char *names[] = {"x", "y", "z", "w"};
        float *v[4] = {0};
        int64_t n[4] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "lr.txt", both_chips[c], 4, names, v, n), 0);
        int bad = 0;
        for (int r = 0; r < 8; r++)
            for (int k = 0, run = 0; k < 1000; k++) {
                run += (int)v[0][r * 1000 + k];
                bad += v[1][r * 1000 + k] != run;
            }
        for (int j = 0; j < 15; j++)
            for (int i = 0, run = 0; i < 40; i++) {
                run += (int)v[2][i * 15 + j];
                bad += v[3][i * 15 + j] != run;
            }
        CU_ASSERT_EQUAL(bad, 0);
        for (int i = 0; i < 4; i++)
            free(v[i]);
    }
}

/* DeBERTa's log bucket divides by torch.log(torch.tensor(..)), a 0-d
 * weight whose value the compiler never sees, so its cast to an integer
 * cannot be tabulated: the refusal says why rather than "integer values
 * up to inf". */
static void test_an_unbounded_integer_cast_is_refused_saying_why(void)
{
    const char *text = "graph ub\ninput %c: f32[]\n"
                       "%i: i64[10] = aten.arange.default(10, dtype=i64)\n"
                       "%f: f32[10] = aten._to_copy.default(%i, dtype=f32)\n"
                       "%l: f32[] = aten.log.default(%c)\n"
                       "%d: f32[10] = aten.div.Tensor(%f, %l)\n"
                       "%k: i64[10] = aten._to_copy.default(%d, dtype=i64)\n"
                       "%a: i64[10] = aten.add.Tensor(%k, 8)\n"
                       "output %a\n";
    char err[1024];
    compile_error(text, "spyre", err, sizeof err);
    TU_ASSERT_CONTAINS(err, "integer values without a bound are not exact on the device");
    TU_ASSERT_CONTAINS(err, "a weight's values unseen");
    CU_ASSERT_PTR_NULL(strstr(err, "up to inf"));
}

/* sign of an integer (DeBERTa's relative positions): (x > 0) - (x < 0) in
 * its dtype on the device, PyTorch's values; it was refused ("the
 * compiler lowers sign only of a float tensor"). */
static void test_the_sign_of_an_integer_runs_on_the_device(void)
{
    const char *text = "graph sg\ninput %i: i64[4, 9] range=[-3, 3]\n"
                       "%s: i64[4, 9] = aten.sign.default(%i)\n"
                       "%t: i64[4, 9] = aten.mul.Tensor(%s, 5)\n"
                       "output %t\n";
    char err[1024];
    compile_error(text, "spyre", err, sizeof err);
    CU_ASSERT_STRING_EQUAL(err, "");
    for (int c = 0; c < 2; c++) {
        const char *names[] = {"i", "t"};
        float *v[2] = {0};
        int64_t n[2] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "sg.txt", both_chips[c], 2, names, v, n), 0);
        int signs[3] = {0};
        for (int k = 0; k < 36; k++) {
            const int want = (v[0][k] > 0) - (v[0][k] < 0);
            signs[want + 1]++;
            CU_ASSERT_EQUAL(v[1][k], 5 * want);
        }
        CU_ASSERT(signs[0] && signs[2]);
        for (int k = 0; k < 2; k++)
            free(v[k]);
    }
}

/* The program relies on the range, so a launch whose input leaves it is
 * refused with the input, its line and the value (never a wrong sum). */
static void test_an_input_outside_its_declared_range_is_refused_at_launch(void)
{
    const char *text = "graph ts\ninput %v: i64[3, 9] range=[0, 1]\n%s: i64[3] = aten.sum.dim_IntList(%v, [1])\n"
                       "output %s\n";
    char err[1024];
    gr_graph *g = gr_graph_parse(text, "ts.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    chip_config cfg;
    cc_result *r = compile_for(g, "spyre", &cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    rt_device *dev;
    rt_program *prog = load_on(&cfg, cc_result_take_program(r), &dev);
    cc_result_free(r);
    float v[27];
    for (int k = 0; k < 27; k++)
        v[k] = k == 4 ? 3.0f : 1.0f;
    CU_ASSERT_EQUAL(rt_set_input(prog, "v", v, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_NOT_EQUAL(rt_launch(prog, &res), 0);
    CU_ASSERT_EQUAL(res.status, RT_RUN_UNSUPPORTED);
    TU_ASSERT_CONTAINS(res.fault.msg, "input %v: the value 3 at element 4 is outside its range=[0, 1]");
    CU_ASSERT_STRING_EQUAL(rt_program_isa(prog)->tensors[res.refused].name, "v");
    v[4] = 0;
    CU_ASSERT_EQUAL(rt_set_input(prog, "v", v, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_launch(prog, &res), 0);
    rt_unload(prog);
    rt_close(dev);
    gr_graph_free(g);
}

/* Launch graph text (one input v of 64 integers, vals) and read output
 * `out` into got[n]: the launch's return code. */
static int launch_int_input(const char *text, const float *vals, const char *out, float *got, int n, char *msg)
{
    char err[1024];
    gr_graph *g = gr_graph_parse(text, "t.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    chip_config cfg;
    cc_result *r = compile_for(g, "spyre", &cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    rt_device *dev;
    rt_program *prog = load_on(&cfg, cc_result_take_program(r), &dev);
    cc_result_free(r);
    CU_ASSERT_EQUAL(rt_set_input(prog, "v", vals, err, sizeof err), 0);
    rt_run_result res;
    int rc = rt_launch(prog, &res);
    snprintf(msg, 1024, "%s", rc ? res.fault.msg : "");
    int64_t count = 0;
    const float *h = rt_host_tensor(prog, out, &count);
    for (int k = 0; !rc && h && k < n && k < count; k++)
        got[k] = h[k];
    rt_unload(prog);
    rt_close(dev);
    gr_graph_free(g);
    return rc;
}

/* A kernel reads an integer input in DL16, exact only up to 1024 (3001
 * would compare equal to 3000): with a declared range past that, its
 * readers run on the host, which gets the input exactly, as does a host
 * op reading it; undeclared, such a value is refused at launch. */
static void test_integer_inputs_past_dl16s_exact_integers_are_exact_or_refused(void)
{
    const char *eq = "graph e\ninput %%v: i64[64]%s\n%%e: bool[64] = aten.eq.Scalar(%%v, 3000)\n"
                     "%%f: f32[64] = aten.mul.Tensor(%%e, 1.0)\noutput %%f\n";
    float v[64], got[64], sum = 0;
    char text[512], msg[1024];
    for (int k = 0; k < 64; k++) {
        v[k] = k % 2 ? 3001.0f : 3000.0f;
        sum += v[k];
    }
    snprintf(text, sizeof text, eq, " range=[0, 5000]");
    CU_ASSERT_EQUAL_FATAL(launch_int_input(text, v, "f", got, 64, msg), 0);
    for (int k = 0; k < 64; k++)
        CU_ASSERT_EQUAL(got[k], v[k] == 3000.0f);
    const char *total = "graph s\ninput %v: i64[64] range=[0, 5000]\n%s: i64[] = aten.sum.default(%v)\noutput %s\n";
    CU_ASSERT_EQUAL_FATAL(launch_int_input(total, v, "s", got, 1, msg), 0);
    CU_ASSERT_EQUAL(got[0], sum); /* 192032: DL16 copies would give 192000 */
    snprintf(text, sizeof text, eq, "");
    CU_ASSERT_NOT_EQUAL(launch_int_input(text, v, "f", got, 64, msg), 0);
    TU_ASSERT_CONTAINS(msg, "input %v: the value 3000 at element 0 is past the integers the device holds exactly");
}

/* ---- 16-bit host dtypes ---- */

/* Compile text, write each input from 16-bit host data of its host dtype,
 * run, (if forge) replace output forge's values with forged[] as if read
 * back, check against the reference executor, read the outputs outs[] (n
 * elements each) into out[]. Returns the outputs not ok, -1 on a failure. */
static int run_16bit(const char *text, const char *cfgname, int nin, const char *const *ins, const uint16_t *const *in,
                     const char *forge, const uint16_t *forged, int nout, const char *const *outs, float *const *out,
                     int n)
{
    char err[1024];
    gr_graph *g = gr_graph_parse(text, "casts.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    chip_config cfg;
    tu_config(cfgname, &cfg);
    cc_compile_opts o = {0};
    o.target = &cfg;
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    if (!r)
        fprintf(stderr, "compile: %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    isa_program *p = cc_result_take_program(r);
    cc_result_free(r);
    rt_device *dev = rt_open_config(&cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    const isa_program *ip = rt_program_isa(prog);
    int bad = 0;
    for (int i = 0; i < nin && !bad; i++) {
        int ti = isa_program_find_tensor(ip, ins[i]);
        CU_ASSERT_FATAL(ti >= 0);
        bad = rt_write_tensor(prog, ins[i], in[i], ip->tensors[ti].host_dtype, err, sizeof err);
    }
    rt_run_result res;
    rt_check_result *chk = NULL;
    int nchk = 0;
    if (bad || rt_load_graph_tensors(prog, g, NULL, err, sizeof err) || rt_launch(prog, &res) ||
        (forge && rt_write_tensor(prog, forge, forged, ISA_HT_BF16, err, sizeof err)) ||
        (bad = rt_check_graph(prog, g, &chk, &nchk, err, sizeof err)) < 0)
        fprintf(stderr, "on %s: %s\n", cfgname, err), bad = -1;
    for (int i = 0; i < nchk; i++) {
        char line[512];
        rt_check_format(&chk[i], line, sizeof line);
        if (!chk[i].ok)
            fprintf(stderr, "%s\n", line);
    }
    free(chk);
    for (int i = 0; i < nout && bad == 0; i++) {
        int ti = isa_program_find_tensor(ip, outs[i]);
        CU_ASSERT_FATAL(ti >= 0 && rt_tensor_elems(&ip->tensors[ti]) == n);
        bad = rt_read_tensor(prog, outs[i], out[i], err, sizeof err);
    }
    rt_unload(prog);
    rt_close(dev);
    gr_graph_free(g);
    return bad;
}

/* torch-spyre issue 2478, measured on the chip: fp16 18.09375 cast to bf16
 * reads back as 18.0 (DL16 narrowed toward zero), where PyTorch rounds to
 * 18.125; both validate. A bf16 beyond fp16's range cast to fp16 reads back
 * as an infinity, as PyTorch's does; an fp16 subnormal is truncated. */
static void test_bf16_and_f16_outputs_are_narrowed_toward_zero_like_the_chip(void)
{
    const char *text = "graph casts\n"
                       "input %h: f16[5]\n"
                       "input %b: bf16[5]\n"
                       "%hb: bf16[5] = aten._to_copy.default(%h, dtype=bf16)\n"
                       "%bh: f16[5] = aten._to_copy.default(%b, dtype=f16)\n"
                       "%bf: f32[5] = aten._to_copy.default(%b, dtype=f32)\n"
                       "output %hb, %bh, %bf\n";
    /* fp16: 18.09375, -18.09375, 4.828125, 1, 1.005859375 (PyTorch's bf16: 1.0078125) */
    const uint16_t h[5] = {0x4c86, 0xcc86, 0x44d4, 0x3c00, 0x3c06};
    /* bf16: 70144, -70144, -1.5, 1.2293e-6 (an fp16 subnormal), 3 */
    const uint16_t b[5] = {0x4789, 0xc789, 0xbfc0, 0x35a5, 0x4040};
    const char *ins[] = {"h", "b"}, *outs[] = {"hb", "bh", "bf"};
    const uint16_t *in[] = {h, b};
    float bsub = isa_bf16_to_f32(0x35a5);
    for (int c = 0; c < 2; c++) {
        float hb[5], bh[5], bf[5], *out[] = {hb, bh, bf};
        CU_ASSERT_EQUAL_FATAL(run_16bit(text, both_chips[c], 2, ins, in, NULL, NULL, 3, outs, out, 5), 0);
        CU_ASSERT_EQUAL(hb[0], 18.0f);
        CU_ASSERT_EQUAL(hb[1], -18.0f);
        CU_ASSERT_EQUAL(hb[2], 4.8125f);
        CU_ASSERT_EQUAL(hb[3], 1.0f);
        CU_ASSERT_EQUAL(hb[4], 1.0f);
        CU_ASSERT(isinf(bh[0]) && bh[0] > 0);
        CU_ASSERT(isinf(bh[1]) && bh[1] < 0);
        CU_ASSERT_EQUAL(bh[2], -1.5f);
        CU_ASSERT_EQUAL(bh[3], floorf(bsub * 0x1p24f) * 0x1p-24f);
        CU_ASSERT_EQUAL(bh[4], 3.0f);
        CU_ASSERT_EQUAL(bf[0], 70144.0f); /* exact in DL16 */
        CU_ASSERT_EQUAL(bf[3], isa_dl16_round(bsub));
    }
    /* PyTorch's own bf16 values validate too; one unit further off fails */
    const uint16_t torch_hb[5] = {0x4191, 0xc191, 0x409a, 0x3f80, 0x3f81};
    const uint16_t wrong_hb[5] = {0x4192, 0xc191, 0x409a, 0x3f80, 0x3f81}; /* 18.25 */
    float hb[5], bh[5], bf[5], *out[] = {hb, bh, bf};
    CU_ASSERT_EQUAL(run_16bit(text, "spyre", 2, ins, in, "hb", torch_hb, 3, outs, out, 5), 0);
    CU_ASSERT_EQUAL(hb[0], 18.125f);
    CU_ASSERT_EQUAL(run_16bit(text, "spyre", 2, ins, in, "hb", wrong_hb, 3, outs, out, 5), 1);
}

/* Statistics over no element are PyTorch's: var and mean NaN, a layer
 * norm's mean 0 and rstd NaN; a sum over no element read by a later
 * kernel along a row is 0. */
static void test_statistics_over_no_element_are_pytorchs_on_both_chips(void)
{
    const char *text = "graph stats\n"
                       "input %x: f32[3, 0]\n"
                       "input %y: f32[3, 8]\n"
                       "%vm: (f32[3, 1], f32[3, 1]) = aten.var_mean.correction(%x, [1], correction=0, keepdim=True)\n"
                       "%v: f32[3, 1] = getitem(%vm, 0)\n"
                       "%m: f32[3, 1] = getitem(%vm, 1)\n"
                       "%ln: (f32[3, 0], f32[3, 1], f32[3, 1]) = aten.native_layer_norm.default(%x, [0], None, None, 1e-05)\n"
                       "%lm: f32[3, 1] = getitem(%ln, 1)\n"
                       "%lr: f32[3, 1] = getitem(%ln, 2)\n"
                       "%s: f32[3, 1] = aten.sum.dim_IntList(%x, [1], True)\n"
                       "%z: f32[3, 8] = aten.add.Tensor(%y, %s)\n"
                       "output %v, %m, %lm, %lr, %z\n";
    const char *names[] = {"v", "m", "lm", "lr", "z", "y"};
    for (int c = 0; c < 2; c++) {
        float *v[6] = {0};
        int64_t n[6] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "stats.txt", both_chips[c], 6, names, v, n), 0);
        int nan = 0, zero = 0, same = 0;
        for (int i = 0; i < 3; i++) {
            nan += isnan(v[0][i]) + isnan(v[1][i]) + isnan(v[3][i]);
            zero += v[2][i] == 0.0f;
        }
        for (int i = 0; i < 24; i++)
            same += fabsf(v[4][i] - v[5][i]) <= 0x1p-9f * fabsf(v[5][i]) + 1e-6f;
        CU_ASSERT_EQUAL(nan, 9);
        CU_ASSERT_EQUAL(zero, 3);
        CU_ASSERT_EQUAL(same, 24);
        for (int i = 0; i < 6; i++)
            free(v[i]);
    }
}

/* Issue 14: image ops as their decompositions (constant_pad_nd a where on
 * affine coordinates, pooling k*k strided slices, batch norm's running
 * statistics per row staged across lanes, group norm, mode pads and nearest
 * upsampling as slices, expands and cats; batch norm's statistics declared
 * per channel, as a trace on the meta device declares them) validate against the reference on
 * both chips; the padding is the given value exactly and max pool's indices
 * point at the maximum. */
static void test_padding_pooling_norms_and_upsampling_validate_on_both_chips(void)
{
    const char *text =
        "graph img\n"
        "input %x: f32[2, 3, 7, 9]\ninput %m: f32[3]\ninput %v: f32[3]\ninput %w: f32[3]\ninput %b: f32[3]\n"
        "%pad: f32[2, 3, 8, 12] = aten.constant_pad_nd.default(%x, [1, 2, 0, 1], 2.5)\n"
        "%va: f32[3] = aten.abs.default(%v)\n"
        "%bn: (f32[2, 3, 7, 9], f32[0], f32[0]) = aten.native_batch_norm.default(%x, %w, %b, %m, %va, False, 0.1, 1e-05)\n"
        "%y: f32[2, 3, 7, 9] = getitem(%bn, 0)\n"
        "%mp: (f32[2, 3, 4, 5], i64[2, 3, 4, 5]) = aten.max_pool2d_with_indices.default(%x, [3, 3], [2, 2], [1, 1])\n"
        "%mv: f32[2, 3, 4, 5] = getitem(%mp, 0)\n"
        "%mi: i64[2, 3, 4, 5] = getitem(%mp, 1)\n"
        "%ap: f32[2, 3, 4, 5] = aten.avg_pool2d.default(%x, [3, 3], [2, 2], [1, 1], True, False)\n"
        "%aa: f32[2, 3, 1, 3] = aten._adaptive_avg_pool2d.default(%x, [1, 3])\n"
        "%gn: (f32[2, 3, 7, 9], f32[2, 1], f32[2, 1]) = aten.native_group_norm.default(%x, %w, %b, 2, 3, 63, 1, 1e-05)\n"
        "%g: f32[2, 3, 7, 9] = getitem(%gn, 0)\n"
        "%rf: f32[2, 3, 9, 10] = aten.reflection_pad2d.default(%x, [1, 0, 1, 1])\n"
        "%rp: f32[2, 3, 7, 12] = aten.replication_pad2d.default(%x, [2, 1, 0, 0])\n"
        "%up: f32[2, 3, 14, 18] = aten.upsample_nearest2d.vec(%x, None, [2.0, 2.0])\n"
        "%odd: f32[2, 3, 5, 12] = aten.upsample_nearest2d.vec(%x, [5, 12], None)\n"
        "%au: f32[2, 3, 5, 4] = aten._adaptive_avg_pool2d.default(%x, [5, 4])\n"
        "%amx: (f32[2, 3, 5, 4], i64[2, 3, 5, 4]) = aten.adaptive_max_pool2d.default(%x, [5, 4])\n"
        "%am: f32[2, 3, 5, 4] = getitem(%amx, 0)\n"
        "%bm: (f32[2, 3, 7, 9], f32[3], f32[3]) = aten.native_batch_norm.default(%x, None, None, %m, %va, False, 0.1, 0.001)\n"
        "%bs: f32[3] = getitem(%bm, 2)\n"
        "output %pad, %y, %mv, %mi, %ap, %aa, %g, %rf, %rp, %up, %odd, %au, %am, %bs\n";
    const char *names[] = {"pad", "mv", "mi", "x"};
    for (int c = 0; c < 2; c++) {
        float *v[4] = {0};
        int64_t n[4] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "img.txt", both_chips[c], 4, names, v, n), 0);
        int border = 0, at_max = 0;
        for (int64_t i = 0; i < n[0]; i++) {
            int64_t h = i / 12 % 8, w = i % 12;
            border += (h == 7 || w == 0 || w >= 10) && v[0][i] == 2.5f;
        }
        for (int64_t i = 0; i < n[1]; i++) /* DL16 keeps 9 fraction bits */
            at_max += fabsf(v[3][i / 20 * 63 + (int64_t)v[2][i]] - v[1][i]) <= 0x1p-9f * fabsf(v[1][i]) + 1e-6f;
        CU_ASSERT_EQUAL(border, 2 * 3 * (12 + 7 * 3));
        CU_ASSERT_EQUAL(at_max, 120);
        for (int i = 0; i < 4; i++)
            free(v[i]);
    }
}

/* OpInfo's pad.reflect#11 and pad.replicate#11: a negative padding crops
 * that side (PyTorch mirrors and repeats about the cropped edge); it was
 * refused by the compiler and the host alike.  [-1, 1, -2, 1] on a 4x4:
 * rows 2, 3 then 2 (reflect) or 3 (replicate), columns 1, 2, 3 then 2 or 3. */
static void test_negative_mode_pads_crop_then_pad_on_both_chips(void)
{
    const char *text = "graph negpad\n"
                       "input %x: f32[1, 3, 4, 4]\n"
                       "%rf: f32[1, 3, 3, 4] = aten.reflection_pad2d.default(%x, [-1, 1, -2, 1])\n"
                       "%rp: f32[1, 3, 3, 4] = aten.replication_pad2d.default(%x, [-1, 1, -2, 1])\n"
                       "output %rf, %rp\n";
    const char *names[] = {"rf", "rp", "x"};
    const int rows[2][3] = {{2, 3, 2}, {2, 3, 3}}, cols[2][4] = {{1, 2, 3, 2}, {1, 2, 3, 3}};
    for (int c = 0; c < 2; c++) {
        float *v[3] = {0};
        int64_t n[3] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "negpad.txt", both_chips[c], 3, names, v, n), 0);
        int same = 0;
        for (int m = 0; m < 2; m++)
            for (int i = 0; i < 36 && n[m] == 36; i++) {
                float want = v[2][i / 12 * 16 + rows[m][i / 4 % 3] * 4 + cols[m][i % 4]];
                same += fabsf(v[m][i] - want) <= 0x1p-9f * fabsf(want) + 1e-6f;
            }
        CU_ASSERT_EQUAL(same, 72);
        for (int i = 0; i < 3; i++)
            free(v[i]);
    }
}

/* OpInfo's interpolate.nearest#8-#11 and upsample_nearest#8-#11 (5-D
 * inputs) were refused: neither the compiler nor the host had
 * upsample_nearest3d.  Each of the last three axes goes as the 1-D and 2-D
 * forms do: output i reads floor(i * in / out), or i / factor. */
static void test_nearest_upsampling_of_three_axes_validates_on_both_chips(void)
{
    const char *text = "graph near3\n"
                       "input %x: f32[2, 3, 4, 4, 4]\n"
                       "%a: f32[2, 3, 3, 3, 3] = aten.upsample_nearest3d.vec(%x, [3, 3, 3], None)\n"
                       "%b: f32[2, 3, 8, 4, 2] = aten.upsample_nearest3d.vec(%x, None, [2.0, 1.0, 0.5])\n"
                       "output %a, %b\n";
    const char *names[] = {"a", "b", "x"};
    const int64_t out[2][3] = {{3, 3, 3}, {8, 4, 2}};
    const float scale[2][3] = {{4.0f / 3, 4.0f / 3, 4.0f / 3}, {0.5f, 1.0f, 2.0f}};
    for (int c = 0; c < 2; c++) {
        float *v[3] = {0};
        int64_t n[3] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "near3.txt", both_chips[c], 3, names, v, n), 0);
        int same = 0;
        for (int m = 0; m < 2; m++)
            for (int64_t k = 0; k < n[m]; k++) {
                int64_t at[3] = {k / (out[m][1] * out[m][2]) % out[m][0], k / out[m][2] % out[m][1], k % out[m][2]};
                int64_t src = k / (out[m][0] * out[m][1] * out[m][2]) * 64;
                for (int a = 0; a < 3; a++)
                    src = src + (int64_t)floorf((float)at[a] * scale[m][a]) * (a == 0 ? 16 : a == 1 ? 4 : 1);
                same += fabsf(v[m][k] - v[2][src]) <= 0x1p-9f * fabsf(v[2][src]) + 1e-6f;
            }
        CU_ASSERT_EQUAL(n[0] + n[1], 162 + 384);
        CU_ASSERT_EQUAL(same, 162 + 384);
        for (int i = 0; i < 3; i++)
            free(v[i]);
    }
}

/* OpInfo's linalg.matrix_power#6 and #12 (power 0: an identity expanded
 * by expand_copy) were refused: neither the compiler nor the host knew
 * expand_copy.  It parses as expand, on the device: the identity, once a
 * batch. */
static void test_expand_copy_runs_as_expand_on_both_chips(void)
{
    const char *text = "graph expcopy\n"
                       "input %x: f32[2, 2, 2]\n"
                       "%eye: f32[2, 2] = aten.eye.default(2, dtype=f32)\n"
                       "%e: f32[2, 2, 2] = aten.expand_copy.default(%eye, [2, 2, 2])\n"
                       "%y: f32[2, 2, 2] = aten.add.Tensor(%x, %e)\n"
                       "output %e, %y\n";
    expect_text_runs_natively_and_validates_on_both_chips(text);
    const char *names[] = {"e"};
    for (int c = 0; c < 2; c++) {
        float *v[1] = {0};
        int64_t n[1] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "expcopy.txt", both_chips[c], 1, names, v, n), 0);
        CU_ASSERT_EQUAL_FATAL(n[0], 8);
        int same = 0;
        for (int i = 0; i < 8; i++)
            same += v[0][i] == (i % 4 == 0 || i % 4 == 3 ? 1.0f : 0.0f);
        CU_ASSERT_EQUAL(same, 8);
        free(v[0]);
    }
}

/* OpInfo's aminmax#5: PyTorch gives aminmax(0-d x, dim=0, keepdim=True) as
 * two [1] tensors (amin and amax give 0-d ones); the decomposition gave
 * 0-d results and the compiler refused the declared [1].  Both are x. */
static void test_aminmax_of_a_0d_tensor_kept_is_one_element_on_both_chips(void)
{
    const char *text = "graph amm0\n"
                       "input %x: f32[]\n"
                       "%a: (f32[1], f32[1]) = aten.aminmax.default(%x, dim=0, keepdim=True)\n"
                       "%lo: f32[1] = getitem(%a, 0)\n"
                       "%hi: f32[1] = getitem(%a, 1)\n"
                       "output %lo, %hi\n";
    expect_text_runs_natively_and_validates_on_both_chips(text);
    const char *names[] = {"lo", "hi", "x"};
    for (int c = 0; c < 2; c++) {
        float *v[3] = {0};
        int64_t n[3] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "amm0.txt", both_chips[c], 3, names, v, n), 0);
        CU_ASSERT_EQUAL(n[0] + n[1], 2);
        for (int m = 0; m < 2; m++)
            CU_ASSERT(fabsf(v[m][0] - v[2][0]) <= 0x1p-9f * fabsf(v[2][0]) + 1e-6f);
        for (int i = 0; i < 3; i++)
            free(v[i]);
    }
}

/* Issue 12: a value name of about 250 characters looped forever (a
 * generated name cut to 255 bytes lost its ".N" suffix).  Names of any
 * length run; device tensors of names over 63 bytes get shortened names
 * (gr_tensor_name) that the runtime maps back. */
static void test_names_of_any_length_compile_and_run(void)
{
    const int lens[] = {250, 300, 1000};
    for (int i = 0; i < 3; i++) {
        int L = lens[i];
        char *nm = malloc((size_t)L + 1);
        memset(nm, 'v', (size_t)L);
        nm[L] = 0;
        size_t cap = 8 * (size_t)L + 512;
        char *text = malloc(cap);
        /* an input, an intermediate, two ops of one source (decomposed names) and an output, all long */
        snprintf(text, cap,
                 "input %%%s: f32[8, 64]\n"
                 "%%%s.t: f32[8, 64] = aten.exp.default(%%%s)\n"
                 "%%%s.s: (f32[8, 64], f32[8, 1], f32[8, 1]) = aten.native_layer_norm.default(%%%s.t, [64], None, None, 1e-05)\n"
                 "%%%s.o: f32[8, 64] = getitem(%%%s.s, 0)\n"
                 "output %%%s.o\n",
                 nm, nm, nm, nm, nm, nm, nm, nm);
        char tn[GR_TENSOR_NAME_MAX], full[1100];
        snprintf(full, sizeof full, "%s.o", nm);
        gr_tensor_name(full, tn);
        CU_ASSERT_EQUAL(strlen(tn), GR_TENSOR_NAME_MAX - 1);
        const char *names[] = {tn};
        float *v = NULL;
        int64_t n = 0;
        CU_ASSERT_EQUAL(run_and_read(text, "long.txt", "spyre-4core", 1, names, &v, &n), 0);
        CU_ASSERT_EQUAL(n, 512);
        free(v);
        free(text);
        free(nm);
    }
    /* shortened names differ when the long names do */
    char a[GR_TENSOR_NAME_MAX], b[GR_TENSOR_NAME_MAX], x[300];
    memset(x, 'v', sizeof x - 1);
    x[sizeof x - 1] = 0;
    gr_tensor_name(x, a);
    x[sizeof x - 2] = 'w';
    gr_tensor_name(x, b);
    CU_ASSERT_NOT_EQUAL(strcmp(a, b), 0);
}

/* Issue 14: the SFP has no rounding function; floor, ceil, round (half to
 * even), trunc, frac, remainder, fmod and div's rounding modes decompose
 * into DL16 adds of 512 and compares (compiler/front/decompose.c).  Over every
 * quarter from -8 to 7.75 (ties included) and every half from 490 to
 * 521.5 (across 512, where DL16's ulp becomes 1) each result is exactly
 * C's function of the device's own input, on both chips. */
static void test_rounding_functions_are_exact_on_the_device_on_both_chips(void)
{
    const char *text = "graph rnd\n"
                       "%i: i64[64] = aten.arange.default(64)\n"
                       "%q: f32[64] = aten.mul.Tensor(%i, 0.25)\n"
                       "%x: f32[64] = aten.sub.Tensor(%q, 8.0)\n"
                       "%h: f32[64] = aten.mul.Tensor(%i, 0.5)\n"
                       "%y: f32[64] = aten.add.Tensor(%h, 490.0)\n"
                       "%fl: f32[64] = aten.floor.default(%x)\n"
                       "%ce: f32[64] = aten.ceil.default(%x)\n"
                       "%ro: f32[64] = aten.round.default(%x)\n"
                       "%tr: f32[64] = aten.trunc.default(%x)\n"
                       "%fr: f32[64] = aten.frac.default(%x)\n"
                       "%rm: f32[64] = aten.remainder.Scalar(%x, 1.5)\n"
                       "%fm: f32[64] = aten.fmod.Scalar(%x, 1.5)\n"
                       "%dv: f32[64] = aten.div.Scalar_mode(%x, 0.75, rounding_mode=\"floor\")\n"
                       "%ry: f32[64] = aten.round.default(%y)\n"
                       "%fy: f32[64] = aten.floor.default(%y)\n"
                       "output %x, %y, %fl, %ce, %ro, %tr, %fr, %rm, %fm, %dv, %ry, %fy\n";
    const char *names[] = {"x", "y", "fl", "ce", "ro", "tr", "fr", "rm", "fm", "dv", "ry", "fy"};
    for (int c = 0; c < 2; c++) {
        float *v[12] = {0};
        int64_t n[12] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "rnd.txt", both_chips[c], 12, names, v, n), 0);
        int ok = 0;
        for (int i = 0; i < 64; i++) {
            float x = v[0][i], y = v[1][i], r = fmodf(x, 1.5f);
            ok += v[2][i] == floorf(x) && v[3][i] == ceilf(x) && v[4][i] == nearbyintf(x) && v[5][i] == truncf(x);
            ok += v[6][i] == x - truncf(x) && v[8][i] == r && v[9][i] == floorf(x / 0.75f);
            ok += v[7][i] == (r != 0 && r < 0 ? r + 1.5f : r);
            ok += v[10][i] == nearbyintf(y) && v[11][i] == floorf(y);
        }
        CU_ASSERT_EQUAL(ok, 4 * 64);
        CU_ASSERT_EQUAL(v[4][10], -6.0f); /* round(-5.5): ties to even */
        CU_ASSERT_EQUAL(v[4][22], -2.0f); /* round(-2.5) */
        CU_ASSERT_EQUAL(v[10][43], 512.0f); /* round(511.5) */
        for (int i = 0; i < 12; i++)
            free(v[i]);
    }
}

/* Issue 14: atan, asin, acos and atan2 by a polynomial (the SFP has no
 * arctangent; compiler/front/decompose.c, cc_atan_coef) are within a few DL16
 * roundings of C's, over [-4, 4) by eighths, [-1, 1) by 32nds and every
 * octant of atan2, on both chips (the device's worst: 2.0e-3, two DL16
 * units near pi). */
static void test_arctangents_by_a_polynomial_are_within_dl16_precision_on_both_chips(void)
{
    const char *text = "graph atn\n"
                       "%i: i64[64] = aten.arange.default(64)\n"
                       "%q: f32[64] = aten.mul.Tensor(%i, 0.125)\n"
                       "%x: f32[64] = aten.sub.Tensor(%q, 4.0)\n"
                       "%h: f32[64] = aten.mul.Tensor(%i, 0.03125)\n"
                       "%u: f32[64] = aten.sub.Tensor(%h, 1.0)\n"
                       "%nx: f32[64] = aten.neg.default(%x)\n"
                       "%at: f32[64] = aten.atan.default(%x)\n"
                       "%as: f32[64] = aten.asin.default(%u)\n"
                       "%ac: f32[64] = aten.acos.default(%u)\n"
                       "%a2: f32[64] = aten.atan2.default(%u, %x)\n"
                       "%a3: f32[64] = aten.atan2.default(%u, %nx)\n"
                       "output %x, %u, %at, %as, %ac, %a2, %a3\n";
    const char *names[] = {"x", "u", "at", "as", "ac", "a2", "a3"};
    for (int c = 0; c < 2; c++) {
        float *v[7] = {0};
        int64_t n[7] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "atn.txt", both_chips[c], 7, names, v, n), 0);
        double worst = 0;
        for (int i = 0; i < 64; i++) {
            double x = v[0][i], u = v[1][i];
            worst = fmax(worst, fabs(v[2][i] - atan(x)));
            worst = fmax(worst, fabs(v[3][i] - asin(u)));
            worst = fmax(worst, fabs(v[4][i] - acos(u)));
            worst = fmax(worst, fabs(v[5][i] - atan2(u, x)));
            if (x != 0) /* atan2(0, -0.0) is pi: the SFP has no test of a zero's sign (docs/compiler.md) */
                worst = fmax(worst, fabs(v[6][i] - atan2(u, -x)));
        }
        CU_ASSERT(worst <= 8 * 0x1p-10);
        for (int i = 0; i < 7; i++)
            free(v[i]);
    }
}

/* Issue 14: the device's infinity is the stand-in +-2^30 (masked_fill with
 * inf writes it); isinf, isposinf, isneginf test for it, isnan for DL16's
 * NaN, and nan_to_num with replacements in DL16's range replaces both. */
static void test_infinities_and_nans_are_found_and_replaced_on_both_chips(void)
{
    const char *text = "graph infs\n"
                       "%i: i64[64] = aten.arange.default(64)\n"
                       "%f: f32[64] = aten.sub.Tensor(%i, 32.0)\n"
                       "%b: bool[64] = aten.gt.Scalar(%f, 20.0)\n"
                       "%c: bool[64] = aten.lt.Scalar(%f, -20.0)\n"
                       "%p: f32[64] = aten.masked_fill.Scalar(%f, %b, inf)\n"
                       "%x: f32[64] = aten.masked_fill.Scalar(%p, %c, -inf)\n"
                       "%s: f32[64] = aten.sqrt.default(%f)\n"
                       "%ii: bool[64] = aten.isinf.default(%x)\n"
                       "%ip: bool[64] = aten.isposinf.default(%x)\n"
                       "%in: bool[64] = aten.isneginf.default(%x)\n"
                       "%nn: bool[64] = aten.isnan.default(%s)\n"
                       "%ns: f32[64] = aten.nan_to_num.default(%s, 5.0, 1000.0, -1000.0)\n"
                       "%nx: f32[64] = aten.nan_to_num.default(%x, 5.0, 1000.0, -1000.0)\n"
                       "output %ii, %ip, %in, %nn, %ns, %nx\n";
    const char *names[] = {"ii", "ip", "in", "nn", "ns", "nx"};
    for (int c = 0; c < 2; c++) {
        float *v[6] = {0};
        int64_t n[6] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "infs.txt", both_chips[c], 6, names, v, n), 0);
        int ok = 0;
        for (int i = 0; i < 64; i++) {
            int pos = i > 52, ng = i < 12;
            float f = (float)(i - 32);
            ok += v[0][i] == (pos || ng) && v[1][i] == pos && v[2][i] == ng && v[3][i] == (i < 32);
            ok += i < 32 ? v[4][i] == 5.0f : fabsf(v[4][i] - sqrtf(f)) <= 0x1p-9f * sqrtf(f);
            ok += v[5][i] == (pos ? 1000.0f : ng ? -1000.0f : f);
        }
        CU_ASSERT_EQUAL(ok, 3 * 64);
        for (int i = 0; i < 6; i++)
            free(v[i]);
    }
}

/* A sum over the rows of [20, 24] blocks (Performer's k.sum(-2)) stores its
 * 24-wide result sticks through a staged copy: every core's part of the
 * kernel's rows is whole sticks of 24, not 64 rows that end inside one. */
static void test_a_column_sum_into_sticks_of_24_splits_by_whole_sticks(void)
{
    expect_text_runs_natively_and_validates_on_both_chips("graph colsum\n"
                                                          "input %x: f32[2, 4, 20, 24]\n"
                                                          "%e: f32[2, 4, 20, 24] = aten.exp.default(%x)\n"
                                                          "%s: f32[2, 4, 24] = aten.sum.dim_IntList(%e, [-2])\n"
                                                          "output %s\n");
}

/* torch 1.13's einsum (Linformer's "bnd,nk->bkd") copies an operand to
 * [2, 64, 32, 1]: sticked on the dim of one, the copy was a row kernel of
 * one column whose LX missed on spyre-4core (the host ran it); without the
 * trailing one it is sticked on 32, native on both chips. */
static void test_an_einsum_operand_with_a_trailing_one_runs_natively_on_both_chips(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph einsum_unit_tail\n"
        "input %k: f32[2, 32, 64]\n"
        "input %p: f32[32, 8]\n"
        "%u: f32[2, 32, 64, 1] = aten.unsqueeze.default(%k, 3)\n"
        "%pe: f32[2, 1, 64, 32] = aten.permute.default(%u, [0, 3, 2, 1])\n"
        "%pe2: f32[2, 64, 32, 1] = aten.permute.default(%pe, [0, 2, 3, 1])\n"
        "%c: f32[2, 64, 32, 1] = aten.clone.default(%pe2, memory_format=\"contiguous_format\")\n"
        "%v: f32[1, 128, 32] = aten._unsafe_view.default(%c, [1, 128, 32])\n"
        "%pr: f32[1, 32, 8] = aten.unsqueeze.default(%p, 0)\n"
        "%b: f32[1, 128, 8] = aten.bmm.default(%v, %pr)\n"
        "output %b\n");
}

/* index_put with several index tensors on adjacent dims (Informer's
 * context[arange(B)[:, None, None], arange(H)[None, :, None], top, :] =
 * ...), duplicate positions among the random ones: the last entry wins,
 * or with accumulate their sum; leading dims as one product of the
 * one-hot, dims after a None merged as one index. Native on both chips,
 * against the reference. */
static void test_index_put_with_several_index_tensors_runs_natively_on_both_chips(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph index_put_several\n"
        "input %x: f32[2, 4, 6, 3]\n"
        "input %v: f32[2, 4, 5, 3]\n"
        "input %top: i64[2, 4, 5] range=[0, 5]\n"
        "input %w: f32[3, 4, 6]\n"
        "input %r: i64[4, 2] range=[0, 5]\n"
        "input %u: f32[3, 4, 2]\n"
        "%a: i64[2] = aten.arange.default(2)\n"
        "%a1: i64[2, 1, 1] = aten.view.default(%a, [2, 1, 1])\n"
        "%h: i64[4] = aten.arange.default(4)\n"
        "%h1: i64[1, 4, 1] = aten.view.default(%h, [1, 4, 1])\n"
        "%h2: i64[4, 1] = aten.view.default(%h, [4, 1])\n"
        "%y: f32[2, 4, 6, 3] = aten.index_put.default(%x, [%a1, %h1, %top], %v)\n"
        "%z: f32[2, 4, 6, 3] = aten.index_put.default(%x, [%a1, %h1, %top], %v, True)\n"
        "%q: f32[3, 4, 6] = aten.index_put.default(%w, [None, %h2, %r], %u)\n"
        "output %y, %z, %q\n");
}

/* Reformer's LSH sort: integer keys seqlen * bucket + position up to 95
 * over rows of 16 (a sum of the one-hot's values was bounded by 16 x 95,
 * past DL16's exact integers: the host sorted), then the argsort undoing
 * it. Native on both chips, the values, ties' order and indices exact
 * against the reference. */
static void test_an_integer_sort_of_keys_up_to_95_runs_natively_on_both_chips(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph int_sort\n"
        "input %k: i64[2, 16] range=[0, 95]\n"
        "%s: (i64[2, 16], i64[2, 16]) = aten.sort.default(%k)\n"
        "%v: i64[2, 16] = getitem(%s, 0)\n"
        "%i: i64[2, 16] = getitem(%s, 1)\n"
        "%u: (i64[2, 16], i64[2, 16]) = aten.sort.default(%i)\n"
        "%w: i64[2, 16] = getitem(%u, 1)\n"
        "output %v, %i, %w\n");
}

/* index_put with several index tensors that put nothing (empty ones,
 * over an empty dim or not) is x, as PyTorch; the compiler divided by the
 * empty dim's size (SIGFPE). */
static void test_index_put_of_several_empty_indices_is_x_on_both_chips(void)
{
    expect_text_runs_natively_and_validates_on_both_chips("graph index_put_empty\n"
                                                          "input %x: f32[0, 5, 8]\n"
                                                          "input %w: f32[3, 0, 5, 8]\n"
                                                          "input %u: f32[4, 5, 8]\n"
                                                          "input %i: i64[0]\n"
                                                          "input %j: i64[0]\n"
                                                          "input %v: f32[0, 8]\n"
                                                          "input %vw: f32[3, 0, 8]\n"
                                                          "%y: f32[0, 5, 8] = aten.index_put.default(%x, [%i, %j], %v)\n"
                                                          "%z: f32[3, 0, 5, 8] = aten.index_put.default(%w, [None, %i, %j], %vw)\n"
                                                          "%p: f32[4, 5, 8] = aten.index_put.default(%u, [%i, %j], %v, True)\n"
                                                          "%q: f32[4, 5, 8] = aten.add.Tensor(%p, 1.0)\n"
                                                          "output %y, %z, %q\n");
}

/* nan_to_num with PyTorch's defaults (RetNet's decay mask): NaN to 0 and
 * +-inf to float32's extremes, which the device stores as +-ISA_DL16_TOP and
 * the check takes for them; no op on the host. */
static void test_nan_to_num_with_default_replacements_runs_natively_on_both_chips(void)
{
    const char *text = "graph nan_to_num_defaults\n"
                       "%i: i64[64] = aten.arange.default(64)\n"
                       "%f: f32[64] = aten.sub.Tensor(%i, 32.0)\n"
                       "%b: bool[64] = aten.gt.Scalar(%f, 20.0)\n"
                       "%c: bool[64] = aten.lt.Scalar(%f, -20.0)\n"
                       "%p: f32[64] = aten.masked_fill.Scalar(%f, %b, inf)\n"
                       "%x: f32[64] = aten.masked_fill.Scalar(%p, %c, -inf)\n"
                       "%s: f32[64] = aten.sqrt.default(%f)\n"
                       "%ns: f32[64] = aten.nan_to_num.default(%s)\n"
                       "%nx: f32[64] = aten.nan_to_num.default(%x)\n"
                       "output %ns, %nx\n";
    expect_text_runs_natively_and_validates_on_both_chips(text);
    const char *names[] = {"ns", "nx"};
    for (int c = 0; c < 2; c++) {
        float *v[2] = {0};
        int64_t n[2] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "nan_to_num_defaults.txt", both_chips[c], 2, names, v, n), 0);
        int ok = 0;
        for (int i = 0; i < 64; i++) {
            float f = (float)(i - 32);
            ok += i < 32 ? v[0][i] == 0.0f : fabsf(v[0][i] - sqrtf(f)) <= 0x1p-9f * sqrtf(f);
            ok += v[1][i] == (i > 52 ? ISA_DL16_TOP : i < 12 ? -ISA_DL16_TOP : f);
        }
        CU_ASSERT_EQUAL(ok, 2 * 64);
        free(v[0]);
        free(v[1]);
    }
}

/* nan_to_num's replaced infinities rank above every finite value, as
 * float32's extremes do in PyTorch: a finite 7e8 (beyond the constants'
 * stand-in 2^29) stays below the replaced +inf, -9e8 above the replaced
 * -inf, and 6e8 below either.  The values are PyTorch's for the same input
 * (argmax, argmin, (y > 6e8).sum, the sort's indices; posinf=1e30 alike). */
static void test_nan_to_num_replacements_rank_as_pytorchs_on_both_chips(void)
{
    const char *text = "graph ntn_rank\n"
                       "input %x: f32[3, 4]\n"
                       "%y: f32[3, 4] = aten.nan_to_num.default(%x)\n"
                       "%am: i64[3] = aten.argmax.default(%y, -1)\n"
                       "%an: i64[3] = aten.argmin.default(%y, -1)\n"
                       "%gt: bool[3, 4] = aten.gt.Scalar(%y, 600000000.0)\n"
                       "%cnt: i64[3] = aten.sum.dim_IntList(%gt, [-1])\n"
                       "%s: (f32[3, 4], i64[3, 4]) = aten.sort.default(%y, -1)\n"
                       "%si: i64[3, 4] = getitem(%s, 1)\n"
                       "%z: f32[3, 4] = aten.nan_to_num.default(%x, 0.0, 1e+30, -1e+30)\n"
                       "%zm: i64[3] = aten.argmax.default(%z, -1)\n"
                       "output %am, %an, %cnt, %si, %zm\n";
    float x[12] = {INFINITY, 7e8f, 1, 2, 3, -INFINITY, NAN, 5e8f, 3, -INFINITY, -9e8f, 5e8f};
    const float want[5][12] = {{0, 3, 3}, {2, 1, 1}, {2, 0, 0}, {2, 3, 1, 0, 1, 2, 0, 3, 1, 2, 0, 3}, {0, 3, 3}};
    rt_st_entry e[1] = {{.name = "x", .dtype = RT_ST_F32, .rank = 2, .shape = {3, 4}, .data = x}};
    char path[1024], err[256];
    tu_tmpfile(".safetensors", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, e, 1, err, sizeof err), 0);
    const char *names[] = {"am", "an", "cnt", "si", "zm"};
    for (int c = 0; c < 2; c++) {
        float *v[5] = {0};
        int64_t n[5] = {0};
        CU_ASSERT_EQUAL(run_and_read_from(text, "ntn_rank.txt", both_chips[c], path, 5, names, v, n), 0);
        for (int k = 0; k < 5; k++) {
            int ok = 0;
            for (int64_t i = 0; i < n[k] && v[k]; i++)
                ok += v[k][i] == want[k][i];
            CU_ASSERT_EQUAL(ok, k == 3 ? 12 : 3);
            free(v[k]);
        }
    }
    remove(path);
}

/* A softmax row whose max is infinite is NaN in PyTorch (-inf - -inf, or
 * inf - inf): a row masked whole with -inf (masked.softmax's
 * masked-out row) and a row holding +inf.  The device holds either
 * infinity as the stand-in +-2^30, which gave a uniform row (one-hot for
 * +inf); the other rows as PyTorch's, log_softmax's -inf as -2^30 or
 * below.  PyTorch (1.13) gives rows 0 and 3 NaN, row 1 [0 x4, 0.2052,
 * 0.2326, 0.2635, 0.2986]. */
static void test_softmax_of_a_row_masked_whole_is_nan_as_pytorch(void)
{
    const char *text = "graph sm\n"
                       "%i: i64[32] = aten.arange.default(32)\n"
                       "%f: f32[32] = aten.sub.Tensor(%i, 16.0)\n"
                       "%g: f32[32] = aten.mul.Tensor(%f, 0.125)\n"
                       "%x: f32[4, 8] = aten.view.default(%g, [4, 8])\n"
                       "%m: bool[4, 8] = aten.lt.Scalar(%x, -0.5)\n"
                       "%n: bool[4, 8] = aten.eq.Scalar(%x, 1.5)\n"
                       "%p: f32[4, 8] = aten.masked_fill.Scalar(%x, %m, -inf)\n"
                       "%q: f32[4, 8] = aten.masked_fill.Scalar(%p, %n, inf)\n"
                       "%s: f32[4, 8] = aten._softmax.default(%q, 1, False)\n"
                       "%l: f32[4, 8] = aten._log_softmax.default(%q, 1, False)\n"
                       "output %s, %l\n";
    const char *names[] = {"s", "l"};
    for (int c = 0; c < 2; c++) {
        float *v[2] = {0};
        int64_t n[2] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "sm.txt", both_chips[c], 2, names, v, n), 0);
        int ok = 0;
        for (int r = 0; r < 4; r++) {
            double s = 0;
            for (int j = 0; j < 8; j++)
                s += (r * 8 + j - 16) * 0.125 < -0.5 ? 0 : exp((r * 8 + j - 16) * 0.125);
            for (int j = 0; j < 8; j++) {
                int k = r * 8 + j, nan = r == 0 || r == 3, masked = (k - 16) * 0.125 < -0.5;
                double ref = exp((k - 16) * 0.125) / s;
                if (nan)
                    ok += isnan(v[0][k]) && isnan(v[1][k]);
                else if (masked)
                    ok += v[0][k] == 0 && v[1][k] <= -0x1p30f;
                else
                    ok += fabs(v[0][k] - ref) <= 0x1p-8 * ref && fabs(v[1][k] - log(ref)) <= 0x1p-7;
            }
        }
        CU_ASSERT_EQUAL(ok, 32);
        CU_ASSERT(fabsf(v[0][12] - 0.2052f) <= 1e-3f);
        for (int i = 0; i < 2; i++)
            free(v[i]);
    }
}

/* Hugging Face masks with torch.finfo(f32).min, a finite value far beyond
 * DL16's range, by masked_fill (Llama, Bloom) or by (1 - mask) * min
 * added (T5).  Written to DL16 it was NINF, and every row NaN; it is now
 * +-2^29 (isa_dl16_standin), still finite, so a row masked whole is
 * uniform, as PyTorch's (its scores vanish next to min), and the reference
 * executor takes it as finite too; the masked scores, an output, check
 * (the device's 2^29 stands for min).  Row 0 is masked whole, row 1 but
 * for its last four elements. */
static void test_softmax_masked_with_finfo_min_is_pytorchs(void)
{
    const char *text = "graph smmin\n"
                       "%i: i64[32] = aten.arange.default(32)\n"
                       "%f: f32[32] = aten.sub.Tensor(%i, 16.0)\n"
                       "%g: f32[32] = aten.mul.Tensor(%f, 0.125)\n"
                       "%x: f32[4, 8] = aten.view.default(%g, [4, 8])\n"
                       "%m: bool[4, 8] = aten.lt.Scalar(%x, -0.5)\n"
                       "%p: f32[4, 8] = aten.masked_fill.Scalar(%x, %m, -3.4028234663852886e+38)\n"
                       "%s: f32[4, 8] = aten._softmax.default(%p, 1, False)\n"
                       "%mf: f32[4, 8] = aten._to_copy.default(%m, dtype=f32)\n"
                       "%b: f32[4, 8] = aten.mul.Tensor(%mf, -3.4028234663852886e+38)\n"
                       "%a: f32[4, 8] = aten.add.Tensor(%x, %b)\n"
                       "%t: f32[4, 8] = aten._softmax.default(%a, 1, False)\n"
                       "output %s, %t, %p\n";
    const char *names[] = {"s", "t"};
    for (int c = 0; c < 2; c++) {
        float *v[2] = {0};
        int64_t n[2] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "smmin.txt", both_chips[c], 2, names, v, n), 0);
        int ok = 0;
        for (int r = 0; r < 4; r++) {
            double s = 0;
            for (int j = 0; j < 8; j++)
                s += r == 0 || (r * 8 + j - 16) * 0.125 >= -0.5 ? exp((r * 8 + j - 16) * 0.125) : 0;
            for (int j = 0; j < 8; j++) {
                int k = r * 8 + j, masked = (k - 16) * 0.125 < -0.5;
                double ref = r == 0 ? 0.125 : masked ? 0 : exp((k - 16) * 0.125) / s;
                for (int o = 0; o < 2; o++)
                    ok += fabs(v[o][k] - ref) <= 0x1p-8 * ref + 1e-6;
            }
        }
        CU_ASSERT_EQUAL(ok, 64);
        for (int i = 0; i < 2; i++)
            free(v[i]);
    }
}

/* Finite inputs DL16 holds (2e9, -3e9; its largest is 0x1.ffp32) reach
 * the device as themselves, not the stand-in +-2^29 (x * 1e-9 was +-0.54
 * where PyTorch has 2 and -3, and the reference, reading the stand-in,
 * agreed); -1e10, beyond DL16, is held as -2^29, checked for the user's
 * -1e10 by the reference, which reads the user's values.  clamp(y, -2e9)
 * is -2^29 on the device where the reference has -2e9: a mismatch, as the
 * stand-in stands only for values DL16 cannot hold. */
static void test_finite_inputs_dl16_holds_are_not_stand_ins(void)
{
    const char *text = "graph big\n"
                       "input %x: f32[4]\n"
                       "input %y: f32[2]\n"
                       "%a: f32[4] = aten.mul.Tensor(%x, 2.0)\n"
                       "%b: f32[4] = aten.mul.Tensor(%x, 1e-09)\n"
                       "%c: f32[2] = aten.add.Tensor(%y, 0.5)\n"
                       "output %a, %b, %c\n";
    const char *clamped = "graph bigc\n"
                          "input %x: f32[4]\n"
                          "input %y: f32[2]\n"
                          "%c: f32[2] = aten.clamp.default(%y, -2000000000.0)\n"
                          "output %c\n";
    float x[4] = {1, 2e9f, -3e9f, 7}, y[2] = {-1e10f, 3};
    rt_st_entry e[2] = {{.name = "x", .dtype = RT_ST_F32, .rank = 1, .shape = {4}, .data = x},
                        {.name = "y", .dtype = RT_ST_F32, .rank = 1, .shape = {2}, .data = y}};
    char path[1024], err[256];
    tu_tmpfile(".safetensors", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, e, 2, err, sizeof err), 0);
    CU_ASSERT_EQUAL(isa_dl16_to_f32(0x7ffe), ISA_DL16_MAX);
    const char *names[] = {"b", "c"};
    for (int c = 0; c < 2; c++) {
        float *v[2] = {0};
        int64_t n[2] = {0};
        CU_ASSERT_EQUAL(run_and_read_from(text, "big.txt", both_chips[c], path, 2, names, v, n), 0);
        int ok = 0;
        for (int k = 0; k < 4 && v[0]; k++)
            ok += fabs(v[0][k] - x[k] * 1e-9) <= 0x1p-8 * fabs(x[k] * 1e-9);
        CU_ASSERT_EQUAL(ok, 4);
        CU_ASSERT(v[1] && v[1][0] == -ISA_DL16_BIG);
        for (int i = 0; i < 2; i++)
            free(v[i]);
        float *w[1] = {0};
        CU_ASSERT_EQUAL(run_and_read_from(clamped, "bigc.txt", both_chips[c], path, 1, names + 1, w, n), 1);
        free(w[0]);
    }
    remove(path);
}

/* A row masked whole with -2e9, finite and inside DL16's range, is uniform
 * in PyTorch's softmax; the reference took any max in [2^30, 2^33) for the
 * infinity stand-in and made the row NaN, failing the check. */
static void test_softmax_of_a_row_masked_whole_with_a_finite_value_is_uniform(void)
{
    const char *text = "graph smf\n"
                       "%i: i64[16] = aten.arange.default(16)\n"
                       "%f: f32[16] = aten.mul.Tensor(%i, 0.125)\n"
                       "%x: f32[2, 8] = aten.view.default(%f, [2, 8])\n"
                       "%m: bool[2, 8] = aten.lt.Scalar(%x, 1.0)\n"
                       "%p: f32[2, 8] = aten.masked_fill.Scalar(%x, %m, -2000000000.0)\n"
                       "%s: f32[2, 8] = aten._softmax.default(%p, 1, False)\n"
                       "output %s\n";
    const char *names[] = {"s"};
    for (int c = 0; c < 2; c++) {
        float *v[1] = {0};
        int64_t n[1] = {0};
        CU_ASSERT_EQUAL(run_and_read(text, "smf.txt", both_chips[c], 1, names, v, n), 0);
        int ok = 0;
        for (int j = 0; j < 8 && v[0]; j++)
            ok += fabs(v[0][j] - 0.125) <= 0x1p-8;
        CU_ASSERT_EQUAL(ok, 8);
        free(v[0]);
    }
}

static int mask_nan_axis(const char *text, int *guarded);

/* The same over graph inputs: a user's additive attention mask, -inf in
 * the data (uploaded as the stand-in -2^30), masks row 1 whole and row 2
 * but for its last element; PyTorch gives row 1 NaN and row 2 one-hot.
 * The guard went only with an infinite constant, so row 1 came out
 * uniform (1/8) and the check against the reference failed.  Over scores
 * from a product the runtime's upload makes the NaN rows (docs/runtime.md,
 * "Masks"); over a plain input added, the device's guard too. */
static void test_softmax_over_an_input_mask_masking_a_row_whole_is_nan(void)
{
    const char *text = "graph smi\n"
                       "input %x0: f32[4, 8]\n"
                       "input %eye: f32[8, 8]\n"
                       "input %mask: f32[4, 8]\n"
                       "%x: f32[4, 8] = aten.mm.default(%x0, %eye)\n"
                       "%a: f32[4, 8] = aten.add.Tensor(%x, %mask)\n"
                       "%s: f32[4, 8] = aten._softmax.default(%a, 1, False)\n"
                       "output %s\n";
    float x[32], mask[32], eye[64];
    for (int k = 0; k < 32; k++) {
        x[k] = (float)(k % 8) * 0.25f;
        mask[k] = k / 8 == 1 || (k / 8 == 2 && k % 8 < 7) ? -INFINITY : 0;
    }
    for (int k = 0; k < 64; k++)
        eye[k] = k / 8 == k % 8;
    rt_st_entry e[3] = {{.name = "x0", .dtype = RT_ST_F32, .rank = 2, .shape = {4, 8}, .data = x},
                        {.name = "eye", .dtype = RT_ST_F32, .rank = 2, .shape = {8, 8}, .data = eye},
                        {.name = "mask", .dtype = RT_ST_F32, .rank = 2, .shape = {4, 8}, .data = mask}};
    char path[1024], err[256];
    tu_tmpfile(".safetensors", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, e, 3, err, sizeof err), 0);
    /* the scores come from a product (as BERT's): the mask's upload alone
     * makes row 1 NaN, the device has no guard */
    int guarded;
    CU_ASSERT_EQUAL(mask_nan_axis(text, &guarded), 1);
    CU_ASSERT_EQUAL(guarded, 0);
    const char *names[] = {"s"};
    for (int c = 0; c < 2; c++) {
        float *v[1] = {0};
        int64_t n[1] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read_from(text, "smi.txt", both_chips[c], path, 1, names, v, n), 0);
        double s = 0;
        for (int j = 0; j < 8; j++)
            s += exp(j * 0.25);
        int ok = 0;
        for (int k = 0; k < 32; k++) {
            double ref = exp((k % 8) * 0.25) / s;
            if (k / 8 == 1)
                ok += isnan(v[0][k]);
            else if (k / 8 == 2)
                ok += v[0][k] == (k % 8 == 7 ? 1.0f : 0.0f);
            else
                ok += fabs(v[0][k] - ref) <= 0x1p-8 * ref;
        }
        CU_ASSERT_EQUAL(ok, 32);
        free(v[0]);
    }
    remove(path);
}

/* The same with BERT's key-padding mask, [B, 1, 1, S] broadcast over
 * heads and queries: batch 1's mask row is -inf whole, so each of its
 * (head, query) rows is NaN in PyTorch; batch 0 masks its last 3 keys,
 * each row a softmax over its first 5. */
static void test_softmax_over_a_broadcast_input_mask_masking_a_batch_whole_is_nan(void)
{
    const char *text = "graph smb\n"
                       "input %x0: f32[24, 8]\n"
                       "input %eye: f32[8, 8]\n"
                       "input %mask: f32[2, 1, 1, 8]\n"
                       "%m: f32[24, 8] = aten.mm.default(%x0, %eye)\n"
                       "%x: f32[2, 3, 4, 8] = aten.view.default(%m, [2, 3, 4, 8])\n"
                       "%a: f32[2, 3, 4, 8] = aten.add.Tensor(%x, %mask)\n"
                       "%s: f32[2, 3, 4, 8] = aten._softmax.default(%a, -1, False)\n"
                       "%l: f32[2, 3, 4, 8] = aten._log_softmax.default(%a, -1, False)\n"
                       "output %s, %l\n";
    float x[192], mask[16], eye[64];
    for (int k = 0; k < 192; k++)
        x[k] = (float)((k * 7) % 11) * 0.125f;
    for (int k = 0; k < 16; k++)
        mask[k] = k >= 8 || k % 8 >= 5 ? -INFINITY : 0;
    for (int k = 0; k < 64; k++)
        eye[k] = k / 8 == k % 8;
    rt_st_entry e[3] = {{.name = "x0", .dtype = RT_ST_F32, .rank = 2, .shape = {24, 8}, .data = x},
                        {.name = "eye", .dtype = RT_ST_F32, .rank = 2, .shape = {8, 8}, .data = eye},
                        {.name = "mask", .dtype = RT_ST_F32, .rank = 4, .shape = {2, 1, 1, 8}, .data = mask}};
    char path[1024], err[256];
    tu_tmpfile(".safetensors", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, e, 3, err, sizeof err), 0);
    /* the scores from a product: the upload's NaN rows alone, along dim 3 */
    int guarded;
    CU_ASSERT_EQUAL(mask_nan_axis(text, &guarded), 3);
    CU_ASSERT_EQUAL(guarded, 0);
    const char *names[] = {"s", "l"};
    for (int c = 0; c < 2; c++) {
        float *v[2] = {0};
        int64_t n[2] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read_from(text, "smb.txt", both_chips[c], path, 2, names, v, n), 0);
        int ok = 0;
        for (int r = 0; r < 24; r++) {
            double s = 0;
            for (int j = 0; j < 5; j++)
                s += exp(x[r * 8 + j]);
            for (int j = 0; j < 8; j++) {
                int k = r * 8 + j;
                double ref = j < 5 ? exp(x[k]) / s : 0;
                if (r >= 12)
                    ok += isnan(v[0][k]) && isnan(v[1][k]);
                else if (j >= 5)
                    ok += v[0][k] == 0 && v[1][k] <= -0x1p29f;
                else
                    ok += fabs(v[0][k] - ref) <= 0x1p-8 * ref && fabs(v[1][k] - log(ref)) <= 0x1p-7;
            }
        }
        CU_ASSERT_EQUAL(ok, 192);
        free(v[0]);
        free(v[1]);
    }
    remove(path);
}

/* text compiled for the reference chip: input mask's ISA_TF_NANROW axis
 * (-2 without the flag), and whether the decomposed graph guards a
 * softmax on the device (its row max floored, clamp_min, or tested,
 * abs). */
static int mask_nan_axis(const char *text, int *guarded)
{
    char err[1024], path[1024];
    gr_graph *g = gr_graph_parse(text, "mask.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    static chip_config cfg;
    tu_config("spyre", &cfg);
    cc_compile_opts o = {0};
    o.target = &cfg;
    o.dump_after = "decompose";
    tu_tmpfile(".txt", path, sizeof path);
    o.dump = fopen(path, "w");
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    fclose(o.dump);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    isa_program *p = cc_result_take_program(r);
    const isa_tensor *t = &p->tensors[isa_program_find_tensor(p, "mask")];
    int axis = t->flags & ISA_TF_NANROW ? t->nan_axis : -2;
    isa_program_free(p);
    char *dump = tu_read_file(path, NULL);
    *guarded = strstr(dump, "clamp_min") || strstr(dump, "aten.abs");
    free(dump);
    remove(path);
    cc_result_free(r);
    gr_graph_free(g);
    return axis;
}

/* The graph-input masks above are the runtime's to NaN (ISA_TF_NANROW,
 * along the softmax's axis of the mask), so the device has no guard over
 * scores from a product (as BERT's; a plain input added is a mask too): a
 * [rows, S] mask along 1, BERT's [B, 1, 1, S] along 3, a [rows, 1] mask
 * broadcast along the softmax's axis each element, through a view and a
 * positive scale too.  A mask also read elsewhere (an output, a sub,
 * a negative scale, a softmax along another axis) keeps the device's
 * guard and its -inf as the stand-in; so does a softmax over two masks
 * added (each NaN-rowed: a row may be masked whole by both together). */
static void test_an_input_used_only_as_a_softmax_mask_is_nan_rowed_not_guarded(void)
{
    static const struct {
        const char *mid; /* nodes from %mask to %a, the softmax's input */
        const char *mask;
        int axis, guarded;
    } cases[] = {
        {"%a: f32[4, 8] = aten.add.Tensor(%x, %mask)\n", "f32[4, 8]", 1, 0},
        {"%v: f32[4, 1, 8] = aten.view.default(%mask, [4, 1, 8])\n"
         "%w: f32[4, 1, 8] = aten.mul.Tensor(%v, 0.5)\n"
         "%u: f32[4, 8] = aten.view.default(%w, [4, 8])\n"
         "%a: f32[4, 8] = aten.add.Tensor(%u, %x)\n",
         "f32[4, 8]", 1, 0},
        {"%a: f32[4, 8] = aten.add.Tensor(%x, %mask)\n", "f32[4, 1]", -1, 0},
        {"%v: f32[1, 8] = aten.view.default(%mask, [1, 8])\n"
         "%a: f32[4, 8] = aten.add.Tensor(%x, %v)\n",
         "f32[1, 1, 1, 8]", 3, 0},
        {"%a: f32[4, 8] = aten.add.Tensor(%x, %mask)\n"
         "%o: f32[4, 8] = aten.mul.Tensor(%mask, 2.0)\n",
         "f32[4, 8]", -2, 1},
        {"%w: f32[4, 8] = aten.mul.Tensor(%mask, -0.5)\n"
         "%a: f32[4, 8] = aten.add.Tensor(%x, %w)\n",
         "f32[4, 8]", -2, 1},
        {"%t: f32[8, 4] = aten.t.default(%mask)\n"
         "%a: f32[4, 8] = aten.sub.Tensor(%x, %mask)\n",
         "f32[4, 8]", -2, 1},
        {"%a: f32[4, 8] = aten.add.Tensor(%x, %mask)\n"
         "%s0: f32[4, 8] = aten._softmax.default(%a, 0, False)\n",
         "f32[4, 8]", -2, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "graph m\ninput %%q: f32[4, 8]\ninput %%k: f32[8, 8]\ninput %%mask: %s\n"
                 "%%x: f32[4, 8] = aten.mm.default(%%q, %%k)\n%s"
                 "%%s: f32[4, 8] = aten._softmax.default(%%a, 1, False)\noutput %%s%s\n",
                 cases[i].mask, cases[i].mid,
                 strstr(cases[i].mid, "%o:") ? ", %o" : strstr(cases[i].mid, "%s0:") ? ", %s0" : "");
        int guarded, axis = mask_nan_axis(text, &guarded);
        if (axis != cases[i].axis || guarded != cases[i].guarded)
            fprintf(stderr, "case %zu: axis %d guarded %d\n", i, axis, guarded);
        CU_ASSERT_EQUAL(axis, cases[i].axis);
        CU_ASSERT_EQUAL(guarded, cases[i].guarded);
    }
    /* two masks, each NaN-rowed, may mask a row whole only together */
    int guarded;
    CU_ASSERT_EQUAL(mask_nan_axis("graph m2\ninput %q: f32[4, 8]\ninput %k: f32[8, 8]\ninput %mask: f32[4, 8]\n"
                                  "input %mask2: f32[4, 8]\n%x: f32[4, 8] = aten.mm.default(%q, %k)\n"
                                  "%a: f32[4, 8] = aten.add.Tensor(%x, %mask)\n"
                                  "%b: f32[4, 8] = aten.add.Tensor(%a, %mask2)\n"
                                  "%s: f32[4, 8] = aten._softmax.default(%b, 1, False)\noutput %s\n",
                                  &guarded),
                    1);
    CU_ASSERT_EQUAL(guarded, 1);
}

/* A [rows, 1] mask broadcast along the softmax's axis (nanrow=each): its
 * one -inf element masks the row whole, so that row is NaN (the upload
 * writes NaN for the element), the others as the reference's. */
static void test_a_mask_broadcast_along_the_softmax_axis_nans_each_minus_inf_element(void)
{
    const char *text = "graph sme1\n"
                       "input %x0: f32[4, 8]\n"
                       "input %eye: f32[8, 8]\n"
                       "input %mask: f32[4, 1]\n"
                       "%x: f32[4, 8] = aten.mm.default(%x0, %eye)\n"
                       "%a: f32[4, 8] = aten.add.Tensor(%x, %mask)\n"
                       "%s: f32[4, 8] = aten._softmax.default(%a, 1, False)\n"
                       "output %s\n";
    float x[32], eye[64], mask[4] = {0, -INFINITY, -1, 0};
    for (int k = 0; k < 32; k++)
        x[k] = (float)(k % 8) * 0.25f;
    for (int k = 0; k < 64; k++)
        eye[k] = k / 8 == k % 8;
    rt_st_entry e[3] = {{.name = "x0", .dtype = RT_ST_F32, .rank = 2, .shape = {4, 8}, .data = x},
                        {.name = "eye", .dtype = RT_ST_F32, .rank = 2, .shape = {8, 8}, .data = eye},
                        {.name = "mask", .dtype = RT_ST_F32, .rank = 2, .shape = {4, 1}, .data = mask}};
    char path[1024], err[256];
    tu_tmpfile(".safetensors", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, e, 3, err, sizeof err), 0);
    int guarded;
    CU_ASSERT_EQUAL(mask_nan_axis(text, &guarded), -1);
    CU_ASSERT_EQUAL(guarded, 0);
    const char *names[] = {"s"};
    for (int c = 0; c < 2; c++) {
        float *v[1] = {0};
        int64_t n[1] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read_from(text, "sme1.txt", both_chips[c], path, 1, names, v, n), 0);
        double sum = 0;
        for (int j = 0; j < 8; j++)
            sum += exp(j * 0.25);
        int ok = 0;
        for (int k = 0; k < 32; k++)
            ok += k / 8 == 1 ? isnan(v[0][k]) : fabs(v[0][k] - exp((k % 8) * 0.25) / sum) <= 0x1p-8;
        CU_ASSERT_EQUAL(ok, 32);
        free(v[0]);
    }
    remove(path);
}

/* Softmax and log_softmax of x + mask (x row j at column k: k / 4), the
 * mask an input used only there (nanrow=1, or each: a [5, 1] mask), on
 * both chips: PyTorch's softmax row is NaN where the mask row holds a +inf
 * (the row max is inf, inf - inf NaN), a NaN or only -inf, and the upload
 * writes that row NaN, so the device's is NaN exactly there, with no
 * device guard; the other rows as PyTorch's (in double here), within
 * 2^-8 for softmax (values below 1, a few DL16 roundings of 9 significant
 * bits) and 2^-6 for log_softmax (values down to -3.5, the same relative
 * error).  A -inf element's log_softmax is the stand-in (-2^29 or below). */
static void check_mask_rows(const char *mask_type, const float *mask, int64_t nmask, const int *want_nan)
{
    char text[1024];
    snprintf(text, sizeof text,
             "graph smi\ninput %%x0: f32[5, 8]\ninput %%eye: f32[8, 8]\ninput %%mask: %s\n"
             "%%x: f32[5, 8] = aten.mm.default(%%x0, %%eye)\n%%a: f32[5, 8] = aten.add.Tensor(%%x, %%mask)\n"
             "%%s: f32[5, 8] = aten._softmax.default(%%a, 1, False)\n"
             "%%l: f32[5, 8] = aten._log_softmax.default(%%a, 1, False)\noutput %%s, %%l\n",
             mask_type);
    float x[40], eye[64];
    for (int k = 0; k < 40; k++)
        x[k] = (float)(k % 8) * 0.25f;
    for (int k = 0; k < 64; k++)
        eye[k] = k / 8 == k % 8;
    rt_st_entry e[3] = {{.name = "x0", .dtype = RT_ST_F32, .rank = 2, .shape = {5, 8}, .data = x},
                        {.name = "eye", .dtype = RT_ST_F32, .rank = 2, .shape = {8, 8}, .data = eye},
                        {.name = "mask", .dtype = RT_ST_F32, .rank = 2, .shape = {5, nmask / 5}, .data = mask}};
    char path[1024], err[256];
    tu_tmpfile(".safetensors", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, e, 3, err, sizeof err), 0);
    int guarded;
    CU_ASSERT_EQUAL(mask_nan_axis(text, &guarded), nmask == 5 ? -1 : 1);
    CU_ASSERT_EQUAL(guarded, 0);
    const char *names[] = {"s", "l"};
    for (int c = 0; c < 2; c++) {
        float *v[2] = {0};
        int64_t n[2] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read_from(text, "smi.txt", both_chips[c], path, 2, names, v, n), 0);
        int ok = 0;
        for (int r = 0; r < 5; r++) {
            double m[8], mx = -INFINITY, sum = 0;
            for (int k = 0; k < 8; k++) {
                m[k] = x[r * 8 + k] + mask[nmask == 5 ? r : r * 8 + k];
                mx = fmax(mx, m[k]);
            }
            for (int k = 0; k < 8; k++)
                sum += exp(m[k] - mx);
            for (int k = 0; k < 8; k++) {
                float s = v[0][r * 8 + k], l = v[1][r * 8 + k];
                double ls = m[k] - mx - log(sum);
                ok += want_nan[r] ? isnan(s) && isnan(l)
                                  : fabs(s - exp(ls)) <= 0x1p-8 && (isinf(ls) ? l <= -0x1p29f : fabs(l - ls) <= 0x1p-6);
            }
        }
        CU_ASSERT_EQUAL(ok, 40);
        free(v[0]);
        free(v[1]);
    }
    remove(path);
}

static void test_a_plus_inf_or_nan_in_an_input_mask_row_makes_its_softmax_nan_as_pytorch(void)
{
    const float inf = INFINITY, nan = NAN;
    const float rows[40] = {0,    0,    0,    0,    0,    -inf, -inf, -inf, /* in part: numbers */
                            0,    0,    inf,  0,    0,    0,    0,    0,    /* +inf: NaN */
                            inf,  -inf, -inf, -inf, -inf, -inf, -inf, -inf, /* +inf beside -inf: NaN */
                            0,    nan,  0,    0,    0,    0,    0,    0,    /* NaN: NaN */
                            -inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf}; /* whole: NaN */
    check_mask_rows("f32[5, 8]", rows, 40, (const int[]){0, 1, 1, 1, 1});
    const float each[5] = {0, inf, nan, -1, -inf}; /* broadcast along the softmax's axis */
    check_mask_rows("f32[5, 1]", each, 5, (const int[]){0, 1, 1, 0, 1});
}

/* A mask input also read elsewhere (an output of its own) keeps the
 * device's guard: the row masked whole is NaN still, the other rows as
 * the reference's, and the output holds the stand-in for -inf, not NaN. */
static void test_an_input_mask_also_used_elsewhere_keeps_the_device_guard(void)
{
    const char *text = "graph sme\n"
                       "input %x: f32[4, 8]\n"
                       "input %mask: f32[4, 8]\n"
                       "%a: f32[4, 8] = aten.add.Tensor(%x, %mask)\n"
                       "%s: f32[4, 8] = aten._softmax.default(%a, 1, False)\n"
                       "%o: f32[4, 8] = aten.mul.Tensor(%mask, 0.5)\n"
                       "output %s, %o\n";
    float x[32], mask[32];
    for (int k = 0; k < 32; k++) {
        x[k] = (float)(k % 8) * 0.25f;
        mask[k] = k / 8 == 1 ? -INFINITY : 0;
    }
    rt_st_entry e[2] = {{.name = "x", .dtype = RT_ST_F32, .rank = 2, .shape = {4, 8}, .data = x},
                        {.name = "mask", .dtype = RT_ST_F32, .rank = 2, .shape = {4, 8}, .data = mask}};
    char path[1024], err[256];
    tu_tmpfile(".safetensors", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, e, 2, err, sizeof err), 0);
    const char *names[] = {"s", "o"};
    for (int c = 0; c < 2; c++) {
        float *v[2] = {0};
        int64_t n[2] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read_from(text, "sme.txt", both_chips[c], path, 2, names, v, n), 0);
        int ok = 0;
        for (int k = 0; k < 32; k++)
            ok += k / 8 == 1 ? isnan(v[0][k]) && v[1][k] == -0x1p29f : !isnan(v[0][k]) && v[1][k] == 0;
        CU_ASSERT_EQUAL(ok, 32);
        free(v[0]);
        free(v[1]);
    }
    remove(path);
    int guarded;
    CU_ASSERT_EQUAL(mask_nan_axis(text, &guarded), -2);
    CU_ASSERT_EQUAL(guarded, 1);
}

/* The decompositions of dec_index.c and dec_views.c, each against the
 * reference executor's own implementation of the source op (and the
 * integer outputs exactly). */
static void test_argmax_max_with_indices_and_counts_validate_on_both_chips(void)
{
    expect_text_validates_on_both_chips("graph am\n"
                                        "input %x: f32[6, 40]\n"
                                        "%a: i64[6] = aten.argmax.default(%x, 1)\n"
                                        "%b: i64[1, 40] = aten.argmin.default(%x, 0, True)\n"
                                        "%c: i64[] = aten.argmax.default(%x)\n"
                                        "%m: (f32[6], i64[6]) = aten.max.dim(%x, 1)\n"
                                        "%mv: f32[6] = getitem(%m, 0)\n"
                                        "%mi: i64[6] = getitem(%m, 1)\n"
                                        "%n: (f32[40], i64[40]) = aten.min.dim(%x, 0)\n"
                                        "%ni: i64[40] = getitem(%n, 1)\n"
                                        "%mm: (f32[], f32[]) = aten.aminmax.default(%x)\n"
                                        "%lo: f32[] = getitem(%mm, 0)\n"
                                        "%hi: f32[] = getitem(%mm, 1)\n"
                                        "%t: f32[6, 40] = aten.sub.Tensor(%x, 0.5)\n"
                                        "%r: f32[6, 40] = aten.relu.default(%t)\n"
                                        "%z: i64[6] = aten.count_nonzero.dim_IntList(%r, [1])\n"
                                        "%all: f32[] = aten.max.default(%x)\n"
                                        "output %a, %b, %c, %mv, %mi, %ni, %lo, %hi, %z, %all\n");
}

/* cumsum along the last dim, the first and a middle one; cumprod by
 * doubling; mv as a row times the matrix transposed */
static void test_cumsum_by_a_triangular_product_validates_on_both_chips(void)
{
    expect_text_validates_on_both_chips("graph cs\n"
                                        "input %x: f32[24, 50]\n"
                                        "input %y: f32[3, 20, 5]\n"
                                        "input %m: f32[40, 24]\n"
                                        "input %v: f32[24]\n"
                                        "%a: f32[24, 50] = aten.cumsum.default(%x, 1)\n"
                                        "%b: f32[24, 50] = aten.cumsum.default(%x, 0)\n"
                                        "%c: f32[3, 20, 5] = aten.cumsum.default(%y, 1)\n"
                                        "%d: f32[40] = aten.mv.default(%m, %v)\n"
                                        "%e: f32[3, 20, 5] = aten.cumprod.default(%y, 1)\n"
                                        "%f: f32[24, 50] = aten.cumprod.default(%x, 1)\n"
                                        "output %a, %b, %c, %d, %e, %f\n");
}

static void test_roll_flip_rot90_diag_and_trace_validate_on_both_chips(void)
{
    expect_text_validates_on_both_chips("graph rf\n"
                                        "input %x: f32[7, 12]\n"
                                        "input %v: f32[9]\n"
                                        "%a: f32[7, 12] = aten.roll.default(%x, [2, -5], [0, 1])\n"
                                        "%b: f32[7, 12] = aten.roll.default(%x, [3])\n"
                                        "%c: f32[7, 12] = aten.flip.default(%x, [0])\n"
                                        "%d: f32[12, 7] = aten.rot90.default(%x, 1, [0, 1])\n"
                                        "%e: f32[11, 11] = aten.diag.default(%v, 2)\n"
                                        "%f: f32[10, 10] = aten.diag.default(%v, -1)\n"
                                        "%g: f32[7] = aten.diag.default(%x, 1)\n"
                                        "%h: f32[] = aten.trace.default(%x)\n"
                                        "output %a, %b, %c, %d, %e, %f, %g, %h\n");
}

static void test_scatters_of_slices_narrow_and_unfold_validate_on_both_chips(void)
{
    expect_text_validates_on_both_chips("graph ss\n"
                                        "input %x: f32[10, 16]\n"
                                        "input %s: f32[3, 16]\n"
                                        "input %r: f32[16]\n"
                                        "%a: f32[10, 16] = aten.slice_scatter.default(%x, %s, 0, 1, 7, 2)\n"
                                        "%b: f32[10, 16] = aten.select_scatter.default(%x, %r, 0, 4)\n"
                                        "%c: f32[10, 5] = aten.narrow_copy.default(%x, 1, 3, 5)\n"
                                        "%d: f32[4, 16, 4] = aten.unfold.default(%x, 0, 4, 2)\n"
                                        "output %a, %b, %c, %d\n");
}

static void test_addmv_addbmm_norms_and_std_mean_validate_on_both_chips(void)
{
    expect_text_validates_on_both_chips("graph mv\n"
                                        "input %m: f32[20, 32]\n"
                                        "input %v: f32[32]\n"
                                        "input %b: f32[20]\n"
                                        "input %p: f32[3, 20, 8]\n"
                                        "input %q: f32[3, 8, 16]\n"
                                        "input %c: f32[20, 16]\n"
                                        "%a: f32[20] = aten.addmv.default(%b, %m, %v, beta=0.5, alpha=2.0)\n"
                                        "%d: f32[20, 16] = aten.addbmm.default(%c, %p, %q)\n"
                                        "%n2: f32[20] = aten.linalg_vector_norm.default(%m, 2, [1])\n"
                                        "%n1: f32[1, 32] = aten.linalg_vector_norm.default(%m, 1, [0], True)\n"
                                        "%ni: f32[] = aten.linalg_vector_norm.default(%m, inf)\n"
                                        "%n3: f32[20] = aten.norm.ScalarOpt_dim(%m, 3, [1])\n"
                                        "%sm: (f32[20], f32[20]) = aten.std_mean.correction(%m, [1])\n"
                                        "%sd: f32[20] = getitem(%sm, 0)\n"
                                        "%mn: f32[20] = getitem(%sm, 1)\n"
                                        "output %a, %d, %n2, %n1, %ni, %n3, %sd, %mn\n");
}

/* A reduction's per-row op reading an operand whose rows lie inside its
 * sticks (o = sum(y, 2) + x; scatter_add's self added to the sum over
 * index positions): staging it as a tile there summed wrong, so the op is
 * not fused into the reduction and runs as its own pointwise kernel, whose
 * lanes walk the sticks. */
static void test_a_per_row_operand_inside_its_sticks_stays_out_of_the_reduction_and_validates(void)
{
    expect_text_validates_on_both_chips("graph b\n"
                                        "input %x: f32[10, 5]\n"
                                        "input %y: f32[10, 5, 7]\n"
                                        "%r: f32[10, 5] = aten.sum.dim_IntList(%y, [2])\n"
                                        "%o: f32[10, 5] = aten.add.Tensor(%r, %x)\n"
                                        "input %w: f32[6, 20]\n"
                                        "input %z: f32[6, 5]\n"
                                        "%k: (f32[6, 5], i64[6, 5]) = aten.topk.default(%w, 5)\n"
                                        "%ki: i64[6, 5] = getitem(%k, 1)\n"
                                        "%s: f32[6, 20] = aten.scatter_add.default(%w, 1, %ki, %z)\n"
                                        "output %o, %s\n");
}

/* scatter_reduce (a GNN's max or mean over an edge list) ran on the host:
 * one-hot over the index positions, each reduction with and without self;
 * positions no entry reaches (row 6, and columns 4 and 5: the index is
 * narrower than self in dim 1) keep self's.  Index values of duplicates
 * given (computed ones would make the check vacuous). */
static void test_scatter_reduce_by_one_hot_runs_natively_on_both_chips(void)
{
    const char *text = "graph sr\n"
                       "input %x: f32[7, 6]\n"
                       "input %s: f32[30, 4]\n"
                       "input %i: i64[30, 4]\n"
                       "%a: f32[7, 6] = aten.scatter_reduce.two(%x, 0, %i, %s, \"amax\", include_self=False)\n"
                       "%b: f32[7, 6] = aten.scatter_reduce.two(%x, 0, %i, %s, \"amin\")\n"
                       "%m: f32[7, 6] = aten.scatter_reduce.two(%x, 0, %i, %s, \"mean\")\n"
                       "%n: f32[7, 6] = aten.scatter_reduce.two(%x, 0, %i, %s, \"mean\", include_self=False)\n"
                       "%p: f32[7, 6] = aten.scatter_reduce.two(%x, 0, %i, %s, \"prod\", include_self=False)\n"
                       "%u: f32[7, 6] = aten.scatter_reduce.two(%x, 0, %i, %s, \"sum\")\n"
                       "output %a, %b, %m, %n, %p, %u\n";
    float x[42], src[120];
    int64_t idx[120];
    for (int k = 0; k < 42; k++)
        x[k] = (float)((k * 5) % 9) * 0.25f - 1.0f;
    for (int k = 0; k < 120; k++) {
        src[k] = (float)((k * 7) % 13) * 0.125f - 0.75f;
        idx[k] = (k * 3 + k / 4) % 6;
    }
    rt_st_entry e[3] = {{.name = "x", .dtype = RT_ST_F32, .rank = 2, .shape = {7, 6}, .data = x},
                        {.name = "s", .dtype = RT_ST_F32, .rank = 2, .shape = {30, 4}, .data = src},
                        {.name = "i", .dtype = RT_ST_I64, .rank = 2, .shape = {30, 4}, .data = idx}};
    char path[1024], err[256];
    tu_tmpfile(".safetensors", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, e, 3, err, sizeof err), 0);
    gr_graph *g = gr_graph_parse(text, "sr.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    for (int c = 0; c < 2; c++) {
        compile_error(text, both_chips[c], err, sizeof err);
        CU_ASSERT_STRING_EQUAL(err, "");
        CU_ASSERT_EQUAL(run_graph(g, both_chips[c], path, NULL, NULL), 0);
    }
    gr_graph_free(g);
    remove(path);
}

/* GraphSAGE's degree by torch.bincount and a TCN's nn.utils.weight_norm faulted: the host had
 * neither op.  bincount is one-hot over the declared length (a ranged index, minlength past its
 * largest value, and weights), weight_norm v * g / ||v|| per slice along dim 0 and over all of v. */
static void test_bincount_and_weight_norm_run_natively_on_both_chips(void)
{
    const char *text = "graph bw\n"
                       "input %i: i64[30] range=[0, 6]\n"
                       "input %w: f32[30]\n"
                       "input %v: f32[8, 4, 3]\n"
                       "input %g: f32[8, 1, 1]\n"
                       "input %s: f32[]\n"
                       "%c: i64[9] = aten.bincount.default(%i, minlength=9)\n"
                       "%cw: f32[9] = aten.bincount.default(%i, %w, 9)\n"
                       "%n: (f32[8, 4, 3], f32[8, 1, 1]) = aten._weight_norm_interface.default(%v, %g)\n"
                       "%nw: f32[8, 4, 3] = getitem(%n, 0)\n"
                       "%nr: f32[8, 1, 1] = getitem(%n, 1)\n"
                       "%a: (f32[8, 4, 3], f32[]) = aten._weight_norm_interface.default(%v, %s, -1)\n"
                       "%aw: f32[8, 4, 3] = getitem(%a, 0)\n"
                       "output %c, %cw, %nw, %nr, %aw\n";
    char err[512];
    for (int c = 0; c < 2; c++) {
        compile_error(text, both_chips[c], err, sizeof err);
        CU_ASSERT_STRING_EQUAL(err, "");
    }
    expect_text_validates_on_both_chips(text);
}

/* CenterNet's decode (class = index // (H W), pixel = index % (H W) of a topk over the flattened
 * heatmap) ran its integer divisions on the host ("floor_divide only of float tensors"): the
 * quotient's cast is tabulated exact (intexact.c), floor corrected by the remainder's sign.
 * Every rounding and sign of a ranged input; a divisor tensor (two integers under the cast)
 * still goes to the host. */
static void test_integer_division_by_a_number_runs_natively_and_exactly(void)
{
    const char *text = "graph idiv\n"
                       "input %i: i64[4, 50] range=[-300, 300]\n"
                       "%q: i64[4, 50] = aten.floor_divide.default(%i, 7)\n"
                       "%qn: i64[4, 50] = aten.floor_divide.default(%i, -5)\n"
                       "%r: i64[4, 50] = aten.remainder.Scalar(%i, 7)\n"
                       "%rn: i64[4, 50] = aten.remainder.Scalar(%i, -6)\n"
                       "%f: i64[4, 50] = aten.fmod.Scalar(%i, 7)\n"
                       "%dt: i64[4, 50] = aten.div.Tensor_mode(%i, 3, rounding_mode=\"trunc\")\n"
                       "%df: i64[4, 50] = aten.div.Tensor_mode(%i, 3, rounding_mode=\"floor\")\n"
                       "output %q, %qn, %r, %rn, %f, %dt, %df\n";
    char err[512];
    for (int c = 0; c < 2; c++) {
        compile_error(text, both_chips[c], err, sizeof err);
        CU_ASSERT_STRING_EQUAL(err, "");
    }
    expect_text_validates_on_both_chips(text);
    compile_error("graph idt\ninput %i: i64[8] range=[0, 99]\ninput %b: i64[8] range=[1, 9]\n"
                  "%q: i64[8] = aten.floor_divide.default(%i, %b)\noutput %q\n",
                  "spyre", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "test.txt:4: aten.floor_divide.default: integer values"));
}

/* A GAT's aggregation, index_add of 40 edges' messages (4 heads x 8) into 12 nodes, went to
 * the host on spyre-4core ("one row of 40 columns needs 486400 bytes of LX"): along dim 0 it
 * is the one-hot (nodes, edges) times the messages, a product, on both chips; alpha scales it.
 * So is scatter_add by the edge index expanded over the features (GIN's form). */
static void test_index_add_and_scatter_add_along_dim_0_are_products_on_both_chips(void)
{
    const char *text = "graph ia\n"
                       "input %x: f32[12, 4, 8]\n"
                       "input %s: f32[40, 4, 8]\n"
                       "input %i: i64[40] range=[0, 11]\n"
                       "%a: f32[12, 4, 8] = aten.index_add.default(%x, 0, %i, %s, alpha=0.5)\n"
                       "%u: i64[40, 1, 1] = aten.view.default(%i, [40, 1, 1])\n"
                       "%e: i64[40, 4, 8] = aten.expand.default(%u, [40, 4, 8])\n"
                       "%b: f32[12, 4, 8] = aten.scatter_add.default(%x, 0, %e, %s)\n"
                       "output %a, %b\n";
    char err[512];
    for (int c = 0; c < 2; c++) {
        compile_error(text, both_chips[c], err, sizeof err);
        CU_ASSERT_STRING_EQUAL(err, "");
    }
    expect_text_validates_on_both_chips(text);
}

/* An f16 scatter_reduce mean divided by an f32 count, which promoted it:
 * the graph's f16 line was refused ("declared f16 but the op produces
 * f32"). */
static void test_an_f16_scatter_reduce_mean_stays_f16(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph srh\n"
        "input %x: f16[1, 4]\ninput %s: f16[1, 6]\ninput %i: i64[1, 5] range=[0, 3]\n"
        "%m: f16[1, 4] = aten.scatter_reduce.two(%x, 1, %i, %s, \"mean\")\n"
        "%n: f16[1, 4] = aten.scatter_reduce.two(%x, 1, %i, %s, \"mean\", include_self=False)\n"
        "output %m, %n\n");
}

/* eye minus a product (a Kalman filter's I - K H): eye's index comparison
 * fused into the product's epilogue was refused by the back half, and the
 * whole kernel ran on the host; it is kept out of the epilogue instead. */
static void test_eye_after_a_product_runs_natively_on_both_chips(void)
{
    expect_text_runs_natively_and_validates_on_both_chips("graph eyemm\n"
                                                          "input %k: f32[4, 2]\n"
                                                          "input %h: f32[2, 4]\n"
                                                          "%eye: f32[4, 4] = aten.eye.default(4)\n"
                                                          "%mm: f32[4, 4] = aten.mm.default(%k, %h)\n"
                                                          "%s: f32[4, 4] = aten.sub.Tensor(%eye, %mm)\n"
                                                          "output %s\n");
}

static void test_sort_topk_and_gather_by_ranks_and_one_hot_validate_on_both_chips(void)
{
    expect_text_validates_on_both_chips(
                                        "graph st\n"
                                        "input %x: f32[6, 20]\n"
                                        "%s: (f32[6, 20], i64[6, 20]) = aten.sort.default(%x, 1, True)\n"
                                        "%sv: f32[6, 20] = getitem(%s, 0)\n"
                                        "%si: i64[6, 20] = getitem(%s, 1)\n"
                                        "%d: (f32[6, 20], i64[6, 20]) = aten.sort.default(%x, 0)\n"
                                        "%dv: f32[6, 20] = getitem(%d, 0)\n"
                                        "%k: (f32[6, 4], i64[6, 4]) = aten.topk.default(%x, 4)\n"
                                        "%kv: f32[6, 4] = getitem(%k, 0)\n"
                                        "%ki: i64[6, 4] = getitem(%k, 1)\n"
                                        "%gi: i64[6, 5] = aten.slice.Tensor(%si, 1, 0, 5)\n"
                                        "%g: f32[6, 5] = aten.gather.default(%x, 1, %gi)\n"
                                        "output %sv, %si, %dv, %kv, %ki, %g\n");
}

/* nll_loss with targets computed on the device, a weight, an ignored
 * class and a single row (one of them hits ignore_index 6) */
static void test_nll_loss_by_a_one_hot_selection_validates_on_both_chips(void)
{
    expect_text_validates_on_both_chips(
                                        "graph nll\n"
                                        "input %x: f32[7, 10]\n"
                                        "input %v: f32[10]\n"
                                        "input %w: f32[10]\n"
                                        "%t0: i64[7] = aten.arange.default(7)\n"
                                        "%t2: i64[7] = aten.neg.default(%t0)\n"
                                        "%t: i64[7] = aten.add.Tensor(%t2, 9)\n"
                                        "%a: (f32[7], f32[]) = aten.nll_loss_forward.default(%x, %t, None, 0, -100)\n"
                                        "%a0: f32[7] = getitem(%a, 0)\n"
                                        "%b: (f32[], f32[]) = aten.nll_loss_forward.default(%x, %t, %w, 1, 6)\n"
                                        "%b0: f32[] = getitem(%b, 0)\n"
                                        "%b1: f32[] = getitem(%b, 1)\n"
                                        "%s: i64[] = aten.select.int(%t, 0, 2)\n"
                                        "%c: (f32[], f32[]) = aten.nll_loss_forward.default(%v, %s, None, 0, -100)\n"
                                        "%c0: f32[] = getitem(%c, 0)\n"
                                        "%c1: f32[] = getitem(%c, 1)\n"
                                        "output %a0, %b0, %b1, %c0, %c1\n");
}

/* Issue 14: convolutions compile to implicit GEMMs (one PT product per
 * tap over a padded channels-last copy of the input).  Over a set of
 * shapes (1-D, 2-D, stride, padding, dilation, groups, depthwise with a
 * fused relu, 1x1 of stride 1 and 2, a 7x7 stride-2 stem, batch 2, odd
 * sizes, a conv reading a conv's result, a residual add) every output
 * validates against the reference executor, and the grouped, strided,
 * dilated one also against direct loops written here. */
static void test_convolutions_validate_over_strides_pads_dilations_and_groups_on_both_chips(void)
{
    const char *text =
        "graph convs\n"
        "input %x: f32[2, 6, 9, 11]\ninput %w: f32[8, 3, 3, 3]\ninput %b: f32[8]\n"
        "input %x1: f32[1, 4, 17]\ninput %w1: f32[6, 4, 5]\ninput %wd: f32[6, 1, 3, 3]\n"
        "input %xs: f32[1, 3, 21, 19]\ninput %ws: f32[16, 3, 7, 7]\ninput %wp: f32[5, 6, 1, 1]\n"
        "input %w3: f32[6, 6, 3, 3]\n"
        "%y: f32[2, 8, 5, 11] = aten.convolution.default(%x, %w, %b, [2, 1], [1, 2], [1, 2], False, [0, 0], 2)\n"
        "%y1: f32[1, 6, 9] = aten.convolution.default(%x1, %w1, None, [2], [2], [1], False, [0], 1)\n"
        "%yd: f32[2, 6, 9, 11] = aten.convolution.default(%x, %wd, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 6)\n"
        "%r: f32[2, 6, 9, 11] = aten.relu.default(%yd)\n"
        "%ys: f32[1, 16, 11, 10] = aten.convolution.default(%xs, %ws, None, [2, 2], [3, 3], [1, 1], False, [0, 0], 1)\n"
        "%yp: f32[2, 5, 9, 11] = aten.convolution.default(%x, %wp, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "%yq: f32[2, 5, 6, 7] = aten.convolution.default(%x, %wp, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)\n"
        "%c3: f32[2, 6, 9, 11] = aten.convolution.default(%r, %w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
        "%res: f32[2, 6, 9, 11] = aten.add.Tensor(%c3, %x)\n"
        "output %y, %y1, %r, %ys, %yp, %yq, %res\n";
    const char *names[] = {"x", "w", "b", "y"};
    for (int c = 0; c < 2; c++) {
        float *v[4] = {0};
        int64_t n[4] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "convs.txt", both_chips[c], 4, names, v, n), 0);
        int ok = 0;
        for (int i = 0; i < 2 * 8 * 5 * 11; i++) {
            int ow = i % 11, oh = i / 11 % 5, co = i / 55 % 8, bn = i / 440, g = co / 4;
            double ref = v[2][co], mag = fabs(v[2][co]);
            for (int ci = 0; ci < 3; ci++)
                for (int kh = 0; kh < 3; kh++)
                    for (int kw = 0; kw < 3; kw++) {
                        int h = oh * 2 + kh - 1, wi = ow + 2 * kw - 2;
                        if (h < 0 || h >= 9 || wi < 0 || wi >= 11)
                            continue;
                        double p = (double)v[0][((bn * 6 + g * 3 + ci) * 9 + h) * 11 + wi] *
                                   v[1][((co * 3 + ci) * 3 + kh) * 3 + kw];
                        ref += p;
                        mag += fabs(p);
                    }
            /* DL16 operands (2^-10 each), nine stored partial sums: well within 2^-7 of the magnitudes */
            ok += fabs(v[3][i] - ref) <= 0x1p-7 * mag + 1e-6;
        }
        CU_ASSERT_EQUAL(ok, 2 * 8 * 5 * 11);
        for (int i = 0; i < 4; i++)
            free(v[i]);
    }
}

/* A stride-1 conv of one input channel takes the per-channel im2col, not
 * the merged rows: their padded copy, one lane per stick, staged a whole
 * image per row and missed LX from a batch of 12 (32x32) on spyre, of one
 * (3-D, its depths a batch) on spyre-4core, and ran on the host. */
static void test_one_channel_stride_one_convs_run_natively_in_batches(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph c1\ninput %x: f32[12, 1, 32, 32]\ninput %w: f32[4, 1, 3, 3]\ninput %b: f32[4]\n"
        "input %v: f32[1, 1, 7, 8, 4]\ninput %k: f32[1, 1, 4, 3, 4]\n"
        "%y: f32[12, 4, 32, 32] = aten.convolution.default(%x, %w, %b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
        "%z: f32[1, 1, 6, 10, 1] = aten.convolution.default(%v, %k, None, [1, 1, 1], [1, 2, 0], [1, 1, 1], False, "
        "[0, 0, 0], 1)\noutput %y, %z\n");
}

/* Issue 14: a conv of few input channels and no merged rows (ResNet's
 * 7x7 stride-2 stem) takes the im2col over (ci, kh, kw) with each
 * channel's taps padded to a stick (K = 3 x 64 instead of 7 rows of 64),
 * with padding (read through the rows-first copy) and without (x read
 * directly), batch 2 and a bias: every output validates against the
 * reference executor, and the stem-like one against direct loops. */
static void test_few_channel_strided_convs_take_the_per_channel_im2col_and_validate_on_both_chips(void)
{
    const char *text =
        "graph stem\n"
        "input %x: f32[2, 3, 19, 17]\ninput %w: f32[8, 3, 7, 7]\ninput %b: f32[8]\n"
        "input %x2: f32[1, 2, 13, 15]\ninput %w2: f32[4, 2, 5, 5]\n"
        "%y: f32[2, 8, 10, 9] = aten.convolution.default(%x, %w, %b, [2, 2], [3, 3], [1, 1], False, [0, 0], 1)\n"
        "%y2: f32[1, 4, 5, 6] = aten.convolution.default(%x2, %w2, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "output %y, %y2\n";
    char err[1024];
    gr_graph *g = gr_graph_parse(text, "stem.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    FILE *f = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    cc_compile_opts o = {.dump_after = "lower", .dump = f};
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    static char dump[1 << 16];
    rewind(f);
    dump[fread(dump, 1, sizeof dump - 1, f)] = 0;
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(dump, "[2, 10, 9, 3, 64]")); /* xc[n, oh, ow, ci, j] */
    CU_ASSERT_PTR_NOT_NULL(strstr(dump, "[1, 5, 6, 2, 64]"));
    cc_result_free(r);
    gr_graph_free(g);
    const char *names[] = {"x", "w", "b", "y"};
    for (int c = 0; c < 2; c++) {
        float *v[4] = {0};
        int64_t n[4] = {0};
        CU_ASSERT_EQUAL_FATAL(run_and_read(text, "stem.txt", both_chips[c], 4, names, v, n), 0);
        int ok = 0;
        for (int i = 0; i < 2 * 8 * 10 * 9; i++) {
            int ow = i % 9, oh = i / 9 % 10, co = i / 90 % 8, bn = i / 720;
            double ref = v[2][co], mag = fabs(v[2][co]);
            for (int ci = 0; ci < 3; ci++)
                for (int kh = 0; kh < 7; kh++)
                    for (int kw = 0; kw < 7; kw++) {
                        int h = oh * 2 + kh - 3, wi = ow * 2 + kw - 3;
                        if (h < 0 || h >= 19 || wi < 0 || wi >= 17)
                            continue;
                        double p = (double)v[0][((bn * 3 + ci) * 19 + h) * 17 + wi] * v[1][((co * 3 + ci) * 7 + kh) * 7 + kw];
                        ref += p;
                        mag += fabs(p);
                    }
            /* DL16 operands (2^-10 each), one product accumulated in fp32: within 2^-7 of the magnitudes */
            ok += fabs(v[3][i] - ref) <= 0x1p-7 * mag + 1e-6;
        }
        CU_ASSERT_EQUAL(ok, 2 * 8 * 10 * 9);
        for (int i = 0; i < 4; i++)
            free(v[i]);
    }
}

/* index with one index tensor (negative positions wrap), take, index_add,
 * index_select of a 1-D table by computed positions and the positions of
 * repeat_interleave, all one-hot, with indices computed on the device */
static void test_index_take_index_add_and_repeat_positions_validate_on_both_chips(void)
{
    expect_text_validates_on_both_chips(
                                        "graph ix\n"
                                        "input %x: f32[5, 12]\n"
                                        "input %v: f32[30]\n"
                                        "input %s: f32[4, 12]\n"
                                        "%a: i64[4] = aten.arange.default(4)\n"
                                        "%b: i64[4] = aten.mul.Tensor(%a, -2)\n"
                                        "%c: i64[4] = aten.add.Tensor(%b, 3)\n"
                                        "%i: f32[4, 12] = aten.index.Tensor(%x, [%c])\n"
                                        "%j: f32[5, 4] = aten.index.Tensor(%x, [None, %c])\n"
                                        "%t: f32[4] = aten.take.default(%x, %c)\n"
                                        "%d: i64[4] = aten.add.Tensor(%a, 1)\n"
                                        "%e: f32[5, 12] = aten.index_add.default(%x, 0, %d, %s, alpha=0.5)\n"
                                        "%f: f32[4] = aten.index_select.default(%v, 0, %d)\n"
                                        "%r: i64[4] = aten.add.Tensor(%a, 0)\n"
                                        "%p: i64[6] = aten.repeat_interleave.Tensor(%r)\n"
                                        "output %i, %j, %t, %e, %f, %p\n");
}

/* index_put: negative positions, accumulate with every index equal,
 * duplicates without accumulate (the last write wins, as the reference's
 * serial loop), an index on dim 1 with broadcast values */
static void test_index_put_validates_on_both_chips(void)
{
    expect_text_validates_on_both_chips(
                                        "graph ip\n"
                                        "input %x: f32[6, 8]\n"
                                        "input %v: f32[4, 8]\n"
                                        "input %w: f32[4]\n"
                                        "%a: i64[4] = aten.arange.default(4)\n"
                                        "%b: i64[4] = aten.mul.Tensor(%a, 0)\n"
                                        "%c: i64[4] = aten.add.Tensor(%b, 2)\n"
                                        "%d: i64[4] = aten.sub.Tensor(%a, 2)\n"
                                        "%p: f32[6, 8] = aten.index_put.default(%x, [%d], %v)\n"
                                        "%q: f32[6, 8] = aten.index_put.default(%x, [%c], %v, True)\n"
                                        "%r: f32[6, 8] = aten.index_put.default(%x, [%c], %v)\n"
                                        "%z: f32[6, 8] = aten.index_put.default(%x, [None, %a], %w)\n"
                                        "output %p, %q, %r, %z\n");
}

/* unfold's overlapping windows merge a loop running across two dims of
 * the input; an input read only so is not given a stick on another dim,
 * whose views assume no carry between dims (they came back wrong). */
static void test_overlapping_unfold_windows_validate_on_both_chips(void)
{
    expect_text_validates_on_both_chips("graph uf\n"
                                        "input %x: f32[5, 4]\n"
                                        "input %y: f32[4, 5, 5, 5]\n"
                                        "%u: f32[3, 4, 3] = aten.unfold.default(%x, 0, 3, 1)\n"
                                        "%v: f32[2, 5, 5, 5, 3] = aten.unfold.default(%y, 0, 3, 1)\n"
                                        "output %u, %v\n");
}

/* A scalar bias (0-d; one output channel's) is not fused into the
 * product's epilogue, which cannot load a scalar: its add is a pointwise
 * kernel of its own. */
static void test_a_scalar_bias_of_a_product_validates_on_both_chips(void)
{
    expect_text_validates_on_both_chips(
                                        "graph sc\n"
                                        "input %b: f32[]\n"
                                        "input %a: f32[16, 32]\n"
                                        "input %w: f32[32, 24]\n"
                                        "input %v: f32[16]\n"
                                        "input %u: f32[24]\n"
                                        "input %x: f32[1, 3, 9, 9]\n"
                                        "input %k: f32[1, 3, 3, 3]\n"
                                        "input %kb: f32[1]\n"
                                        "%m: f32[16, 24] = aten.addmm.default(%b, %a, %w)\n"
                                        "%r: f32[16, 24] = aten.addr.default(%b, %v, %u)\n"
                                        "%c: f32[1, 1, 7, 7] = aten.convolution.default(%x, %k, %kb, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
                                        "output %m, %r, %c\n");
}

/* scatter with src and a value, scatter.reduce add and multiply (a product
 * by halves), with distinct and with all-equal indices (the last write
 * wins without a reduction, as the reference's serial loop) */
static void test_scatter_and_its_reductions_validate_on_both_chips(void)
{
    expect_text_validates_on_both_chips(
                                        "graph scm\n"
                                        "input %x: f32[6, 8]\n"
                                        "input %s: f32[4, 8]\n"
                                        "input %w: f32[6, 5]\n"
                                        "%a: i64[4] = aten.arange.default(4)\n"
                                        "%b: i64[4, 1] = aten.unsqueeze.default(%a, 1)\n"
                                        "%c: i64[4, 8] = aten.expand.default(%b, [4, 8])\n"
                                        "%e: f32[6, 8] = aten.scatter.src(%x, 0, %c, %s)\n"
                                        "%f: f32[6, 8] = aten.scatter.value(%x, 0, %c, 2.5)\n"
                                        "%g: f32[6, 8] = aten.scatter.reduce(%x, 0, %c, %s, reduce=\"multiply\")\n"
                                        "%z: i64[4, 8] = aten.mul.Tensor(%c, 0)\n"
                                        "%h: f32[6, 8] = aten.scatter.reduce(%x, 0, %z, %s, reduce=\"multiply\")\n"
                                        "%k: f32[6, 8] = aten.scatter.src(%x, 0, %z, %s)\n"
                                        "%m: f32[6, 8] = aten.scatter.reduce(%x, 0, %z, %s, reduce=\"add\")\n"
                                        "output %e, %f, %g, %h, %k, %m\n");
}

/* Hugging Face's top-p filter scatters a bool mask back to vocabulary
 * order (remove.scatter(1, sorted_indices, remove)): the one-hot sum of a
 * bool src is an integer, and the decomposition declared it bool, so
 * the graph did not load ("declared bool but the op produces i64"). */
static void test_scatter_of_a_bool_mask_runs_natively_on_both_chips(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph scb\n"
        "input %x: f32[3, 12]\n"
        "%v: f32[3, 12] = aten.neg.default(%x)\n"
        "%s: (f32[3, 12], i64[3, 12]) = aten.sort.default(%x)\n"
        "%i: i64[3, 12] = getitem(%s, 1)\n"
        "%m: bool[3, 12] = aten.lt.Scalar(%x, 0.2)\n"
        "%b: bool[3, 12] = aten.scatter.src(%m, 1, %i, %m)\n"
        "%y: f32[3, 12] = aten.masked_fill.Scalar(%v, %b, -inf)\n"
        "output %b, %y\n");
}

/* fuzz40: a gather, take or masked_fill of a bool tensor is bool; the
 * one-hot's where beside the scalar 0 and its sum made it i64, and the
 * graph did not load ("declared bool but the op produces i64"). */
static void test_gather_take_masked_fill_of_bools_run_natively_on_both_chips(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph gbm\n"
        "input %x: f32[3, 12]\n"
        "%s: (f32[3, 12], i64[3, 12]) = aten.sort.default(%x)\n"
        "%i: i64[3, 12] = getitem(%s, 1)\n"
        "%m: bool[3, 12] = aten.lt.Scalar(%x, 0.2)\n"
        "%g: bool[3, 12] = aten.gather.default(%m, 1, %i)\n"
        "%t: bool[3, 12] = aten.take.default(%m, %i)\n"
        "%f: bool[3, 12] = aten.masked_fill.Scalar(%m, %g, 3)\n"
        "output %g, %t, %f\n");
}

/* index_copy off a state (a cache cloned from an input, written at an
 * index input's positions, duplicates included: the last write wins as in
 * PyTorch's serial loop) runs natively as scatter's one-hot; it was
 * left to the host ("does not lower aten.index_copy"). */
static void test_index_copy_runs_natively_on_both_chips(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph ixc\n"
        "input %c: f32[2, 4, 6, 8]\n"
        "input %s: f32[2, 4, 3, 8]\n"
        "%a: i64[3] = aten.arange.default(3)\n"
        "%p: i64[3] = aten.mul.Tensor(%a, 2)\n"
        "%z: i64[3] = aten.mul.Tensor(%a, 0)\n"
        "%y: f32[2, 4, 6, 8] = aten.index_copy.default(%c, 2, %p, %s)\n"
        "%w: f32[2, 4, 6, 8] = aten.index_copy.default(%c, -2, %z, %s)\n"
        "output %y, %w\n");
}

/* Issue 14: convs whose windows tile their input (ViT's 16x16 stride-16
 * patch embedding of 3 channels, with a bias; two channels with 50x3
 * windows, K = 300) are one product each over an im2col copy, and validate on both
 * chips against the reference's bound of one product (no stored partial
 * sum: docs/validation.md, "Convolution"). */
static void test_convs_whose_windows_tile_their_input_validate_on_both_chips(void)
{
    expect_text_runs_natively_and_validates_on_both_chips(
        "graph patches\n"
        "input %x: f32[1, 3, 64, 48]\ninput %w: f32[32, 3, 16, 16]\ninput %b: f32[32]\n"
        "input %x1: f32[1, 2, 100, 48]\ninput %w1: f32[2, 2, 50, 3]\n"
        "%y: f32[1, 32, 4, 3] = aten.convolution.default(%x, %w, %b, [16, 16], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "%y1: f32[1, 2, 2, 16] = aten.convolution.default(%x1, %w1, None, [50, 3], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "output %y, %y1\n");
}

/* Issue 14: a ResNet downsample block (a 3x3 stride-2 conv plus a 1x1
 * stride-2 conv scaled by a [C, 1, 1] tensor, added, relu'd) validates on
 * both chips.  The 1x1 conv is one product over m = oh*ow, its epilogue
 * the NCHW residual add: the back half splits m between cores only at
 * whole sticks of that result (rows of 28: core 0 wrote 10 or 14 of a
 * stick's 28 and the kernel was refused), and the scale, read only in the
 * epilogue, is sticked on its channels (it was refused as needing a
 * restickify). */
static void test_a_resnet_downsample_block_validates_on_both_chips(void)
{
    const char *text =
        "graph down\ninput %x: f32[1, 16, 56, 56]\ninput %w: f32[32, 16, 3, 3]\ninput %wd: f32[32, 16, 1, 1]\n"
        "input %s: f32[32, 1, 1]\n"
        "%c: f32[1, 32, 28, 28] = aten.convolution.default(%x, %w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)\n"
        "%d: f32[1, 32, 28, 28] = aten.convolution.default(%x, %wd, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "%ds: f32[1, 32, 28, 28] = aten.mul.Tensor(%d, %s)\n"
        "%a: f32[1, 32, 28, 28] = aten.add.Tensor(%c, %ds)\n"
        "%r: f32[1, 32, 28, 28] = aten.relu.default(%a)\noutput %r\n";
    const char *names[] = {"r"};
    for (int c = 0; c < 2; c++) {
        float *v = NULL;
        int64_t n = 0;
        CU_ASSERT_EQUAL(run_and_read(text, "down.txt", both_chips[c], 1, names, &v, &n), 0);
        CU_ASSERT_EQUAL(n, 32 * 28 * 28);
        free(v);
    }
}

/* Issue 14: a value between convs (a scaled relu, a residual add and
 * relu, each read by a conv and another op) is realized channels-last,
 * (n, h, w, c) as a conv's y, and read through the permuted map by the
 * next conv's copy, the residual add, a mean over (h, w) and a permute:
 * every output validates on both chips. */
static void test_values_between_convs_realized_channels_last_validate_on_both_chips(void)
{
    const char *text =
        "graph blocks\n"
        "input %x: f32[1, 8, 12, 12]\n"
        "input %w1: f32[16, 8, 3, 3]\n"
        "input %w2: f32[16, 16, 3, 3]\n"
        "input %w3: f32[16, 16, 3, 3]\n"
        "input %s: f32[16, 1, 1]\n"
        "%c1: f32[1, 16, 12, 12] = aten.convolution.default(%x, %w1, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
        "%b1: f32[1, 16, 12, 12] = aten.mul.Tensor(%c1, %s)\n"
        "%r1: f32[1, 16, 12, 12] = aten.relu.default(%b1)\n"
        "%c2: f32[1, 16, 12, 12] = aten.convolution.default(%r1, %w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
        "%a: f32[1, 16, 12, 12] = aten.add.Tensor(%c2, %r1)\n"
        "%r2: f32[1, 16, 12, 12] = aten.relu.default(%a)\n"
        "%c3: f32[1, 16, 6, 6] = aten.convolution.default(%r2, %w3, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)\n"
        "%m: f32[1, 16] = aten.mean.dim(%r2, [-1, -2])\n"
        "%p: f32[1, 16, 12, 12] = aten.permute.default(%r2, [0, 1, 3, 2])\n"
        "%q: f32[1, 16, 12, 12] = aten.mul.Tensor(%p, 2.0)\n"
        "output %c3, %m, %q\n";
    const char *names[] = {"c3"};
    for (int c = 0; c < 2; c++) {
        float *v = NULL;
        int64_t n = 0;
        CU_ASSERT_EQUAL(run_and_read(text, "blocks.txt", both_chips[c], 1, names, &v, &n), 0);
        CU_ASSERT_EQUAL(n, 16 * 6 * 6);
        free(v);
    }
}

/* A 3x3 conv's weight, copied into wr[kh, kw, ci, co] by one loop over the
 * nine taps (kh and kw merged), is sticked on its output channels: that
 * loop carries from kw into kh, away from the stick, which stick views
 * compute exactly.  It compiles without a host op (it fell back, needing
 * 3 MB of LX, when any carry kept the default stick) and validates.  (x comes
 * channels-last: an NCHW graph input read by the padded copy, at a
 * negative offset, keeps its default stick, staged through LX, which the
 * 4-core chip's LX refuses at 64 channels.) */
static void test_a_conv_weight_read_over_merged_taps_runs_on_the_device_on_both_chips(void)
{
    const char *text = "graph cw\n"
                       "input %x: f32[1, 12, 12, 64]\n"
                       "input %w: f32[64, 64, 3, 3]\n"
                       "%r: f32[1, 64, 12, 12] = aten.permute.default(%x, [0, 3, 1, 2])\n"
                       "%y: f32[1, 64, 12, 12] = aten.convolution.default(%r, %w, None, [1, 1], [1, 1], [1, 1], False, "
                       "[0, 0], 1)\n"
                       "output %y\n";
    expect_text_runs_natively_and_validates_on_both_chips(text);
}

/* ResNet-18's layer2.0 block (a 3x3 stride-2 conv, a 3x3 conv, a 1x1
 * stride-2 downsample, batch norms, the residual add and relu) runs
 * natively and validates on both chips.  The add and relu, stored NCHW
 * (sticked on the width the product's M walks), are not the downsample's
 * epilogue: they ran there through a staged copy of the whole result,
 * which the 4-core chip's LX does not hold, and split over M on 32 cores a
 * core wrote 14 of a stick's 28 elements (a product storing a staged
 * result now keeps M on one row of cores). */
static void test_resnet18_layer2_block_runs_natively_on_both_chips(void)
{
    const char *text =
        "graph l20\n"
        "input %relu_4: f32[1, 64, 56, 56]\n"
        "input %bn1_bias: f32[128]\n"
        "input %bn1_running_mean: f32[128]\n"
        "input %rv_bn1_running_var: f32[128]\n"
        "input %bn1_weight: f32[128]\n"
        "input %bn2_bias: f32[128]\n"
        "input %bn2_running_mean: f32[128]\n"
        "input %rv_bn2_running_var: f32[128]\n"
        "input %bn2_weight: f32[128]\n"
        "input %conv1_weight: f32[128, 64, 3, 3]\n"
        "input %conv2_weight: f32[128, 128, 3, 3]\n"
        "input %downsample_0_weight: f32[128, 64, 1, 1]\n"
        "input %downsample_1_bias: f32[128]\n"
        "input %downsample_1_running_mean: f32[128]\n"
        "input %rv_downsample_1_running_var: f32[128]\n"
        "input %downsample_1_weight: f32[128]\n"
        "%sq_bn1_running_var: f32[128] = aten.mul.Tensor(%rv_bn1_running_var, %rv_bn1_running_var)\n"
        "%bn1_running_var: f32[128] = aten.add.Tensor(%sq_bn1_running_var, 1.0)\n"
        "%sq_bn2_running_var: f32[128] = aten.mul.Tensor(%rv_bn2_running_var, %rv_bn2_running_var)\n"
        "%bn2_running_var: f32[128] = aten.add.Tensor(%sq_bn2_running_var, 1.0)\n"
        "%sq_downsample_1_running_var: f32[128] = aten.mul.Tensor(%rv_downsample_1_running_var, %rv_downsample_1_running_var)\n"
        "%downsample_1_running_var: f32[128] = aten.add.Tensor(%sq_downsample_1_running_var, 1.0)\n"
        "%convolution_5: f32[1, 128, 28, 28] = aten.convolution.default(%relu_4, %conv1_weight, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)\n"
        "%native_batch_norm_5: (f32[1, 128, 28, 28], f32[0], f32[0]) = aten.native_batch_norm.default(%convolution_5, %bn1_weight, %bn1_bias, %bn1_running_mean, %bn1_running_var, False, 0.1, 1e-05)\n"
        "%getitem_17: f32[1, 128, 28, 28] = getitem(%native_batch_norm_5, 0)\n"
        "%relu_5: f32[1, 128, 28, 28] = aten.relu.default(%getitem_17)\n"
        "%convolution_6: f32[1, 128, 28, 28] = aten.convolution.default(%relu_5, %conv2_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
        "%native_batch_norm_6: (f32[1, 128, 28, 28], f32[0], f32[0]) = aten.native_batch_norm.default(%convolution_6, %bn2_weight, %bn2_bias, %bn2_running_mean, %bn2_running_var, False, 0.1, 1e-05)\n"
        "%getitem_20: f32[1, 128, 28, 28] = getitem(%native_batch_norm_6, 0)\n"
        "%convolution_7: f32[1, 128, 28, 28] = aten.convolution.default(%relu_4, %downsample_0_weight, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "%native_batch_norm_7: (f32[1, 128, 28, 28], f32[0], f32[0]) = aten.native_batch_norm.default(%convolution_7, %downsample_1_weight, %downsample_1_bias, %downsample_1_running_mean, %downsample_1_running_var, False, 0.1, 1e-05)\n"
        "%getitem_23: f32[1, 128, 28, 28] = getitem(%native_batch_norm_7, 0)\n"
        "%add_2: f32[1, 128, 28, 28] = aten.add.Tensor(%getitem_20, %getitem_23)\n"
        "%relu_6: f32[1, 128, 28, 28] = aten.relu.default(%add_2)\n"
        "%t: f32[1, 128, 28, 28] = aten.mul.Tensor(%relu_6, %relu_6)\n"
        "output %t\n";
    expect_text_runs_natively_and_validates_on_both_chips(text);
}

/* A 3x3 conv of a computed NCHW input (16 channels of 48 x 14): its
 * channels-last copy, reading across the input's sticks, would stage the
 * sticks its 16 channels span, more than the 4-core chip's LX holds per
 * row; there it goes through the rows-first copy (on the 32-core chip,
 * where the span fits, it does not) and runs without a host op. */
static void test_a_conv_input_whose_channels_span_lx_is_copied_rows_first(void)
{
    const char *text = "graph rf\n"
                       "input %x: f32[1, 16, 48, 14]\n"
                       "input %w: f32[16, 16, 3, 3]\n"
                       "%r: f32[1, 16, 48, 14] = aten.relu.default(%x)\n"
                       "%y: f32[1, 16, 48, 14] = aten.convolution.default(%r, %w, None, [1, 1], [1, 1], [1, 1], False, "
                       "[0, 0], 1)\n"
                       "output %y\n";
    expect_text_runs_natively_and_validates_on_both_chips(text);
}

/* MobileNetV2's inverted residual, cut down: an NCHW input added to a 1x1
 * conv's channels-last product.  The add reads the input across n, which
 * an epilogue cannot restickify ("an epilogue operand of r needs a
 * restickify"): it stays out of the product's kernel, runs natively and
 * validates on both chips. */
static void test_an_nchw_residual_of_a_conv_product_stays_out_of_its_epilogue(void)
{
    const char *text =
        "graph ir\n"
        "input %x: f32[1, 8, 14, 14]\ninput %w1: f32[16, 8, 1, 1]\ninput %w2: f32[8, 16, 1, 1]\n"
        "%r: f32[1, 8, 14, 14] = aten.relu.default(%x)\n"
        "%a: f32[1, 16, 14, 14] = aten.convolution.default(%r, %w1, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "%h: f32[1, 16, 14, 14] = aten.hardtanh.default(%a, 0.0, 6.0)\n"
        "%b: f32[1, 8, 14, 14] = aten.convolution.default(%h, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "%y: f32[1, 8, 14, 14] = aten.add.Tensor(%r, %b)\n"
        "%z: f32[1, 16, 14, 14] = aten.convolution.default(%y, %w1, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "output %z\n";
    expect_text_runs_natively_and_validates_on_both_chips(text);
}

/* A value returned twice, an input returned, and a no-op view (a flip of
 * a size-1 dimension) returned beside its source: each output is read back
 * from a tensor of its own and checked against the reference. */
static void test_duplicate_and_aliased_outputs_are_each_read_back(void)
{
    expect_text_validates_on_both_chips("graph twice\ninput %x: f32[4, 8]\n%y: f32[4, 8] = aten.exp.default(%x)\n"
                                        "output %y, %y\n");
    expect_text_validates_on_both_chips("graph input_out\ninput %x: f32[4, 8]\n"
                                        "%y: f32[4, 8] = aten.exp.default(%x)\noutput %y, %x\n");
    expect_text_validates_on_both_chips("graph input_twice\ninput %x: f32[4, 8]\noutput %x, %x\n");
    expect_text_validates_on_both_chips("graph flip1\ninput %x: f32[4, 1]\n%y: f32[4, 1] = aten.exp.default(%x)\n"
                                        "%z: f32[4, 1] = aten.flip.default(%y, [1])\noutput %y, %z\n");
    expect_text_validates_on_both_chips("graph flip1_first\ninput %x: f32[4, 1]\n"
                                        "%y: f32[4, 1] = aten.exp.default(%x)\n"
                                        "%z: f32[4, 1] = aten.flip.default(%y, [1])\noutput %z, %y, %z\n");
}

int main(void)
{
    static const tu_test tests[] = {
        {"values between convs realized channels-last validate on both chips",
         test_values_between_convs_realized_channels_last_validate_on_both_chips},
        {"a resnet downsample block validates on both chips", test_a_resnet_downsample_block_validates_on_both_chips},
        {"convs whose windows tile their input validate on both chips",
         test_convs_whose_windows_tile_their_input_validate_on_both_chips},
        {"convolutions validate over strides, pads, dilations and groups on both chips",
         test_convolutions_validate_over_strides_pads_dilations_and_groups_on_both_chips},
        {"one channel stride one convs run natively in batches", test_one_channel_stride_one_convs_run_natively_in_batches},
        {"a global max pool without indices compiles quickly", test_a_global_max_pool_without_indices_compiles_quickly},
        {"few-channel strided convs take the per-channel im2col and validate on both chips",
         test_few_channel_strided_convs_take_the_per_channel_im2col_and_validate_on_both_chips},
        {"nan_to_num's replacements rank as PyTorch's on both chips",
         test_nan_to_num_replacements_rank_as_pytorchs_on_both_chips},
        {"infinities and NaNs are found and replaced on both chips",
         test_infinities_and_nans_are_found_and_replaced_on_both_chips},
        {"nan_to_num with default replacements runs natively on both chips",
         test_nan_to_num_with_default_replacements_runs_natively_on_both_chips},
        {"a column sum into sticks of 24 splits by whole sticks", test_a_column_sum_into_sticks_of_24_splits_by_whole_sticks},
        {"an einsum operand with a trailing one runs natively on both chips",
         test_an_einsum_operand_with_a_trailing_one_runs_natively_on_both_chips},
        {"index_put with several index tensors runs natively on both chips",
         test_index_put_with_several_index_tensors_runs_natively_on_both_chips},
        {"index_put of several empty indices is x on both chips", test_index_put_of_several_empty_indices_is_x_on_both_chips},
        {"an integer sort of keys up to 95 runs natively on both chips",
         test_an_integer_sort_of_keys_up_to_95_runs_natively_on_both_chips},
        {"softmax of a row masked whole is NaN as PyTorch", test_softmax_of_a_row_masked_whole_is_nan_as_pytorch},
        {"softmax masked with finfo.min is PyTorch's", test_softmax_masked_with_finfo_min_is_pytorchs},
        {"clamp with min above max or a NaN bound is as PyTorch", test_clamp_with_min_above_max_or_a_nan_bound_is_as_pytorch},
        {"remainder and fmod by an infinity are as PyTorch", test_remainder_and_fmod_by_an_infinity_are_as_pytorch},
        {"fmod and remainder by an infinity of big and infinite values are as PyTorch",
         test_fmod_and_remainder_by_an_infinity_of_big_and_infinite_values_are_as_pytorch},
        {"a mask constant beyond DL16 is the stand-in", test_a_mask_constant_beyond_dl16_is_the_stand_in},
        {"finite inputs DL16 holds are not stand-ins", test_finite_inputs_dl16_holds_are_not_stand_ins},
        {"softmax of a row masked whole with a finite value is uniform",
         test_softmax_of_a_row_masked_whole_with_a_finite_value_is_uniform},
        {"softmax over an input mask masking a row whole is NaN", test_softmax_over_an_input_mask_masking_a_row_whole_is_nan},
        {"softmax over a broadcast input mask masking a batch whole is NaN",
         test_softmax_over_a_broadcast_input_mask_masking_a_batch_whole_is_nan},
        {"an input used only as a softmax mask is NaN-rowed, not guarded",
         test_an_input_used_only_as_a_softmax_mask_is_nan_rowed_not_guarded},
        {"a mask broadcast along the softmax axis NaNs each -inf element",
         test_a_mask_broadcast_along_the_softmax_axis_nans_each_minus_inf_element},
        {"a +inf or NaN in an input mask row makes its softmax NaN as PyTorch",
         test_a_plus_inf_or_nan_in_an_input_mask_row_makes_its_softmax_nan_as_pytorch},
        {"an input mask also used elsewhere keeps the device guard",
         test_an_input_mask_also_used_elsewhere_keeps_the_device_guard},
        {"arctangents by a polynomial are within DL16 precision on both chips",
         test_arctangents_by_a_polynomial_are_within_dl16_precision_on_both_chips},
        {"rounding functions are exact on the device on both chips",
         test_rounding_functions_are_exact_on_the_device_on_both_chips},
        {"a product or sum over no element gives zeros or the bias on both chips",
         test_a_product_or_sum_over_no_element_gives_zeros_or_the_bias_on_both_chips},
        {"graphs with an empty batch run to empty outputs on both chips",
         test_graphs_with_an_empty_batch_run_to_empty_outputs_on_both_chips},
        {"empty inputs feed cat, reshape and mean on both chips", test_empty_inputs_feed_cat_reshape_and_mean_on_both_chips},
        {"negative mode pads crop, then pad, on both chips", test_negative_mode_pads_crop_then_pad_on_both_chips},
        {"nearest upsampling of three axes validates on both chips",
         test_nearest_upsampling_of_three_axes_validates_on_both_chips},
        {"expand_copy runs as expand on both chips", test_expand_copy_runs_as_expand_on_both_chips},
        {"aminmax of a 0-d tensor kept is one element on both chips",
         test_aminmax_of_a_0d_tensor_kept_is_one_element_on_both_chips},
        {"a constant pad of an empty input is the value on both chips",
         test_a_constant_pad_of_an_empty_input_is_the_value_on_both_chips},
        {"reductions over dim 0 of a 0-d tensor give the element on both chips",
         test_reductions_over_dim_0_of_a_0d_tensor_give_the_element_on_both_chips},
        {"outputs that are inputs or views of inputs run and validate on both chips",
         test_outputs_that_are_inputs_or_views_of_inputs_run_and_validate_on_both_chips},
        {"a constant output validates against its fp32 value on both chips",
         test_a_constant_output_validates_against_its_fp32_value_on_both_chips},
        {"bool masks cast to integers and counted are exact on both chips",
         test_bool_masks_cast_to_integers_and_counted_are_exact_on_both_chips},
        {"integers beyond DL16's exact range are a clear error", test_integers_beyond_dl16s_exact_range_are_a_clear_error},
        {"an integer input's declared range bounds its sum on both chips",
         test_an_integer_inputs_declared_range_bounds_its_sum_on_both_chips},
        {"an input outside its declared range is refused at launch",
         test_an_input_outside_its_declared_range_is_refused_at_launch},
        {"integer inputs past DL16's exact integers are exact or refused",
         test_integer_inputs_past_dl16s_exact_integers_are_exact_or_refused},
        {"bf16 and f16 outputs are narrowed toward zero like the chip",
         test_bf16_and_f16_outputs_are_narrowed_toward_zero_like_the_chip},
        {"statistics over no element are PyTorch's on both chips",
         test_statistics_over_no_element_are_pytorchs_on_both_chips},
        {"names of any length compile and run", test_names_of_any_length_compile_and_run},
        {"lx_planning_beats_no_lx_plan_on_softmax", test_lx_planning_beats_no_lx_plan_on_softmax},
        {"the estimate of each mlp kernel is within twice its simulated span",
         test_the_estimate_of_each_mlp_kernel_is_within_twice_its_simulated_span},
        {"a graph of host ops alone compiles on both chips", test_a_graph_of_host_ops_alone_compiles_on_both_chips},
        {"a product of many dram pieces split over two threads writes one thread's program",
         test_a_product_of_many_dram_pieces_split_over_two_threads_writes_one_threads_program},
        {"an uneven batch split leaves its result in dram and validates",
         test_an_uneven_batch_split_leaves_its_result_in_dram_and_validates},
        {"a batched product whose result stays in lx is priced without its dram write",
         test_a_batched_product_whose_result_stays_in_lx_is_priced_without_its_dram_write},
        {"the estimate of a product waiting on dram per k chunk is within a quarter",
         test_the_estimate_of_a_product_waiting_on_dram_per_k_chunk_is_within_a_quarter},
        {"the estimate of a product whose A stays in LX counts no DRAM bytes for it",
         test_the_estimate_of_a_product_whose_a_stays_in_lx_counts_no_dram_bytes_for_it},
        {"a short product's batch split stages only each core's part of B",
         test_a_short_products_batch_split_stages_only_each_cores_part_of_b},
        {"a 64-row product is split over cores when its DRAM waits dominate",
         test_a_64_row_product_is_split_over_cores_when_its_dram_waits_dominate},
        {"a row kernel takes the split of readers in a row", test_a_row_kernel_takes_the_split_of_readers_in_a_row},
        {"a product whose DRAM waits dominate splits K and N over more cores",
         test_a_product_whose_dram_waits_dominate_splits_k_and_n_over_more_cores},
        {"a product of one block a core is estimated in series and loses to the ring",
         test_a_product_of_one_block_a_core_is_estimated_in_series_and_loses_to_the_ring},
        {"a row kernel of few sticks takes the cores its simulated span is best on",
         test_a_row_kernel_of_few_sticks_takes_the_cores_its_simulated_span_is_best_on},
        {"a row kernel whose result stays only in lx is divided without its dram write",
         test_a_row_kernel_whose_result_stays_only_in_lx_is_divided_without_its_dram_write},
        {"a row kernel of one dma a chunk takes a core count near its best span",
         test_a_row_kernel_of_one_dma_a_chunk_takes_a_core_count_near_its_best_span},
        {"a transpose of many runs of rows is spread over more cores than two",
         test_a_transpose_of_many_runs_of_rows_is_spread_over_more_cores_than_two},
        {"the estimates of transformer_small on 4 cores are within half to twice",
         test_the_estimates_of_transformer_small_on_4_cores_are_within_half_to_twice},
        {"the estimate of a transpose counts a dma per run of rows",
         test_the_estimate_of_a_transpose_counts_a_dma_per_run_of_rows},
        {"the estimate of a softmax row kernel counts its sfp instructions as emitted",
         test_the_estimate_of_a_softmax_row_kernel_counts_its_sfp_instructions_as_emitted},
        {"mlp runs and matches the reference and PyTorch on both chips",
         test_mlp_runs_and_matches_reference_and_pytorch_on_both_chips},
        {"a softmax graph validates on both chips", test_softmax_graph_validates_on_both_chips},
        {"a reduction plus a scalar tensor gives every row its own value on both chips",
         test_a_reduction_plus_a_scalar_tensor_gives_every_row_its_own_value_on_both_chips},
        {"a per-row result of a broadcast operand alone gives every row on both chips",
         test_a_per_row_result_of_a_broadcast_operand_alone_gives_every_row_on_both_chips},
        {"pixel_shuffle and unshuffle run natively and validate", test_pixel_shuffle_and_unshuffle_run_natively_and_validate},
        {"a bmm reads through an unsqueeze and flatten of a transpose",
         test_a_bmm_reads_through_an_unsqueeze_and_flatten_of_a_transpose},
        {"transposed convolutions run natively and validate", test_transposed_convolutions_run_natively_and_validate},
        {"long 1-D convolutions run natively and validate", test_long_1d_convolutions_run_natively_and_validate},
        {"3-D convolutions run natively and validate", test_3d_convolutions_run_natively_and_validate},
        {"grouped convolutions run natively and validate", test_grouped_convolutions_run_natively_and_validate},
        {"3-D transposed convolutions run natively and validate",
         test_3d_transposed_convolutions_run_natively_and_validate},
        {"an embedding of computed indices runs natively and validates",
         test_an_embedding_of_computed_indices_runs_natively_and_validates},
        {"one-channel convs run natively and validate", test_one_channel_convs_run_natively_and_validate},
        {"one-channel dilated and 1x1 convs are one NCHW product",
         test_one_channel_dilated_and_1x1_convs_are_one_nchw_product},
        {"a strided 1x1 one-channel conv validates", test_a_strided_1x1_one_channel_conv_validates},
        {"a summing conv tap splits its batch as the taps it reads",
         test_a_summing_conv_tap_splits_its_batch_as_the_taps_it_reads},
        {"3-D pools run natively and validate", test_3d_pools_run_natively_and_validate},
        {"a NaN in a max or a min is NaN as PyTorch", test_a_nan_in_a_max_or_a_min_is_nan_as_pytorch},
        {"nearest-exact upsampling runs natively and validates", test_nearest_exact_upsampling_runs_natively_and_validates},
        {"an output reshaped from a fused buffer runs and validates",
         test_an_output_reshaped_from_a_fused_buffer_runs_and_validates},
        {"a transposed conv with a block of rows without spans validates",
         test_a_transposed_conv_with_a_block_of_rows_without_spans_validates},
        {"a transposed conv kernel a multiple of its stride runs as sums",
         test_a_transposed_conv_kernel_a_multiple_of_its_stride_runs_as_sums},
        {"a grouped conv sharing a stick is not split by group", test_a_grouped_conv_sharing_a_stick_is_not_split_by_group},
        {"an mv stored in short rows is not split mid-stick", test_an_mv_stored_in_short_rows_is_not_split_mid_stick},
        {"a conv one tap wide through im2col runs natively", test_a_conv_one_tap_wide_through_im2col_runs_natively},
        {"a transposed conv of 81 phases validates", test_a_transposed_conv_of_81_phases_validates},
        {"a long transposed conv interleaves by blocks", test_a_long_transposed_conv_interleaves_by_blocks},
        {"a transposed conv declared with another extent is refused",
         test_a_transposed_conv_declared_with_another_extent_is_refused},
        {"a pixel_shuffle factor squared past 64 bits is refused",
         test_a_pixel_shuffle_factor_squared_past_64_bits_is_refused},
        {"matmuls on all cores broadcast B over the ring and validate",
         test_matmuls_on_all_cores_broadcast_b_over_the_ring_and_validate},
        {"matmuls on a grid over the ring share A and B and validate",
         test_matmuls_on_a_grid_over_the_ring_share_a_and_b_and_validate},
        {"a grid over the ring with uneven parts and DRAM operands validates",
         test_a_grid_over_the_ring_with_uneven_parts_and_dram_operands_validates},
        {"grid over the ring regressions from fuzzing validate", test_grid_over_the_ring_regressions_from_fuzzing_validate},
        {"a grid over the ring sends A rows in groups of chunks and validates",
         test_a_grid_over_the_ring_sends_a_rows_in_groups_of_chunks_and_validates},
        {"a grid over the ring streams B in K chunks and validates",
         test_a_grid_over_the_ring_streams_b_in_k_chunks_and_validates},
        {"products_on_the_same_grid_over_the_ring_keep_tiles_in_lx_and_validate",
         test_products_on_the_same_grid_over_the_ring_keep_tiles_in_lx_and_validate},
        {"the down product reads its A from the tiles the SiLU product kept",
         test_the_down_product_reads_its_a_from_the_tiles_the_silu_product_kept},
        {"a chain of 2048-wide linears keeps its activations in LX at 0.65 of peak",
         test_a_chain_of_2048_wide_linears_keeps_its_activations_in_lx_at_065_of_peak},
        {"an operand expanded along K is copied and validates", test_an_operand_expanded_along_k_is_copied_and_validates},
        {"a forced tiling of a grid over the ring sets its K chunk",
         test_a_forced_tiling_of_a_grid_over_the_ring_sets_its_k_chunk},
        {"a long K is split over cores, reduced over the ring and validates",
         test_a_long_k_is_split_over_cores_reduced_over_the_ring_and_validates},
        {"a row kernel takes its producer's split so the tensor stays in LX",
         test_a_row_kernel_takes_its_producers_split_so_the_tensor_stays_in_lx},
        {"an input a product loads stays in LX for a later row kernel",
         test_an_input_a_product_loads_stays_in_lx_for_a_later_row_kernel},
        {"a row kernel takes its reader's own split so its result stays in LX",
         test_a_row_kernel_takes_its_readers_own_split_so_its_result_stays_in_lx},
        {"the kernel ahead is the first reader, past kernels that read nothing it writes",
         test_the_kernel_ahead_is_the_first_reader_past_kernels_that_read_nothing_it_writes},
        {"a reader on other cores takes a kept tensor by a ring exchange",
         test_a_reader_on_other_cores_takes_a_kept_tensor_by_a_ring_exchange},
        {"an exchange whose bar costs the next kernel's overlap goes through DRAM",
         test_an_exchange_whose_bar_costs_the_next_kernels_overlap_goes_through_dram},
        {"the ring exchange estimate matches the simulator", test_the_ring_exchange_estimate_matches_the_simulator},
        {"a layer norm's per-column values go down a tree of cores when the estimate says so",
         test_a_layer_norms_per_column_values_go_down_a_tree_of_cores_when_the_estimate_says_so},
        {"a ring exchange beats the DRAM round trip between splits",
         test_a_ring_exchange_beats_the_dram_round_trip_between_splits},
        {"split-K on an uneven grid validates", test_split_k_on_an_uneven_grid_validates},
        {"a wide layer norm fits a small LX by reusing temps",
         test_a_wide_layer_norm_fits_a_small_lx_by_reusing_temps},
        {"temps given back after their last read give chunks more rows",
         test_temps_given_back_after_their_last_read_give_chunks_more_rows},
        {"a cat along rows reads nothing past its operands", test_a_cat_along_rows_reads_nothing_past_its_operands},
        {"products with N or K of one validate", test_products_with_n_or_k_of_one_validate},
        {"returning an input is a copy and a clash of names a clear error",
         test_returning_an_input_is_a_copy_and_a_clash_of_names_a_clear_error},
        {"a reduction over the first dimension stores through a staged copy",
         test_a_reduction_over_the_first_dimension_stores_through_a_staged_copy},
        {"a reduction over a long leading dimension runs in two", test_a_reduction_over_a_long_leading_dimension_runs_in_two},
        {"a whole tensor reduced or flattened is one staged row", test_a_whole_tensor_reduced_or_flattened_is_one_staged_row},
        {"an unbiased var over one element is nan", test_an_unbiased_var_over_one_element_is_nan},
        {"a layer norm over two dimensions stages its weight per row",
         test_a_layer_norm_over_two_dimensions_stages_its_weight_per_row},
        {"one-element kernels validate", test_one_element_kernels_validate},
        {"reductions over a single row validate", test_reductions_over_a_single_row_validate},
        {"a scalar read for every element validates", test_a_scalar_read_for_every_element_validates},
        {"a pointwise node independent of the product joins its epilogue",
         test_a_pointwise_node_independent_of_the_product_joins_its_epilogue},
        {"a kernel storing two row lengths is one staged row", test_a_kernel_storing_two_row_lengths_is_one_staged_row},
        {"kernels tile smaller so more tensors stay in LX", test_kernels_tile_smaller_so_more_tensors_stay_in_lx},
        {"attention scores stay in LX from QK^T to PV and validate",
         test_attention_scores_stay_in_lx_from_qkt_to_pv_and_validate},
        {"attention probabilities take the scores' region and validate",
         test_attention_probabilities_take_the_scores_region_and_validate},
        {"tensors kept in LX across kernels spill the furthest used and validate",
         test_tensors_kept_in_lx_across_kernels_spill_the_furthest_used_and_validate},
        {"a pointwise loop merged across rows is cut back and validates on both chips",
         test_a_pointwise_loop_merged_across_rows_is_cut_back_and_validates_on_both_chips},
        {"a layer-norm graph validates on both chips", test_layer_norm_graph_validates_on_both_chips},
        {"a linear with an epilogue and a where validates on both chips",
         test_linear_with_epilogue_and_where_validates_on_both_chips},
        {"a long K is chunked with fp32 partial sums on the small chip",
         test_long_k_is_chunked_with_fp32_partial_sums_on_the_small_chip},
        {"a matmul out of sync tokens is an error without a leak",
         test_a_matmul_out_of_sync_tokens_is_an_error_without_a_leak},
        {"index values come from sfp.iota and validate on both chips",
         test_index_values_come_from_sfp_iota_and_validate_on_both_chips},
        {"tanh-GELU of large activations validates on both chips", test_tanh_gelu_of_large_activations_validates_on_both_chips},
        {"index values beyond DL16 exactness are a clear error",
         test_index_values_beyond_dl16_exactness_are_a_clear_error},
        {"a llama block with rope cat, GQA and SwiGLU validates on both chips",
         test_llama_block_with_rope_cat_gqa_and_swiglu_validates_on_both_chips},
        {"whole models' prefill and decode steps validate on both chips",
         test_whole_models_prefill_and_decode_steps_validate_on_both_chips},
        {"bert attention restickifies heads in LX and validates on both chips",
         test_bert_attention_restickifies_heads_in_lx_and_validates_on_both_chips},
        {"encoder and decoder attention validate on both chips",
         test_encoder_and_decoder_attention_validate_on_both_chips},
        {"padding, pooling, batch and group norm and upsampling validate on both chips",
         test_padding_pooling_norms_and_upsampling_validate_on_both_chips},
        {"the full nn.Transformer with masks validates on both chips",
         test_full_nn_transformer_with_masks_validates_on_both_chips},
        {"a gpt2 block with a -inf causal mask validates on both chips",
         test_gpt2_block_with_a_minus_inf_causal_mask_validates_on_both_chips},
        {"an embedding gathers rows by dma.gather and validates on both chips",
         test_embedding_gathers_rows_by_dma_gather_and_validates_on_both_chips},
        {"a conv whose channel row misses LX runs in K blocks", test_a_conv_whose_channel_row_misses_lx_runs_in_k_blocks},
        {"a staged copy takes the largest chunk that fits and validates",
         test_a_staged_copy_takes_the_largest_chunk_that_fits_and_validates},
        {"a table indexed by a parameter is a row gather and validates with negative positions",
         test_a_table_indexed_by_a_parameter_is_a_row_gather_and_validates_with_negative_positions},
        {"a parameter read beside its row gather keeps its values on both chips",
         test_a_parameter_read_beside_its_row_gather_keeps_its_values_on_both_chips},
        {"a dense layer at one pixel runs in K blocks", test_a_dense_layer_at_one_pixel_runs_in_k_blocks},
        {"a cat of many pieces narrows its tiles and validates", test_a_cat_of_many_pieces_narrows_its_tiles_and_validates},
        {"a gather the back half cannot emit is a clear error", test_a_gather_the_back_half_cannot_emit_is_a_clear_error},
        {"computed indices are proven in range by construction",
         test_computed_indices_are_proven_in_range_by_construction},
        {"a gather concatenated along its rows runs on the device and validates",
         test_a_gather_concatenated_along_its_rows_runs_on_the_device_and_validates},
        {"an affine arange index reads the table as a view and validates on both chips",
         test_an_affine_arange_index_reads_the_table_as_a_view_and_validates_on_both_chips},
        {"a clamped relative position index stays one-hot and validates on both chips",
         test_a_clamped_relative_position_index_stays_one_hot_and_validates_on_both_chips},
        {"the affine index evaluator keeps to PyTorch's values", test_the_affine_index_evaluator_keeps_to_pytorchs_values},
        {"the affine index evaluator clamps, divides and takes remainders as PyTorch",
         test_the_affine_index_evaluator_clamps_divides_and_takes_remainders_as_pytorch},
        {"a folded maximum of a NaN constant is NaN", test_a_folded_maximum_of_a_nan_constant_is_nan},
        {"the back half's passes dump layout, workdiv, lxplan, codegen and reroll",
         test_back_half_passes_dump_layout_workdiv_lxplan_codegen_and_reroll},
        {"the lxplan dump shows the tensors kept in LX", test_the_lxplan_dump_shows_the_tensors_kept_in_lx},
        {"rerolled loops compute the same values in nearly the same cycles with many fewer instructions",
         test_rerolled_loops_compute_the_same_values_in_nearly_the_same_cycles_with_many_fewer_instructions},
        {"a stream without repetition is left as generated", test_a_stream_without_repetition_is_left_as_generated},
        {"the report counts each kernel's instructions before and after reroll",
         test_the_report_counts_each_kernels_instructions_before_and_after_reroll},
        {"kernels rolled as emitted are the program rolled after codegen",
         test_kernels_rolled_as_emitted_are_the_program_rolled_after_codegen},
        {"codegen on two threads writes the program one thread writes",
         test_codegen_on_two_threads_writes_the_program_one_thread_writes},
        {"which thread rolls a core leaves the program one thread's",
         test_which_thread_rolls_a_core_leaves_the_program_one_threads},
        {"an attempt planned again after being set aside gives the same program",
         test_an_attempt_planned_again_after_being_set_aside_gives_the_same_program},
        {"sdpa with a float mask holding +inf is NaN as PyTorch",
         test_sdpa_with_a_float_mask_holding_plus_inf_is_nan_as_pytorch},
        {"the report shows each kernel's split, tiles, LX and DRAM on spyre",
         test_report_shows_each_kernels_split_tiles_lx_and_dram_on_spyre},
        {"work_div forces a grid that validates with other cycles",
         test_work_div_forces_a_grid_that_validates_with_other_cycles},
        {"a work_div hint line forces the grid and options win over it",
         test_a_work_div_hint_line_forces_the_grid_and_options_win_over_it},
        {"bad work_div specs are errors naming the kernel", test_bad_work_div_specs_are_errors_naming_the_kernel},
        {"a batch split over the cores validates on both chips", test_a_batch_split_over_the_cores_validates_on_both_chips},
        {"work_div forces tile sizes that validate with other cycles",
         test_work_div_forces_tile_sizes_that_validate_with_other_cycles},
        {"a skinny linear reads its weight about once on both PT corelets",
         test_a_skinny_linear_reads_its_weight_about_once_on_both_pt_corelets},
        {"a staged operand larger than LX is staged per chunk",
         test_a_staged_operand_larger_than_lx_is_staged_per_chunk},
        {"a matmul operand larger than LX is staged per block",
         test_a_matmul_operand_larger_than_lx_is_staged_per_block},
        {"whole-stick heads are read in place by batched products and validate",
         test_whole_stick_heads_are_read_in_place_by_batched_products_and_validate},
        {"an uneven batch split keeps nothing for a row kernel and validates",
         test_an_uneven_batch_split_keeps_nothing_for_a_row_kernel_and_validates},
        {"heads merged into a linear's A are read in place and validate on both chips",
         test_heads_merged_into_a_linears_a_are_read_in_place_and_validate_on_both_chips},
        {"heads merged into a linear's A take one stick dimension and validate under any tiling",
         test_heads_merged_into_a_linears_a_take_one_stick_dimension_and_validate_under_any_tiling},
        {"operands wrapping from inside a period validate under any tiling",
         test_operands_wrapping_from_inside_a_period_validate_under_any_tiling},
        {"an output transposed from a matmul is copied and validates on both chips",
         test_an_output_transposed_from_a_matmul_is_copied_and_validates_on_both_chips},
        {"kernels whose rows stay on their cores are separated by a fence",
         test_kernels_whose_rows_stay_on_their_cores_are_separated_by_a_fence},
        {"a kernel reading rows another core wrote waits at a bar",
         test_a_kernel_reading_rows_another_core_wrote_waits_at_a_bar},
        {"ring traffic puts a bar before its kernel", test_ring_traffic_puts_a_bar_before_its_kernel},
        {"argmax, max with indices and counts validate on both chips",
         test_argmax_max_with_indices_and_counts_validate_on_both_chips},
        {"an integer cumsum of a mask runs on the device within its proven bound",
         test_an_integer_cumsum_of_a_mask_runs_on_the_device_within_its_proven_bound},
        {"an integer cumsum of long rows is a scan on the device", test_an_integer_cumsum_of_long_rows_is_a_scan_on_the_device},
        {"the sign of an integer runs on the device", test_the_sign_of_an_integer_runs_on_the_device},
        {"an unbounded integer cast is refused saying why", test_an_unbounded_integer_cast_is_refused_saying_why},
        {"cumsum by a triangular product validates on both chips",
         test_cumsum_by_a_triangular_product_validates_on_both_chips},
        {"roll, flip, rot90, diag and trace validate on both chips",
         test_roll_flip_rot90_diag_and_trace_validate_on_both_chips},
        {"scatters of slices, narrow and unfold validate on both chips",
         test_scatters_of_slices_narrow_and_unfold_validate_on_both_chips},
        {"a per-row operand inside its sticks stays out of the reduction and validates",
         test_a_per_row_operand_inside_its_sticks_stays_out_of_the_reduction_and_validates},
        {"sort, topk and gather by ranks and one-hot validate on both chips",
         test_sort_topk_and_gather_by_ranks_and_one_hot_validate_on_both_chips},
        {"scatter_reduce by one-hot runs natively on both chips", test_scatter_reduce_by_one_hot_runs_natively_on_both_chips},
        {"bincount and weight_norm run natively on both chips", test_bincount_and_weight_norm_run_natively_on_both_chips},
        {"integer division by a number runs natively and exactly", test_integer_division_by_a_number_runs_natively_and_exactly},
        {"index_add and scatter_add along dim 0 are products on both chips", test_index_add_and_scatter_add_along_dim_0_are_products_on_both_chips},
        {"an f16 scatter_reduce mean stays f16", test_an_f16_scatter_reduce_mean_stays_f16},
        {"eye after a product runs natively on both chips", test_eye_after_a_product_runs_natively_on_both_chips},
        {"nll_loss by a one-hot selection validates on both chips",
         test_nll_loss_by_a_one_hot_selection_validates_on_both_chips},
        {"index, take, index_add and repeat positions validate on both chips",
         test_index_take_index_add_and_repeat_positions_validate_on_both_chips},
        {"index_put validates on both chips", test_index_put_validates_on_both_chips},
        {"scatter and its reductions validate on both chips", test_scatter_and_its_reductions_validate_on_both_chips},
        {"scatter of a bool mask runs natively on both chips", test_scatter_of_a_bool_mask_runs_natively_on_both_chips},
        {"gather, take, masked_fill of bools run natively on both chips", test_gather_take_masked_fill_of_bools_run_natively_on_both_chips},
        {"index_copy runs natively on both chips", test_index_copy_runs_natively_on_both_chips},
        {"a scalar bias of a product validates on both chips", test_a_scalar_bias_of_a_product_validates_on_both_chips},
        {"overlapping unfold windows validate on both chips", test_overlapping_unfold_windows_validate_on_both_chips},
        {"a conv weight read over merged taps runs on the device on both chips",
         test_a_conv_weight_read_over_merged_taps_runs_on_the_device_on_both_chips},
        {"ResNet-18's layer2 block runs natively on both chips", test_resnet18_layer2_block_runs_natively_on_both_chips},
        {"a conv input whose channels span LX is copied rows first",
         test_a_conv_input_whose_channels_span_lx_is_copied_rows_first},
        {"an NCHW residual of a conv product stays out of its epilogue",
         test_an_nchw_residual_of_a_conv_product_stays_out_of_its_epilogue},
        {"addmv, addbmm, norms and std_mean validate on both chips",
         test_addmv_addbmm_norms_and_std_mean_validate_on_both_chips},
        {"bilinear upsampling is a product per axis on both chips",
         test_bilinear_upsampling_is_a_product_per_axis_on_both_chips},
        {"nearest upsampling by 2 gives PyTorch's values natively, no slower than bilinear",
         test_nearest_upsampling_by_2_gives_pytorchs_values_natively_no_slower_than_bilinear},
        {"uneven adaptive max pool indices on both chips", test_uneven_adaptive_max_pool_indices_on_both_chips},
        {"a Swin attention with a gathered bias compiles and validates",
         test_a_swin_attention_with_a_gathered_bias_compiles_and_validates},
        {"a wide strided conv runs natively whatever its row of taps",
         test_a_wide_strided_conv_runs_natively_whatever_its_row_of_taps},
        {"as_strided of a fresh tensor is a reshape and permute", test_as_strided_of_a_fresh_tensor_is_a_reshape_and_permute},
        {"a cat along 1536 columns runs natively", test_a_cat_along_1536_columns_runs_natively},
        {"a GQA decode step reads its KV heads through the broadcast",
         test_gqa_decode_reads_kv_heads_through_the_broadcast},
        {"a table every core reads alike is read once and shared over the ring",
         test_a_table_every_core_reads_alike_is_read_once_and_shared_over_the_ring},
        {"duplicate and aliased outputs are each read back", test_duplicate_and_aliased_outputs_are_each_read_back},
        {NULL, NULL},
    };
    return tu_run("backend", tests);
}
