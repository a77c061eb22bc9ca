/* test_lowering.c: the graph compiler's front half (cc_compile): ATen
 * graphs in, scheduled fused kernels out.  Graphs are written here as text
 * (docs/graph-format.md) or taken from traces/; the tests assert the
 * kernels (count, kind, fused ops and their lines), the IR text of the
 * passes, which buffers stay inside their kernel, and the errors. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"
#include "ir.h"
#include "testutil.h"

/* ---- helpers ---- */

static gr_graph *parse(const char *text)
{
    char err[512];
    gr_graph *g = gr_graph_parse(text, "g.txt", err, sizeof err);
    if (!g)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_FATAL(g != NULL);
    return g;
}

/* Compile text; NULL on error (the message in err). */
static cc_result *compile_opts(const char *text, const cc_compile_opts *o, char *err, size_t errlen)
{
    gr_graph *g = parse(text);
    cc_result *r = cc_compile(g, o, err, errlen);
    gr_graph_free(g);
    return r;
}

static cc_result *compile(const char *text)
{
    char err[512];
    cc_result *r = compile_opts(text, NULL, err, sizeof err);
    if (!r)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_FATAL(r != NULL);
    return r;
}

/* compile, asserting the graph makes one kernel (fatally), and
 * compile_kernel that it is of kind. */
static cc_result *compile_one(const char *text)
{
    cc_result *r = compile(text);
    CU_ASSERT_EQUAL_FATAL(cc_result_nkernels(r), 1);
    return r;
}

static cc_result *compile_kernel(const char *text, cc_kernel_kind kind)
{
    cc_result *r = compile_one(text);
    CU_ASSERT_EQUAL(cc_result_kernel_kind(r, 0), kind);
    return r;
}

/* The compiler's refusals, as they are without the host fallback. */
static const cc_compile_opts no_fallback = {.no_fallback = 1};

/* Compiling text fails with the message want. */
static void expect_compile_error(const char *text, const char *want)
{
    char err[512];
    CU_ASSERT_PTR_NULL(compile_opts(text, &no_fallback, err, sizeof err));
    CU_ASSERT_STRING_EQUAL(err, want);
}

/* The IR text after pass `pass` (malloc'd). */
static char *dump_after(const char *text, const char *pass)
{
    char *buf = NULL, err[512];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CU_ASSERT_FATAL(f != NULL);
    cc_compile_opts o = {.dump_after = pass, .dump = f};
    cc_result *r = compile_opts(text, &o, err, sizeof err);
    fclose(f);
    CU_ASSERT_FATAL(r != NULL);
    cc_result_free(r);
    return buf;
}

static char *report(const cc_result *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CU_ASSERT_FATAL(f != NULL);
    cc_compile_report(r, f);
    fclose(f);
    return buf;
}

/* r's compile report contains want. */
static void expect_report_has(const cc_result *r, const char *want)
{
    char *rep = report(r);
    TU_ASSERT_CONTAINS(rep, want);
    free(rep);
}

/* Kernel i fuses source op `op` at `line`. */
static int kernel_has_op(const cc_result *r, int i, const char *op, int line)
{
    for (int j = 0; j < cc_result_kernel_nops(r, i); j++) {
        int l;
        const char *o = cc_result_kernel_op(r, i, j, &l);
        if (!strcmp(o, op) && l == line)
            return 1;
    }
    return 0;
}

/* ---- fusion ---- */

static const char *layer_norm_graph = "graph ln\n"
                                      "input %x: f32[16, 64]\n"
                                      "param %w: f32[64] = \"w\"\n"
                                      "param %b: f32[64] = \"b\"\n"
                                      "%ln: (f32[16, 64], f32[16, 1], f32[16, 1]) = "
                                      "aten.native_layer_norm.default(%x, [64], %w, %b, 1e-05)\n"
                                      "%y: f32[16, 64] = getitem(%ln, 0)\n"
                                      "output %y\n";

static void test_layer_norm_is_one_reduction_kernel(void)
{
    cc_result *r = compile_kernel(layer_norm_graph, CC_KERNEL_REDUCTION);
    CU_ASSERT_STRING_EQUAL(cc_result_kernel_name(r, 0), "k0_native_layer_norm");
    CU_ASSERT_EQUAL(cc_result_kernel_nops(r, 0), 1);
    CU_ASSERT(kernel_has_op(r, 0, "aten.native_layer_norm.default", 5));
    /* sum(x), x - mean (read twice: realized), its square, sum of squares, out */
    CU_ASSERT_EQUAL(cc_result_kernel_nnodes(r, 0), 5);
    CU_ASSERT_EQUAL(cc_result_buffer_internal(r, "ln.sum"), 1);
    CU_ASSERT_EQUAL(cc_result_buffer_internal(r, "ln.sub"), 1);
    CU_ASSERT_EQUAL(cc_result_buffer_internal(r, "y"), 0);
    int64_t rd, wr;
    cc_result_traffic(r, &rd, &wr);
    CU_ASSERT_EQUAL(rd, 16 * 64 * 4 + 2 * 64 * 4); /* x, w, b once */
    CU_ASSERT_EQUAL(wr, 16 * 64 * 4);               /* y only */
    cc_result_free(r);
}

