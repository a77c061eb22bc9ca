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
static int run_graph(const cc_graph *g, const char *cfgname, const char *inputs, const char *expected,
                     sim_stats *stats_out)
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
    for (int i = 0; i < n; i++) {
        char line[512];
        rt_check_format(&chk[i], line, sizeof line);
        if (!chk[i].ok)
            fprintf(stderr, "%s on %s: %s\n", g->name, cfgname, line);
    }
    CU_ASSERT_EQUAL(n, g->noutputs);
    free(chk);
    /* PyTorch's own outputs, when the export has them. */
    if (bad == 0 && expected) {
        rt_st_file *want = rt_st_read(expected, err, sizeof err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(want);
        for (int i = 0; i < g->noutputs; i++) {
            char key[32];
            snprintf(key, sizeof key, "output%d", i);
            const rt_st_tensor *t = rt_st_find(want, key);
            CU_ASSERT_PTR_NOT_NULL_FATAL(t);
            const char *name = g->values[g->outputs[i]].name;
            int64_t cnt = t->numel;
            float *w = malloc((size_t)cnt * sizeof *w), *y = malloc((size_t)cnt * sizeof *y);
            rt_st_to_f32(t, w);
            CU_ASSERT_EQUAL_FATAL(rt_read_tensor(prog, name, y, err, sizeof err), 0);
            double scale = 0, maxerr = 0;
            for (int64_t j = 0; j < cnt; j++) {
                scale = fmax(scale, fabs(w[j]));
                double d = fabs((double)y[j] - w[j]);
                maxerr = d != d ? INFINITY : fmax(maxerr, d);
            }
            /* DL16 keeps 10 significant bits: a few units of 2^-9 of the scale */
            if (!(maxerr <= 0.05 * fmax(scale, 1))) {
                fprintf(stderr, "%s on %s: %s vs expected: max_abs_err %g (scale %g)\n", g->name, cfgname, name,
                        maxerr, scale);
                bad++;
            }
            free(w);
            free(y);
        }
        rt_st_free(want);
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
    cc_graph *g = cc_graph_load(dir, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    int bad = run_graph(g, cfgname, in, exp, st);
    cc_graph_free(g);
    return bad;
}

static int run_text(const char *text, const char *cfgname)
{
    char err[512];
    cc_graph *g = cc_graph_parse(text, "test.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    int bad = run_graph(g, cfgname, NULL, NULL, NULL);
    cc_graph_free(g);
    return bad;
}

/* ---- tests ---- */

static void test_mlp_runs_and_matches_reference_and_pytorch_on_both_chips(void)
{
    sim_stats st;
    CU_ASSERT_EQUAL(run_trace("mlp", "spyre", &st), 0);
    CU_ASSERT(st.macs > 0);
    CU_ASSERT_EQUAL(run_trace("mlp", "spyre-4core", &st), 0);
}

static const char *softmax_graph = "graph sm\n"
                                   "input %x: f32[37, 200]\n"
                                   "%y: f32[37, 200] = aten._softmax.default(%x, -1, False)\n"
                                   "output %y\n";

static void test_softmax_graph_validates_on_both_chips(void)
{
    CU_ASSERT_EQUAL(run_text(softmax_graph, "spyre"), 0);
    CU_ASSERT_EQUAL(run_text(softmax_graph, "spyre-4core"), 0);
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
    CU_ASSERT_EQUAL(run_text(layer_norm_graph, "spyre"), 0);
    CU_ASSERT_EQUAL(run_text(layer_norm_graph, "spyre-4core"), 0);
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
    CU_ASSERT_EQUAL(run_text(linear_graph, "spyre"), 0);
    CU_ASSERT_EQUAL(run_text(linear_graph, "spyre-4core"), 0);
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

/* Compile text for a chip; the back half's error, or "" on success. */
static void compile_error(const char *text, const char *cfgname, char *err, size_t errlen)
{
    sim_config cfg;
    tu_config(cfgname, &cfg);
    char perr[512];
    cc_graph *g = cc_graph_parse(text, "test.txt", perr, sizeof perr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_compile_opts o = {0};
    o.target = &cfg;
    err[0] = 0;
    cc_result *r = cc_compile(g, &o, err, errlen);
    cc_result_free(r);
    cc_graph_free(g);
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
    CU_ASSERT_EQUAL(run_text(g, "spyre"), 0);
    CU_ASSERT_EQUAL(run_text(g, "spyre-4core"), 0);
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
    CU_ASSERT_EQUAL(run_trace("llama_tiny", "spyre", NULL), 0);
    CU_ASSERT_EQUAL(run_trace("llama_tiny", "spyre-4core", NULL), 0);
}

static void test_bert_attention_restickifies_heads_in_lx_and_validates_on_both_chips(void)
{
    /* per-head q, k^T and v start inside 64-lane sticks and k^T is read
     * sticked on K: sfp.rst restickifies them in LX; the heads merged back
     * are stored through a staged copy */
    sim_stats st;
    CU_ASSERT_EQUAL(run_trace("bert_handwritten_small", "spyre", &st), 0);
    CU_ASSERT(st.macs > 0);
    CU_ASSERT_EQUAL(run_trace("bert_handwritten_small", "spyre-4core", &st), 0);
}

static void test_encoder_and_decoder_attention_validate_on_both_chips(void)
{
    /* nn.TransformerEncoderLayer / DecoderLayer: the head split also reaches
     * a row kernel (q scaled per head), restickified in LX the same way */
    CU_ASSERT_EQUAL(run_trace("encoder_small", "spyre", NULL), 0);
    CU_ASSERT_EQUAL(run_trace("encoder_small", "spyre-4core", NULL), 0);
    CU_ASSERT_EQUAL(run_trace("decoder_small", "spyre", NULL), 0);
    CU_ASSERT_EQUAL(run_trace("decoder_small", "spyre-4core", NULL), 0);
}

static void test_gpt2_block_with_a_minus_inf_causal_mask_validates_on_both_chips(void)
{
    /* masked_fill(scores, mask, -inf) then softmax: DL16 has no infinity
     * (NINF reads back as NaN), so the -inf immediate is written as the
     * finite stand-in -BE_DL16_INF; before the fix 1920 of the 2048
     * outputs were NaN */
    CU_ASSERT_EQUAL(run_trace("gpt2_small_block_tiny", "spyre", NULL), 0);
    CU_ASSERT_EQUAL(run_trace("gpt2_small_block_tiny", "spyre-4core", NULL), 0);
}

static void test_back_half_passes_dump_layout_workdiv_and_codegen(void)
{
    const char *const *bp = cc_backend_pass_names();
    CU_ASSERT_STRING_EQUAL(bp[0], "layout");
    CU_ASSERT_STRING_EQUAL(bp[1], "workdiv");
    CU_ASSERT_STRING_EQUAL(bp[2], "codegen");
    CU_ASSERT_PTR_NULL(bp[3]);
    char dir[512], err[512];
    snprintf(dir, sizeof dir, "%s/traces/mlp", SPYRE_SOURCE_DIR);
    cc_graph *g = cc_graph_load(dir, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    sim_config cfg;
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
            CU_ASSERT_PTR_NOT_NULL(strstr(text, "tensor fc1_weight weight dims 256x64 dl16 stick_dim 0"));
            CU_ASSERT_PTR_NOT_NULL(strstr(text, "tensor x input dims 8x64 dl16 stick_dim 1"));
            CU_ASSERT_PTR_NOT_NULL(strstr(text, "tensor addmm_1 output dims 8x64"));
            CU_ASSERT_PTR_NOT_NULL(strstr(text, "restickify needed: 0\n"));
        }
        if (i == 1)
            CU_ASSERT_PTR_NOT_NULL(strstr(text, "kernel k0_addmm_gelu: matmul grid"));
        free(text);
        isa_program *p = cc_result_take_program(r);
        CU_ASSERT_PTR_NOT_NULL(p);
        isa_program_free(p);
        cc_result_free(r);
    }
    cc_graph_free(g);
}

int main(void)
{
    static const tu_test tests[] = {
        {"mlp runs and matches the reference and PyTorch on both chips",
         test_mlp_runs_and_matches_reference_and_pytorch_on_both_chips},
        {"a softmax graph validates on both chips", test_softmax_graph_validates_on_both_chips},
        {"a layer-norm graph validates on both chips", test_layer_norm_graph_validates_on_both_chips},
        {"a linear with an epilogue and a where validates on both chips",
         test_linear_with_epilogue_and_where_validates_on_both_chips},
        {"a long K is chunked with fp32 partial sums on the small chip",
         test_long_k_is_chunked_with_fp32_partial_sums_on_the_small_chip},
        {"index values come from sfp.iota and validate on both chips",
         test_index_values_come_from_sfp_iota_and_validate_on_both_chips},
        {"index values beyond DL16 exactness are a clear error",
         test_index_values_beyond_dl16_exactness_are_a_clear_error},
        {"a llama block with rope cat, GQA and SwiGLU validates on both chips",
         test_llama_block_with_rope_cat_gqa_and_swiglu_validates_on_both_chips},
        {"bert attention restickifies heads in LX and validates on both chips",
         test_bert_attention_restickifies_heads_in_lx_and_validates_on_both_chips},
        {"encoder and decoder attention validate on both chips",
         test_encoder_and_decoder_attention_validate_on_both_chips},
        {"a gpt2 block with a -inf causal mask validates on both chips",
         test_gpt2_block_with_a_minus_inf_causal_mask_validates_on_both_chips},
        {"the back half's passes dump layout, workdiv and codegen",
         test_back_half_passes_dump_layout_workdiv_and_codegen},
        {NULL, NULL},
    };
    return tu_run("backend", tests);
}