static void test_layer_norm_decomposes_into_mean_var_rsqrt(void)
{
    char *d = dump_after(layer_norm_graph, "decompose");
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "%ln.sum: f32[16, 1] = aten.sum.dim_IntList(%x, [1], True)  "
                                     "# line 5: aten.native_layer_norm.default\n"));
    TU_ASSERT_CONTAINS(d, "%ln.rsqrt: f32[16, 1] = aten.rsqrt.default(%ln.add)");
    /* the squares are scaled by 1/N before their sum (DL16's range) */
    TU_ASSERT_CONTAINS(d, "%ln.mul.1: f32[16, 64] = aten.mul.Tensor(%ln.mul, 0.015625)",
                          "%ln.sum.1: f32[16, 1] = aten.sum.dim_IntList(%ln.mul.1, [1], True)",
                          "%y: f32[16, 64] = aten.add.Tensor(%ln.mul.3, %b)");
    TU_ASSERT_LACKS(d, "getitem");
    free(d);
}

static const char *linear_gelu_graph = "graph mlp\n"
                                       "input %x: f32[8, 64]\n"
                                       "param %w: f32[256, 64] = \"w\"\n"
                                       "param %b: f32[256] = \"b\"\n"
                                       "%h: f32[8, 256] = aten.linear.default(%x, %w, %b)\n"
                                       "%g: f32[8, 256] = aten.gelu.default(%h)\n"
                                       "output %g\n";

static void test_linear_gelu_is_one_matmul_with_bias_and_gelu_epilogue(void)
{
    cc_result *r = compile_kernel(linear_gelu_graph, CC_KERNEL_MATMUL);
    CU_ASSERT(kernel_has_op(r, 0, "aten.linear.default", 5));
    CU_ASSERT(kernel_has_op(r, 0, "aten.gelu.default", 6));
    CU_ASSERT_EQUAL(cc_result_buffer_internal(r, "h"), 1); /* bias added, read twice by GELU */
    char *rep = report(r);
    CU_ASSERT_PTR_NOT_NULL(strstr(rep, "  epilogue: g[256*m + n] = (acc + load(b, n)) * 0.5 * "
                                       "(erf((acc + load(b, n)) * 0.7071067811865476) + 1.0)\n"));
    TU_ASSERT_CONTAINS(rep, "  reads: x f32[8, 64], w f32[256, 64], b f32[256]\n");
    free(rep);
    cc_result_free(r);
}

static void test_gelu_tanh_form_in_epilogue(void)
{
    const char *g = "input %x: f32[8, 64]\n"
                    "input %w: f32[64, 32]\n"
                    "%h: f32[8, 32] = aten.mm.default(%x, %w)\n"
                    "%g: f32[8, 32] = aten.gelu.default(%h, approximate=\"tanh\")\n"
                    "output %g\n";
    cc_result *r = compile_one(g);
    /* the cube's x clamped where tanh has saturated (DL16's range) */
    expect_report_has(r, "tanh((acc + min(max(acc, -64.0), 64.0) * min(max(acc, -64.0), 64.0) * 0.044715 * "
                         "min(max(acc, -64.0), 64.0)) * 0.7978845608028654)");
    cc_result_free(r);
}

static void test_epilogue_takes_scaling_and_residual_add(void)
{
    const char *g = "input %x: f32[32, 64]\n"
                    "input %res: f32[32, 16]\n"
                    "param %w: f32[16, 64] = \"w\"\n"
                    "param %b: f32[16] = \"b\"\n"
                    "%t: f32[64, 16] = aten.t.default(%w)\n"
                    "%h: f32[32, 16] = aten.addmm.default(%b, %x, %t)\n"
                    "%s: f32[32, 16] = aten.mul.Tensor(%h, 0.5)\n"
                    "%y: f32[32, 16] = aten.add.Tensor(%s, %res)\n"
                    "output %y\n";
    cc_result *r = compile_kernel(g, CC_KERNEL_MATMUL);
    expect_report_has(r, "  epilogue: y[16*m + n] = (acc + load(b, n)) * 0.5 + load(res, 16*m + n)\n");
    cc_result_free(r);
}

static const char *softmax_graph = "graph sm\n"
                                   "input %x: f32[16, 64]\n"
                                   "%y: f32[16, 64] = aten._softmax.default(%x, -1, False)\n"
                                   "output %y\n";

static void test_softmax_is_one_reduction_kernel(void)
{
    cc_result *r = compile_kernel(softmax_graph, CC_KERNEL_REDUCTION);
    CU_ASSERT_EQUAL(cc_result_kernel_nnodes(r, 0), 4); /* amax, exp, sum, div */
    CU_ASSERT_EQUAL(cc_result_buffer_internal(r, "y.exp"), 1);
    CU_ASSERT_EQUAL(cc_result_buffer_internal(r, "y.amax"), 1);
    CU_ASSERT_EQUAL(cc_result_buffer_internal(r, "y.sum"), 1);
    char *rep = report(r);
    CU_ASSERT_PTR_NOT_NULL(strstr(rep, "k0_softmax: reduction [16 | 64]\n"
                                       "  ops: aten._softmax.default (line 3)\n"
                                       "  reads: x f32[16, 64]\n"));
    free(rep);
    cc_result_free(r);
}

static void test_softmax_lowers_to_readable_loops(void)
{
    char *d = dump_after(softmax_graph, "lower");
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "node y.amax: reduction max [i0=16 | r0=64] y.amax[i0] = "
                                     "reduce_max[r0](load(x, 64*i0 + r0))"));
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "node y.exp: pointwise [i0=16, i1=64] y.exp[64*i0 + i1] = "
                                     "exp(load(x, 64*i0 + i1) - load(y.amax, i0))"));
    TU_ASSERT_CONTAINS(d, "y[64*i0 + i1] = load(y.exp, 64*i0 + i1) / load(y.sum, i0)");
    free(d);
}

static void test_horizontal_fusion_joins_independent_kernels_sharing_a_read(void)
{
    const char *g = "input %x: f32[16, 64]\n"
                    "%s: f32[16] = aten.sum.dim_IntList(%x, [1])\n"
                    "%m: f32[16] = aten.amax.default(%x, [1])\n"
                    "%e: f32[16, 64] = aten.exp.default(%x)\n"
                    "%c: f32[16, 64] = aten.cos.default(%x)\n"
                    "output %s, %m, %e, %c\n";
    char *before = dump_after(g, "fuse_epilogue");
    TU_ASSERT_CONTAINS(before, "kernel #0: reduction [16 | 64] nodes s\n",
                               "kernel #1: reduction [16 | 64] nodes m\n");
    free(before);
    cc_result *r = compile(g);
    /* the two reductions share x; the two pointwise nodes share x */
    CU_ASSERT_EQUAL(cc_result_nkernels(r), 2);
    CU_ASSERT_EQUAL(cc_result_kernel_nnodes(r, 0), 2);
    CU_ASSERT_EQUAL(cc_result_kernel_nnodes(r, 1), 2);
    cc_result_free(r);
}

static void test_value_read_twice_is_realized_unless_max_reads_allows(void)
{
    const char *g = "input %x: f32[16, 64]\n"
                    "%a: f32[16, 64] = aten.exp.default(%x)\n"
                    "%b: f32[16, 64] = aten.add.Tensor(%a, 1.0)\n"
                    "%c: f32[16, 64] = aten.mul.Tensor(%a, 2.0)\n"
                    "output %b, %c\n";
    cc_result *r = compile_one(g);
    CU_ASSERT_EQUAL(cc_result_kernel_nnodes(r, 0), 3); /* a, b, c */
    CU_ASSERT_EQUAL(cc_result_buffer_internal(r, "a"), 1);
    cc_result_free(r);
    char err[512];
    cc_compile_opts o = {.max_reads = 2};
    r = compile_opts(g, &o, err, sizeof err);
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_EQUAL(cc_result_nkernels(r), 1);
    CU_ASSERT_EQUAL(cc_result_kernel_nnodes(r, 0), 2); /* exp inlined into b and c */
    CU_ASSERT_EQUAL(cc_result_buffer_internal(r, "a"), -1);
    cc_result_free(r);
}

/* ---- views ---- */

static void test_transpose_feeding_matmul_needs_no_copy(void)
{
    const char *g = "input %x: f32[16, 64]\n"
                    "param %w: f32[32, 64] = \"w\"\n"
                    "input %q: f32[4, 16, 8]\n"
                    "input %k: f32[4, 16, 8]\n"
                    "%wt: f32[64, 32] = aten.t.default(%w)\n"
                    "%y: f32[16, 32] = aten.mm.default(%x, %wt)\n"
                    "%kt: f32[4, 8, 16] = aten.transpose.int(%k, -1, -2)\n"
                    "%s: f32[4, 16, 16] = aten.bmm.default(%q, %kt)\n"
                    "output %y, %s\n";
    cc_result *r = compile(g);
    CU_ASSERT_EQUAL(cc_result_nkernels(r), 2);
    CU_ASSERT_EQUAL(cc_result_kernel_kind(r, 0), CC_KERNEL_MATMUL);
    CU_ASSERT_EQUAL(cc_result_kernel_kind(r, 1), CC_KERNEL_MATMUL);
    cc_result_free(r);
    char *d = dump_after(g, "lower");
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "node y: matmul [m=16, n=32, k=64] y[32*m + n] = "
                                     "reduce_sum[k](load(x, 64*m + k) * load(w, 64*n + k))"));
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "node s: matmul [b0=4, m=16, n=16, k=8] s[256*b0 + 16*m + n] = "
                                     "reduce_sum[k](load(q, 128*b0 + 8*m + k) * load(k, 128*b0 + 8*n + k))"));
    free(d);
}

static void test_attention_head_split_and_merge_need_no_copy(void)
{
    /* q and k come out of linear layers as [2, 16, 64], split into 4
     * heads and merged into a batch of 8 for bmm; the result goes back
     * to [2, 16, 64] through a transpose: the head dims are read and
     * written through affine indices, so only matmul kernels remain. */
    const char *g = "input %q: f32[2, 16, 64]\n"
                    "input %k: f32[2, 16, 64]\n"
                    "input %v: f32[2, 4, 16, 16]\n"
                    "%q4: f32[2, 16, 4, 16] = aten.view.default(%q, [2, 16, 4, 16])\n"
                    "%qh: f32[2, 4, 16, 16] = aten.transpose.int(%q4, 1, 2)\n"
                    "%k4: f32[2, 16, 4, 16] = aten.view.default(%k, [2, 16, 4, 16])\n"
                    "%kh: f32[2, 4, 16, 16] = aten.transpose.int(%k4, 1, 2)\n"
                    "%kt: f32[2, 4, 16, 16] = aten.transpose.int(%kh, -1, -2)\n"
                    "%qc: f32[2, 4, 16, 16] = aten.clone.default(%qh, memory_format=\"contiguous_format\")\n"
                    "%q3: f32[8, 16, 16] = aten._unsafe_view.default(%qc, [8, 16, 16])\n"
                    "%kc: f32[2, 4, 16, 16] = aten.clone.default(%kt, memory_format=\"contiguous_format\")\n"
                    "%k3: f32[8, 16, 16] = aten._unsafe_view.default(%kc, [8, 16, 16])\n"
                    "%s: f32[8, 16, 16] = aten.bmm.default(%q3, %k3)\n"
                    "%s4: f32[2, 4, 16, 16] = aten.view.default(%s, [2, 4, 16, 16])\n"
                    "%o: f32[2, 16, 4, 16] = aten.transpose.int(%s4, 1, 2)\n"
                    "%oc: f32[2, 16, 4, 16] = aten.clone.default(%o, memory_format=\"contiguous_format\")\n"
                    "%y: f32[2, 16, 64] = aten.view.default(%oc, [2, 16, 64])\n"
                    "output %y\n";
    cc_result *r = compile_kernel(g, CC_KERNEL_MATMUL);
    char *rep = report(r);
    TU_ASSERT_CONTAINS(rep, "k0_bmm: matmul [2, 4, 16, 16 | 16]\n",
                            "  epilogue: y[1024*b0 + 16*b1 + 64*m + n] = acc\n");
    free(rep);
    char *d = dump_after(g, "lower");
    TU_ASSERT_CONTAINS(d, "load(q, 1024*b0 + 16*b1 + 64*m + k) * load(k, 1024*b0 + 16*b1 + 64*n + k)");
    free(d);
    cc_result_free(r);
}

static void test_reshape_that_is_no_view_forces_a_copy(void)
{
    const char *viewable = "input %x: f32[4, 8]\n"
                           "%r: f32[32] = aten.view.default(%x, [32])\n"
                           "%y: f32[32] = aten.exp.default(%r)\n"
                           "output %y\n";
    char *d = dump_after(viewable, "lower");
    TU_ASSERT_CONTAINS(d, "node y: pointwise [i0=32] y[i0] = exp(load(x, i0))");
    TU_ASSERT_LACKS(d, "node r");
    free(d);
    const char *copied = "input %x: f32[4, 8]\n"
                         "%t: f32[8, 4] = aten.t.default(%x)\n"
                         "%r: f32[32] = aten.view.default(%t, [32])\n"
                         "%y: f32[32] = aten.exp.default(%r)\n"
                         "output %y\n";
    d = dump_after(copied, "lower");
    TU_ASSERT_CONTAINS(d, "node r: pointwise [i0=8, i1=4] r[4*i0 + i1] = load(x, i0 + 8*i1)",
                          "node y: pointwise [i0=32] y[i0] = exp(load(r, i0))");
    free(d);
    cc_result *r = compile_one(copied); /* the copy and the exp fuse: r stays inside */
    CU_ASSERT_EQUAL(cc_result_buffer_internal(r, "r"), 1);
    cc_result_free(r);
}

static void test_output_that_is_a_view_of_an_input_is_copied(void)
{
    const char *g = "input %x: f32[4, 8]\n"
                    "%v: f32[8, 4] = aten.t.default(%x)\n"
                    "%d: f32[4, 8] = aten.detach.default(%x)\n"
                    "output %v, %d\n";
    /* two copies, fused horizontally: both read x over 8 x 4 loops */
    cc_result *r = compile_kernel(g, CC_KERNEL_POINTWISE);
    CU_ASSERT_EQUAL(cc_result_kernel_nnodes(r, 0), 2);
    CU_ASSERT_EQUAL(cc_result_buffer_internal(r, "v"), 0);
    cc_result_free(r);
    char *d = dump_after(g, "lastuse");
    TU_ASSERT_CONTAINS(d, "output v: f32[8, 4] = v\n",
                          "output d: f32[4, 8] = d\n",
                          "v[4*i0 + i1] = load(x, i0 + 8*i1)");
    free(d);
}

static void test_output_that_is_a_view_of_a_result_needs_no_copy(void)
{
    const char *g = "input %x: f32[4, 8]\n"
                    "%e: f32[4, 8] = aten.exp.default(%x)\n"
                    "%v: f32[2, 16] = aten.view.default(%e, [2, 16])\n"
                    "output %v\n";
    cc_result *r = compile_one(g);
    cc_result_free(r);
    char *d = dump_after(g, "lastuse");
    TU_ASSERT_CONTAINS(d, "output v: f32[2, 16] = e\n");
    free(d);
}

static void test_embedding_is_a_gather_load(void)
{
    const char *g = "input %ids: i64[2, 16]\n"
                    "param %w: f32[100, 64] = \"w\"\n"
                    "param %pos: f32[16, 64] = \"pos\"\n"
                    "%e: f32[2, 16, 64] = aten.embedding.default(%w, %ids)\n"
                    "%a: f32[2, 16, 64] = aten.add.Tensor(%e, %pos)\n"
                    "output %a\n";
    char *d = dump_after(g, "deps");
    TU_ASSERT_CONTAINS(d, "= load(w, i2 + 64*load(ids, 16*i0 + i1)) + load(pos, 64*i1 + i2)",
                          "reads w[*], ids[16*i0 + i1], pos[64*i1 + i2]");
    free(d);
}

static void test_causal_mask_is_an_index_expression(void)
{
    const char *g = "input %s: f32[16, 16]\n"
                    "%f: f32[16, 16] = aten.full.default([16, 16], -inf, dtype=f32, pin_memory=False)\n"
                    "%m: f32[16, 16] = aten.triu.default(%f, 1)\n"
                    "%y: f32[16, 16] = aten.add.Tensor(%s, %m)\n"
                    "%p: f32[16, 16] = aten._softmax.default(%y, -1, False)\n"
                    "output %p\n";
    char *d = dump_after(g, "lower");
    TU_ASSERT_CONTAINS(d, "load(s, 16*i0 + i1) + where(ge(-i0 + i1, 1), -inf, 0.0)");
    free(d);
    cc_result *r = compile_one(g);
    CU_ASSERT(kernel_has_op(r, 0, "aten.triu.default", 3));
    cc_result_free(r);
}

static void test_dead_nodes_are_removed(void)
{
    const char *g = "input %x: f32[16, 64]\n"
                    "input %w: f32[64, 64]\n"
                    "%unused_sum: f32[16] = aten.sum.dim_IntList(%x, [1])\n"
                    "%unused_mm: f32[16, 64] = aten.mm.default(%x, %w)\n"
                    "%unused_exp: f32[16, 64] = aten.exp.default(%x)\n"
                    "%y: f32[16, 64] = aten.relu.default(%x)\n"
                    "output %y\n";
    char *d = dump_after(g, "deps");
    TU_ASSERT_CONTAINS(d, "node unused_sum:",
                          "node unused_mm:");
    TU_ASSERT_LACKS(d, "node unused_exp:"); /* never realized */
    free(d);
    d = dump_after(g, "dce");
    TU_ASSERT_LACKS(d, "unused");
    free(d);
    cc_result *r = compile_one(g);
    CU_ASSERT_EQUAL(cc_result_buffer_internal(r, "unused_sum"), -1);
    cc_result_free(r);
}

/* ---- errors ---- */

static void test_unknown_op_is_an_error_naming_op_and_line(void)
{
    expect_compile_error("input %x: f32[4, 8]\n"
                         "%a: f32[4, 8] = aten.exp.default(%x)\n"
                         "%y: f32[4, 8] = aten.foo.bar(%a)\n"
                         "output %y\n",
                         "g.txt:3: the compiler does not lower aten.foo.bar");
    expect_compile_error("input %x: f32[4, 8]\n"
                         "%m: (f32[4, 8], i64[4, 8]) = aten.cummax.default(%x, 1)\n"
                         "%y: f32[4, 8] = getitem(%m, 0)\n"
                         "output %y\n",
                         "g.txt:2: the compiler does not lower aten.cummax.default");
}

/* Found by tests/fuzz/fuzz_compile: the error leaked the copied arguments
 * (the ASan build of the suite reports a leak). */
static void test_tuple_used_as_a_tensor_is_an_error_naming_it(void)
{
    const char *g = "input %x: f32[4, 8]\n"
                    "%m: (f32[4, 8], f32[4, 1], f32[4, 1]) = aten.native_layer_norm.default(%x, [8], None, None, "
                    "1e-05)\n"
                    "%y: f32[4, 8] = aten.relu.default(%m)\n"
                    "output %y\n";
    expect_compile_error(g, "g.txt:3: aten.relu.default: uses the tuple %m as a tensor");
    const char *in_list = "input %x: f32[4, 8]\n"
                          "%m: (f32[4, 8], f32[4, 1], f32[4, 1]) = aten.native_layer_norm.default(%x, [8], None, "
                          "None, 1e-05)\n"
                          "%y: f32[8, 8] = aten.foo.bar([%x, %m], key=\"s\")\n"
                          "output %y\n";
    expect_compile_error(in_list, "g.txt:3: aten.foo.bar: uses the tuple %m as a tensor");
}

static void test_shape_mismatch_is_an_error_with_line_and_shapes(void)
{
    const char *g = "input %x: f32[8, 64]\n"
                    "\n"
                    "%y: f32[8, 32] = aten.add.Tensor(%x, %x)\n"
                    "output %y\n";
    expect_compile_error(g, "g.txt:3: aten.add.Tensor: %y is declared f32[8, 32] but the op produces f32[8, 64]");
    const char *ln = "input %x: f32[16, 64]\n"
                     "%ln: (f32[16, 64], f32[16, 1], f32[16]) = aten.native_layer_norm.default(%x, [64], None, None, "
                     "1e-05)\n"
                     "%y: f32[16, 64] = getitem(%ln, 0)\n"
                     "output %y\n";
    expect_compile_error(ln, "g.txt:2: aten.native_layer_norm.default: result 2 of %ln is declared f32[16] but "
                             "the op produces f32[16, 1]");
    const char *bc = "input %x: f32[8, 64]\n"
                     "input %z: f32[8, 32]\n"
                     "%y: f32[8, 64] = aten.mul.Tensor(%x, %z)\n"
                     "output %y\n";
    expect_compile_error(bc, "g.txt:3: aten.mul.Tensor: shapes f32[8, 64] and f32[8, 32] do not broadcast");
}

/* OpInfo's div.trunc_rounding was computed as a true division, a wrong
 * result only --check caught.  A rounding mode now decomposes into the
 * division and the rounding (compiler/front/decompose.c, floor); a mode PyTorch
 * does not have is refused. */
static void test_div_with_a_rounding_mode_is_a_division_then_a_rounding(void)
{
    char err[512];
    const char *modes[] = {"\"trunc\"", "rounding_mode=\"floor\""};
    for (int i = 0; i < 2; i++) {
        char g[512];
        snprintf(g, sizeof g,
                 "input %%x: f32[4, 8]\ninput %%z: f32[4, 8]\n"
                 "%%y: f32[4, 8] = aten.div.Tensor_mode(%%x, %%z, %s)\noutput %%y\n", modes[i]);
        cc_result_free(compile_one(g));
    }
    const char *bad = "input %x: f32[4, 8]\ninput %z: f32[4, 8]\n"
                      "%y: f32[4, 8] = aten.div.Tensor_mode(%x, %z, rounding_mode=\"round\")\noutput %y\n";
    CU_ASSERT_PTR_NULL(compile_opts(bad, &no_fallback, err, sizeof err));
    CU_ASSERT_STRING_EQUAL(err, "g.txt:3: aten.div.Tensor_mode: rounding_mode must be None, \"trunc\" or \"floor\"");
    const char *none = "input %x: f32[4, 8]\ninput %z: f32[4, 8]\n"
                       "%y: f32[4, 8] = aten.div.Tensor_mode(%x, %z, rounding_mode=None)\noutput %y\n";
    cc_result *r = compile_one(none);
    cc_result_free(r);
}

static void test_dropout_in_training_is_refused(void)
{
    const char *g = "input %x: f32[4, 8]\n"
                    "%d: (f32[4, 8], bool[4, 8]) = aten.native_dropout.default(%x, 0.1, True)\n"
                    "%y: f32[4, 8] = getitem(%d, 0)\n"
                    "output %y\n";
    expect_compile_error(g, "g.txt:2: aten.native_dropout.default: the compiler does not lower dropout with "
                            "p > 0 in training mode");
    const char *ok = "input %x: f32[4, 8]\n"
                     "%d: (f32[4, 8], bool[4, 8]) = aten.native_dropout.default(%x, 0.0, True)\n"
                     "%y: f32[4, 8] = getitem(%d, 0)\n"
                     "%z: f32[4, 8] = aten.relu.default(%y)\n"
                     "output %z\n";
    cc_result *r = compile_one(ok);
    cc_result_free(r);
}

/* ---- passes and dumps ---- */

static void test_dump_after_every_pass_and_unknown_pass_rejected(void)
{
    const char *const *passes = cc_pass_names();
    int n = 0;
    for (; passes[n]; n++) {
        char *d = dump_after(linear_gelu_graph, passes[n]);
        char head[64];
        snprintf(head, sizeof head, "# mlp after %s\n", passes[n]);
        CU_ASSERT_EQUAL(strncmp(d, head, strlen(head)), 0);
        CU_ASSERT(strlen(d) > strlen(head) + 20);
        free(d);
    }
    CU_ASSERT_EQUAL(n, 11);
    CU_ASSERT_STRING_EQUAL(passes[0], "decompose");
    CU_ASSERT_STRING_EQUAL(passes[n - 1], "lastuse");
    char err[512];
    cc_compile_opts o = {.dump_after = "fuse", .dump = stderr};
    CU_ASSERT_PTR_NULL(compile_opts(linear_gelu_graph, &o, err, sizeof err));
    CU_ASSERT_STRING_EQUAL(err, "unknown pass \"fuse\" (the passes are decompose, lower, deps, dce, fuse_siblings, fuse_vertical, "
                                "fuse_reduction, fuse_epilogue, fuse_horizontal, order, lastuse)");
}

static void test_fusion_dumps_show_each_step(void)
{
    char *v = dump_after(linear_gelu_graph, "fuse_reduction");
    /* before epilogue fusion: the matmul alone, h and g fused vertically */
    TU_ASSERT_CONTAINS(v, "kernel #0: matmul [8, 256 | 64] nodes h.mm\n",
                          "kernel #1: pointwise [8, 256] nodes h, g\n");
    free(v);
    char *e = dump_after(linear_gelu_graph, "fuse_epilogue");
    TU_ASSERT_CONTAINS(e, "kernel #0: matmul [8, 256 | 64] nodes h.mm, h, g\n");
    free(e);
    char *l = dump_after(linear_gelu_graph, "lastuse");
    TU_ASSERT_CONTAINS(l, "buffer h.mm: f32[8, 256] computed internal\n",
                          "buffer x: f32[8, 64] input last_use=k0_linear_gelu\n");
    free(l);
}

/* opsem.c's integer ops give PyTorch's values (torch 1.13's, written
 * here): floor_divide rounds toward -infinity and remainder takes the
 * divisor's sign, at INT64_MIN too; rsub swaps and scales by alpha; a
 * zero divisor or an int64 wrap gives no value.  maximum and minimum in
 * double propagate a NaN on either side. */
static void test_elementwise_op_semantics_are_pytorchs(void)
{
    static const struct {
        const char *op;
        int64_t a, b, alpha, want;
    } cases[] = {
        {"floor_divide", 7, 2, 1, 3},
        {"floor_divide", -7, 2, 1, -4},
        {"floor_divide", 7, -2, 1, -4},
        {"floor_divide", -7, -2, 1, 3},
        {"floor_divide", INT64_MIN, 3, 1, -3074457345618258603},
        {"floor_divide", INT64_MIN, -3, 1, 3074457345618258602},
        {"floor_divide", 5, INT64_MAX, 1, 0},
        {"remainder", 7, 2, 1, 1},
        {"remainder", -7, 2, 1, 1},
        {"remainder", 7, -2, 1, -1},
        {"remainder", -7, -2, 1, -1},
        {"remainder", INT64_MIN, 3, 1, 1},
        {"remainder", INT64_MIN, -3, 1, -2},
        {"remainder", 5, INT64_MAX, 1, 5},
        {"remainder", -7, -1, 1, 0},
        {"rsub", 3, 10, 2, 4},
        {"sub", 3, 10, 2, -17},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int64_t r = 0;
        CU_ASSERT_EQUAL(ir_opsem_i64(ir_opsem_aten(cases[i].op), cases[i].a, cases[i].b, cases[i].alpha, &r), 1);
        CU_ASSERT_EQUAL(r, cases[i].want);
    }
    static const struct {
        const char *op;
        int64_t a, b;
    } none[] = {{"floor_divide", 1, 0}, {"remainder", 1, 0}, {"floor_divide", INT64_MIN, -1},
                {"remainder", INT64_MIN, -1}, {"add", INT64_MAX, 1},
                {"mul", INT64_MIN, -1}, {"neg", INT64_MIN, 0}};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
        int64_t r;
        CU_ASSERT_EQUAL(ir_opsem_i64(ir_opsem_aten(none[i].op), none[i].a, none[i].b, 1, &r), 0);
    }
    CU_ASSERT(isnan(ir_opsem_ir(IR_MAX)->f64(NAN, 1)) && isnan(ir_opsem_ir(IR_MAX)->f64(1, NAN)));
    CU_ASSERT(isnan(ir_opsem_ir(IR_MIN)->f64(NAN, 1)) && isnan(ir_opsem_ir(IR_MIN)->f64(1, NAN)));
    CU_ASSERT_PTR_NULL(ir_opsem_aten("where"));
}

static void test_decomposition_table_is_printable(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cc_decompositions_print(f);
    fclose(f);
    TU_ASSERT_CONTAINS(buf, "native_layer_norm",
                            "_softmax                     -> amax, sub, exp, sum, div\n",
                            "silu                         -> x * sigmoid(x)\n");
    free(buf);
}

/* ---- a whole encoder layer ---- */

/* A kernel the compiler must make: its name and kind. */
typedef struct {
    const char *name;
    cc_kernel_kind kind;
} kernel_want;

static void test_bert_encoder_layer_is_11_kernels(void)
{
    /* traces/bert_handwritten_small: a hand-written BERT layer, d_model
     * 64, 4 heads, sequence 16, batch 2, FFN 128, exported by
     * tools/export.py.  11 kernels, in this order:
     *   k0  q = x Wq^T + bq        matmul, bias epilogue
     *   k1  k = x Wk^T + bk        matmul, bias epilogue
     *   k2  q k^T per head         matmul over (batch 2, heads 4): the head
     *                              split/transpose is read through affine
     *                              indices, no copy
     *   k3  softmax(s / 4 + mask)  one reduction kernel: scale, mask add,
     *                              amax, exp, sum, div
     *   k4  v = x Wv^T + bv        matmul, bias epilogue (ordered late:
     *                              it frees no memory before the softmax)
     *   k5  p v per head           matmul whose epilogue stores the heads
     *                              merged back to [2, 16, 64] (a permuted
     *                              store instead of a transpose copy)
     *   k6  ctx Wo^T               matmul
     *   k7  LN(x + ctx Wo^T + bo)  one reduction kernel: bias, residual,
     *                              layer norm
     *   k8  gelu(h W1^T + b1)      matmul, bias + GELU epilogue
     *   k9  g W2^T                 matmul
     *   k10 LN(h + g W2^T + b2)    one reduction kernel
     * The attention-out and FFN-out biases join their layer norms rather
     * than their matmuls: the residual add makes the sum a [2, 16, 64]
     * loop that the reduction fusion (run before epilogue fusion) takes. */
    char err[512], path[1024];
    snprintf(path, sizeof path, "%s/traces/bert_handwritten_small/graph.txt", SPYRE_SOURCE_DIR);
    gr_graph *g = gr_graph_load(path, err, sizeof err);
    CU_ASSERT_FATAL(g != NULL);
    cc_result *r = cc_compile(g, NULL, err, sizeof err);
    gr_graph_free(g);
    CU_ASSERT_FATAL(r != NULL);
    cc_compile_report(r, stdout);
    static const kernel_want want[] = {
        {"k0_addmm", CC_KERNEL_MATMUL},
        {"k1_addmm", CC_KERNEL_MATMUL},
        {"k2_bmm", CC_KERNEL_MATMUL},
        {"k3_div_add_softmax", CC_KERNEL_REDUCTION},
        {"k4_addmm", CC_KERNEL_MATMUL},
        {"k5_bmm", CC_KERNEL_MATMUL},
        {"k6_addmm", CC_KERNEL_MATMUL},
        {"k7_addmm_add_native_layer_norm", CC_KERNEL_REDUCTION},
        {"k8_addmm_gelu", CC_KERNEL_MATMUL},
        {"k9_addmm", CC_KERNEL_MATMUL},
        {"k10_addmm_add_native_layer_norm", CC_KERNEL_REDUCTION},
    };
    CU_ASSERT_EQUAL_FATAL(cc_result_nkernels(r), 11);
    for (int i = 0; i < 11; i++) {
        CU_ASSERT_STRING_EQUAL(cc_result_kernel_name(r, i), want[i].name);
        CU_ASSERT_EQUAL(cc_result_kernel_kind(r, i), want[i].kind);
    }
    CU_ASSERT(kernel_has_op(r, 3, "aten._softmax.default", 51));
    CU_ASSERT(kernel_has_op(r, 8, "aten.gelu.default", 73));
    CU_ASSERT_EQUAL(cc_result_buffer_internal(r, "_softmax.exp"), 1);
    CU_ASSERT_EQUAL(cc_result_buffer_internal(r, "bmm_1"), 1);
    cc_result_free(r);
}

/* A conv whose windows tile its input (stride = kernel, no padding, one
 * group: ViT's patch embedding) is one PT product over every tap, as the
 * reference's error bound assumes (docs/validation.md, "Convolution"): one
 * matmul kernel, also where its im2col copy is 10.7 times the input (rows of
 * kw C = 6 padded to a stick, K = 300: no other rule takes the copy); with
 * stride 1 a 2x3 conv of two channels takes a product per row of taps (of
 * one channel, the im2col). */
static void test_a_conv_whose_windows_tile_its_input_is_one_product(void)
{
    static const char *const texts[2] = {
        "graph t\ninput %x: f32[1, 2, 100, 48]\ninput %w: f32[2, 2, 50, 3]\n"
        "%y: f32[1, 2, 2, 16] = aten.convolution.default(%x, %w, None, [50, 3], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "output %y\n",
        "graph t\ninput %x: f32[2, 2, 20, 12]\ninput %w: f32[5, 2, 2, 3]\n"
        "%y: f32[2, 5, 19, 10] = aten.convolution.default(%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "output %y\n"};
    for (int s = 0; s < 2; s++) {
        cc_result *r = compile(texts[s]);
        int mm = 0;
        for (int i = 0; i < cc_result_nkernels(r); i++)
            mm += cc_result_kernel_kind(r, i) == CC_KERNEL_MATMUL;
        if (s == 0)
            CU_ASSERT_EQUAL(mm, 1);
        if (s == 1)
            CU_ASSERT(mm > 1);
        cc_result_free(r);
    }
}

int main(void)
{
    static const tu_test tests[] = {
        {"layer_norm_is_one_reduction_kernel", test_layer_norm_is_one_reduction_kernel},
        {"a_conv_whose_windows_tile_its_input_is_one_product", test_a_conv_whose_windows_tile_its_input_is_one_product},
        {"layer_norm_decomposes_into_mean_var_rsqrt", test_layer_norm_decomposes_into_mean_var_rsqrt},
        {"linear_gelu_is_one_matmul_with_bias_and_gelu_epilogue", test_linear_gelu_is_one_matmul_with_bias_and_gelu_epilogue},
        {"gelu_tanh_form_in_epilogue", test_gelu_tanh_form_in_epilogue},
        {"epilogue_takes_scaling_and_residual_add", test_epilogue_takes_scaling_and_residual_add},
        {"softmax_is_one_reduction_kernel", test_softmax_is_one_reduction_kernel},
        {"softmax_lowers_to_readable_loops", test_softmax_lowers_to_readable_loops},
        {"horizontal_fusion_joins_independent_kernels_sharing_a_read",
         test_horizontal_fusion_joins_independent_kernels_sharing_a_read},
        {"value_read_twice_is_realized_unless_max_reads_allows", test_value_read_twice_is_realized_unless_max_reads_allows},
        {"transpose_feeding_matmul_needs_no_copy", test_transpose_feeding_matmul_needs_no_copy},
        {"attention_head_split_and_merge_need_no_copy", test_attention_head_split_and_merge_need_no_copy},
        {"reshape_that_is_no_view_forces_a_copy", test_reshape_that_is_no_view_forces_a_copy},
        {"output_that_is_a_view_of_an_input_is_copied", test_output_that_is_a_view_of_an_input_is_copied},
        {"output_that_is_a_view_of_a_result_needs_no_copy", test_output_that_is_a_view_of_a_result_needs_no_copy},
        {"embedding_is_a_gather_load", test_embedding_is_a_gather_load},
        {"causal_mask_is_an_index_expression", test_causal_mask_is_an_index_expression},
        {"dead_nodes_are_removed", test_dead_nodes_are_removed},
        {"unknown_op_is_an_error_naming_op_and_line", test_unknown_op_is_an_error_naming_op_and_line},
        {"tuple_used_as_a_tensor_is_an_error_naming_it", test_tuple_used_as_a_tensor_is_an_error_naming_it},
        {"shape_mismatch_is_an_error_with_line_and_shapes", test_shape_mismatch_is_an_error_with_line_and_shapes},
        {"dropout_in_training_is_refused", test_dropout_in_training_is_refused},
        {"div_with_a_rounding_mode_is_a_division_then_a_rounding", test_div_with_a_rounding_mode_is_a_division_then_a_rounding},
        {"dump_after_every_pass_and_unknown_pass_rejected", test_dump_after_every_pass_and_unknown_pass_rejected},
        {"fusion_dumps_show_each_step", test_fusion_dumps_show_each_step},
        {"decomposition_table_is_printable", test_decomposition_table_is_printable},
        {"elementwise_op_semantics_are_pytorchs", test_elementwise_op_semantics_are_pytorchs},
        {"bert_encoder_layer_is_11_kernels", test_bert_encoder_layer_is_11_kernels},
        {NULL, NULL},
    };
    return tu_run("lowering", tests);
}
