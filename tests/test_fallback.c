/* test_fallback.c: the host fallback (docs/compiler.md "Host ops",
 * docs/runtime.md "Host fallback"): an op the compiler does not lower
 * runs on the host between device kernels, validates, and is reported
 * with its cost; --no-fallback keeps the error. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "testutil.h"

static char out[1 << 16];

/* logcumsumexp (the compiler has no lowering; the reference executor has one)
 * between two device kernels. */
static const char *between = "graph host_between\n"
                             "input %x: f32[8, 64]\n"
                             "%e: f32[8, 64] = aten.exp.default(%x)\n"
                             "%c: f32[8, 64] = aten.logcumsumexp.default(%e, 1)\n"
                             "%r: f32[8, 64] = aten.mul.Tensor(%c, %x)\n"
                             "output %r\n";

static void write_graph(const char *text, char *path, size_t len)
{
    tu_write_tmpfile(".txt", text, strlen(text), path, len);
}

/* Compile graph text for the reference chip with --report into out; the
 * exit code. */
static int compiled_report(const char *text)
{
    char g[512], cmd[1024];
    write_graph(text, g, sizeof g);
    snprintf(cmd, sizeof cmd, "compile %s --report -o /dev/null", g);
    int rc = tu_spyre(cmd, out, sizeof out);
    remove(g);
    return rc;
}

/* Run graph text with --check (and opts) into out; the exit code. */
static int run_checked(const char *text, const char *opts)
{
    char g[512], cmd[1024];
    write_graph(text, g, sizeof g);
    snprintf(cmd, sizeof cmd, "run %s --check%s", g, opts);
    int rc = tu_spyre(cmd, out, sizeof out);
    remove(g);
    return rc;
}

static void test_an_op_the_device_lacks_runs_on_the_host_between_kernels_and_validates(void)
{
    char g[512], cmd[1024];
    write_graph(between, g, sizeof g);
    const char *chips[] = {"spyre", "spyre-4core"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "run %s --check --config %s", g, chips[i]);
        CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "fallback_ops=1 "));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "fallback aten.logcumsumexp.default (graph line 4): bytes_to_host=1024 "
                                           "bytes_to_device=1024 cycles="));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "check r:"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, " ok\n"));
        CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
    }
    /* the report names the host op and its estimate */
    snprintf(cmd, sizeof cmd, "compile %s --report --config spyre", g);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "k1_logcumsumexp: host"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "host fallback aten.logcumsumexp.default (graph line 4)"));
    remove(g);
}

/* The chip waits for the host: cycles= includes the transfers and host
 * time, at least the two PCIe latencies and the dispatch of spyre.cfg
 * (2 x 2000 ns + 5000 ns = 13500 cycles at 1.5 GHz). */
static void test_the_host_time_is_in_the_runs_cycles(void)
{
    char g[512], cmd[1024];
    write_graph(between, g, sizeof g);
    snprintf(cmd, sizeof cmd, "run %s", g);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    double cycles = 0, host = 0;
    const char *c = strstr(out, "cycles="), *h = strstr(out, "host_cycles=");
    CU_ASSERT_FATAL(c && h);
    sscanf(c, "cycles=%lf", &cycles);
    sscanf(h, "host_cycles=%lf", &host);
    CU_ASSERT(host >= 13500);
    CU_ASSERT(cycles > host);
    remove(g);
}

static void test_no_fallback_keeps_the_error_naming_the_op(void)
{
    char g[512], cmd[1024];
    write_graph(between, g, sizeof g);
    snprintf(cmd, sizeof cmd, "run %s --no-fallback", g);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, ":4: the compiler does not lower aten.logcumsumexp.default"));
    snprintf(cmd, sizeof cmd, "compile %s --no-fallback", g);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 2);
    remove(g);
}

static void test_a_graph_of_one_host_op_runs_and_validates(void)
{
    const char *text = "graph host_only\ninput %x: f32[4, 32]\n"
                       "%c: f32[4, 32] = aten.logcumsumexp.default(%x, 1)\noutput %c\n";
    CU_ASSERT_EQUAL(run_checked(text, ""), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fallback_ops=1 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "check c:"));
    CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
}

/* A run of a graph names the host op at its line in the graph file (here
 * below two comment lines), as the compiler's report does. */
static void test_a_host_op_is_named_at_its_line_in_the_graph_file(void)
{
    char g[512], cmd[1024];
    write_graph("# exported\n# by hand\ngraph c\ninput %x: f32[8, 64]\n%e: f32[8, 64] = aten.exp.default(%x)\n"
                "%c: f32[8, 64] = aten.logcumsumexp.default(%e, 1)\noutput %c\n", g, sizeof g);
    snprintf(cmd, sizeof cmd, "run %s", g);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fallback aten.logcumsumexp.default (graph line 6):"));
    remove(g);
}

static void test_a_run_without_host_ops_prints_zero_fallback_ops(void)
{
    CU_ASSERT_EQUAL(tu_spyre("run " SPYRE_SOURCE_DIR "/traces/mlp", out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fallback_ops=0 host_cycles=0\n"));
}

/* The fault names the op's line in the graph file, comments and blank
 * lines counted, as the compiler's FILE:N: messages do. */
static void test_an_op_the_host_lacks_too_is_exit_2_naming_it_at_its_line(void)
{
    char g[512], cmd[1024], said[1024];
    write_graph("# by hand\n\ngraph h\ninput %x: f32[4, 4]\n\n%y: f32[4, 4] = aten.frobnicate.default(%x)\noutput %y\n",
                g, sizeof g);
    snprintf(cmd, sizeof cmd, "run %s", g);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 2);
    snprintf(said, sizeof said, "%s:6: aten.frobnicate.default runs on the host, but the host", g);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, said)); /* a user error at its line, not the device's FAULT */
    CU_ASSERT_PTR_NULL(strstr(out, "FAULT"));
    remove(g);
}

/* A row of 262144 columns does not fit a core's LX: the kernel summing
 * it goes to the host, one op at a time, so the sigmoid fused into it
 * runs on the device again; the report's estimate of the host op is what
 * the run charges (the same model, the same device bytes). */
static void test_an_op_the_back_half_refuses_runs_on_the_host(void)
{
    char g[512], cmd[1024];
    write_graph("graph r\ninput %x: f32[2, 262144]\n%s: f32[2] = aten.sum.dim_IntList(%x, [1])\n"
                "%e: f32[2] = aten.sigmoid.default(%s)\noutput %e\n", g, sizeof g);
    snprintf(cmd, sizeof cmd, "compile %s -o /dev/null --no-fallback", g);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "one row of 262144 columns needs"));
    snprintf(cmd, sizeof cmd, "compile %s --report -o /dev/null", g);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "k0_sum: host"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "k1_sigmoid: pointwise"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "1048576 bytes to the host, 128 back, estimate 202267 cycles"));
    snprintf(cmd, sizeof cmd, "run %s --check", g);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fallback aten.sum.dim_IntList (graph line 3): bytes_to_host=1048576 "
                                       "bytes_to_device=128 cycles=202267"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "check e:"));
    CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
    remove(g);
}

/* A host op of several results writes each one the graph takes, from
 * one `host` instruction (cummax: the compiler has no lowering). */
static void test_a_host_op_of_several_results_is_one_kernel_writing_each(void)
{
    char g[512], cmd[1024];
    write_graph("graph kthg\ninput %x: f32[4, 16]\n%e: f32[4, 16] = aten.exp.default(%x)\n"
                "%s: (f32[4, 16], i64[4, 16]) = aten.cummax.default(%e, 1)\n%v: f32[4, 16] = getitem(%s, 0)\n"
                "%i: i64[4, 16] = getitem(%s, 1)\n%r: f32[4, 16] = aten.mul.Tensor(%v, 2.0)\noutput %r, %i\n",
                g, sizeof g);
    snprintf(cmd, sizeof cmd, "compile %s --report", g);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "k1_cummax: host []\n  ops: aten.cummax.default (line 4)\n  reads: e f32[4, 16]\n"
                                       "  writes: v f32[4, 16], i i64[4, 16]\n"));
    remove(g);
}

/* var_mean over a row longer than a core's LX holds: the back half
 * refuses it, the host runs it once and writes both results (two sticks
 * back), which validate, one of them through the device's mul. */
static void test_a_host_op_of_two_results_runs_once_and_validates(void)
{
    const char *text = "graph vm2\ninput %x: f32[2, 262144]\n"
                       "%s: (f32[2], f32[2]) = aten.var_mean.correction(%x, [1], correction=0)\n"
                       "%v: f32[2] = getitem(%s, 0)\n%m: f32[2] = getitem(%s, 1)\n%r: f32[2] = aten.mul.Tensor(%v, %m)\n"
                       "output %r, %m\n";
    CU_ASSERT_EQUAL(run_checked(text, ""), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fallback_ops=1 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fallback aten.var_mean.correction (graph line 3): bytes_to_host=1048576 "
                                       "bytes_to_device=256 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "check m:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "check r:"));
    CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
}

/* The trace shows the host op as a slice of its own. */
static void test_the_trace_shows_the_host_op(void)
{
    char g[512], js[512], cmd[1200];
    write_graph(between, g, sizeof g);
    tu_tmpfile(".json", js, sizeof js);
    snprintf(cmd, sizeof cmd, "run %s --trace %s", g, js);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    char *t = tu_read_file(js, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_PTR_NOT_NULL(strstr(t, "\"name\":\"k1_logcumsumexp\",\"cat\":\"host\""));
    free(t);
    remove(js);
    remove(g);
}

/* A host op's results that reach the graph's outputs through a view under
 * another name (squeeze of both results of adaptive_max_pool2d) are
 * written and read back: a copy keeps the host's result under its own
 * name (they came back as zeros before). */
static void test_host_results_seen_through_views_reach_the_outputs(void)
{
    const char *text = "graph amp\ninput %x: f32[3, 4, 4]\n%u: f32[3, 4, 1, 4] = aten.unsqueeze.default(%x, -2)\n"
                       "%a: (f32[3, 4, 1, 3], i64[3, 4, 1, 3]) = aten.adaptive_max_pool2d.default(%u, [1, 3])\n"
                       "%v: f32[3, 4, 1, 3] = getitem(%a, 0)\n%i: i64[3, 4, 1, 3] = getitem(%a, 1)\n"
                       "%si: i64[3, 4, 3] = aten.squeeze.dim(%i, -2)\n%sv: f32[3, 4, 3] = aten.squeeze.dim(%v, -2)\n"
                       "output %sv, %si\n";
    CU_ASSERT_EQUAL(run_checked(text, ""), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "check sv:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "check si:"));
    CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
}

/* A host result beyond DL16's range that only goes back to the host
 * (erfcx(-6) is about 8.6e15) stays fp32 on the device and validates. */
static void test_a_host_result_beyond_dl16_range_reaches_the_output(void)
{
    const char *text = "graph big\n%x: f32[4] = aten.full.default([4], -6.0)\n"
                       "%y: f32[4] = aten.special_erfcx.default(%x)\noutput %y\n";
    CU_ASSERT_EQUAL(run_checked(text, ""), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fallback_ops=1 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "check y:"));
    CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
}

/* A host result beyond DL16's range that a device kernel reads (DeBERTa's
 * masked_fill(finfo.min) on the host, then softmax) takes its stand-in on
 * the device, as an upload does: the softmax of equal huge values is
 * uniform, PyTorch's 0.25, where the DL16 copy read NaN. */
static void test_a_host_result_beyond_dl16_range_a_kernel_reads_takes_its_stand_in(void)
{
    const char *text = "graph hb\n%x: f32[2, 4] = aten.full.default([2, 4], -6.0)\n"
                       "%y: f32[2, 4] = aten.special_erfcx.default(%x)\n"
                       "%p: f32[2, 4] = aten._softmax.default(%y, 1, False)\noutput %p\n";
    const char *opts[] = {" --config spyre", " --config spyre-4core"};
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(run_checked(text, opts[i]), 0);
        TU_ASSERT_CONTAINS(out, "fallback_ops=1 ");
        TU_ASSERT_CONTAINS(out, "check p: max_abs_err=0.0e+00 ");
        CU_ASSERT_PTR_NULL(strstr(out, "nan="));
        CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
    }
}

/* A host op reading a value that lies channels-last between convs under
 * its own name: the host's copy takes the name (it was refused: "cannot
 * go to the host under its own name"). */
static void test_a_host_op_reads_a_value_kept_channels_last(void)
{
    const char *text = "graph hc\ninput %x: f32[1, 8, 12, 12]\ninput %w1: f32[16, 8, 3, 3]\n"
                       "%c1: f32[1, 16, 12, 12] = aten.convolution.default(%x, %w1, None, [1, 1], [1, 1], [1, 1], False, "
                       "[0, 0], 1)\n%r1: f32[1, 16, 12, 12] = aten.relu.default(%c1)\n"
                       "%k: f32[1, 16, 12, 12] = aten.logcumsumexp.default(%r1, 3)\n"
                       "%o: f32[1, 16, 12, 12] = aten.add.Tensor(%k, %r1)\noutput %o\n";
    CU_ASSERT_EQUAL(run_checked(text, " --config spyre-4core"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fallback_ops=1 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "check o:"));
    CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
}

/* A 3-D transposed convolution runs on the host (the compiler lowers 1-D
 * and 2-D ones only): its 512x512x3x3x1 weight w and its input x are read
 * by no kernel, so the layout pass sticks each on the dim that pads least
 * (w's 512 output channels, x's 512 channels) instead of the last (a 1
 * padded to a stick of 64).  `tail` is what follows the conv (graph line 5
 * on). */
static void write_host_conv(const char *dir, const char *tail)
{
    char path[1024], text[1024];
    snprintf(text, sizeof text, "graph hostw\nweights \"weights.safetensors\"\ninput %%x: f32[1, 512, 4, 4, 1]\n"
             "param %%w: f32[512, 512, 3, 3, 1] = \"w\"\n%%c: f32[1, 512, 6, 6, 1] = aten.convolution.default(%%x, "
             "%%w, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], True, [0, 0, 0], 1)\n%s", tail);
    snprintf(path, sizeof path, "%s/graph.txt", dir);
    tu_write_file(path, text, strlen(text));
    enum { N = 512 * 512 * 9 };
    float *w = malloc(N * sizeof *w);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    for (int i = 0; i < N; i++) /* values that differ along every dim, so a misplaced one shows */
        w[i] = 0.05f * sinf(0.37f * (float)i);
    rt_st_entry e = {.name = "w", .dtype = RT_ST_F32, .rank = 5, .shape = {512, 512, 3, 3, 1}, .data = w};
    char err[256];
    snprintf(path, sizeof path, "%s/weights.safetensors", dir);
    CU_ASSERT_EQUAL(rt_st_write(path, &e, 1, err, sizeof err), 0);
    free(w);
}

/* Unpadded, w is 512 x 512 x 9 DL16 values, 4,718,592 bytes (sticked on
 * its last dim, 512 x 512 x 9 sticks of 128 bytes: 301,989,888), and x
 * 8,192 values in 128 sticks, 16,384 bytes (1,048,576 on its last dim); the
 * host op fetches both, and the run uploads w twice (the seeded fill,
 * then the export's values). */
static void test_a_weight_only_the_host_reads_is_sticked_where_it_pads_least(void)
{
    char dir[512], cmd[1024];
    tu_tmpdir(dir, sizeof dir);
    write_host_conv(dir, "%c4: f32[1, 512, 6, 6] = aten.squeeze.dim(%c, 4)\n"
                         "%r: f32[1, 512, 6, 6] = aten.relu.default(%c4)\noutput %r\n");
    snprintf(cmd, sizeof cmd, "compile %s --dump-after=layout", dir);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    TU_ASSERT_CONTAINS(out, "tensor w weight dims 512x512x3x3x1 dl16 stick_dim 1 at 0 bytes 4718592\n",
                       "tensor x input dims 1x512x4x4x1 dl16 stick_dim 1 at 4718592 bytes 16384\n",
                       "tensor c scratch dims 1x512x6x6x1 dl16 stick_dim 4 ");
    snprintf(cmd, sizeof cmd, "run %s --check", dir);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    TU_ASSERT_CONTAINS(out, " weights_uploaded=9437184 ",
                       "fallback aten.convolution.default (graph line 5): bytes_to_host=4734976 ", "check r:", " ok\n");
    TU_ASSERT_LACKS(out, "MISMATCH");
    tu_rmtree(dir);
}

/* The host op's result returned as it is (fp32 on the device: only the
 * host reads it) is sticked on its 512 channels too, 16 sticks of 32
 * per pixel (73,728 bytes, as unpadded; 2,359,296 on its last dim), and is
 * read back through that layout. */
static void test_a_host_result_no_kernel_reads_is_read_back_through_its_stick(void)
{
    char dir[512], cmd[1024];
    tu_tmpdir(dir, sizeof dir);
    write_host_conv(dir, "output %c\n");
    snprintf(cmd, sizeof cmd, "compile %s --dump-after=layout", dir);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    TU_ASSERT_CONTAINS(out, "tensor c output dims 1x512x6x6x1 f32 stick_dim 1 ", " bytes 73728\n");
    snprintf(cmd, sizeof cmd, "run %s --check", dir);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    TU_ASSERT_CONTAINS(out, "bytes_to_host=4734976 bytes_to_device=73728 ", "check c:", " ok\n");
    TU_ASSERT_LACKS(out, "MISMATCH");
    tu_rmtree(dir);
}

/* A kernel reading the weight too (w + w on the device, its lanes along
 * the last dim) keeps the stick the kernel walks: the device's layouts
 * are not the host's to choose. */
static void test_a_weight_a_kernel_also_reads_keeps_the_kernels_stick(void)
{
    char dir[512], cmd[1024];
    tu_tmpdir(dir, sizeof dir);
    write_host_conv(dir, "%w4: f32[512, 512, 3, 3] = aten.squeeze.dim(%w, 4)\n"
                         "%d: f32[512, 512, 3, 3] = aten.add.Tensor(%w4, %w4)\noutput %c, %d\n");
    snprintf(cmd, sizeof cmd, "compile %s --dump-after=layout", dir);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    TU_ASSERT_CONTAINS(out, "tensor w weight dims 512x512x3x3x1 dl16 stick_dim 4 at 0 bytes 301989888\n");
    tu_rmtree(dir);
}

/* Cross-attention's in-projection (nn.MultiheadAttention with query !=
 * key): q takes the bias [0:32], k and v the slice [32:96], which starts
 * at element 32 of a stick.  A matmul epilogue cannot restickify an
 * operand, so that add is compiled again apart from its product, as a
 * row kernel that restickifies the slice: no op goes to the host (it did,
 * both splits: 30,779 of 32,387 cycles; now 2,386), even with --no-fallback,
 * below one host op's least cost (13,500 cycles, above), and q's
 * add, which reads whole sticks, stays its product's epilogue.  The values
 * meet the reference's per-element DL16 tolerance of an addmm
 * (docs/validation.md: the rounding of the operands and of the result);
 * a bias read 32 elements off would miss it by a whole bias value. */
static void test_a_bias_slice_starting_inside_a_stick_runs_on_the_device(void)
{
    const char *text = "graph xattn_bias\ninput %q: f32[12, 32]\ninput %k: f32[14, 32]\n"
                       "input %w: f32[96, 32]\ninput %b: f32[96]\n"
                       "%sw: (f32[32, 32], f32[64, 32]) = aten.split_with_sizes.default(%w, [32, 64])\n"
                       "%w0: f32[32, 32] = getitem(%sw, 0)\n%w1: f32[64, 32] = getitem(%sw, 1)\n"
                       "%sb: (f32[32], f32[64]) = aten.split_with_sizes.default(%b, [32, 64])\n"
                       "%b0: f32[32] = getitem(%sb, 0)\n%b1: f32[64] = getitem(%sb, 1)\n"
                       "%t0: f32[32, 32] = aten.t.default(%w0)\n%t1: f32[32, 64] = aten.t.default(%w1)\n"
                       "%y0: f32[12, 32] = aten.addmm.default(%b0, %q, %t0)\n"
                       "%y1: f32[14, 64] = aten.addmm.default(%b1, %k, %t1)\noutput %y0, %y1\n";
    const char *chips[] = {" --config spyre", " --config spyre-4core"};
    for (int i = 0; i < 2; i++) {
        char opts[64];
        snprintf(opts, sizeof opts, "%s --no-fallback", chips[i]);
        CU_ASSERT_EQUAL(run_checked(text, opts), 0);
        TU_ASSERT_CONTAINS(out, "fallback_ops=0 host_cycles=0\n");
        double cycles = 1e9;
        const char *c = strstr(out, "cycles=");
        CU_ASSERT_FATAL(c != NULL);
        sscanf(c, "cycles=%lf", &cycles);
        CU_ASSERT(cycles < 13500);
        TU_ASSERT_CONTAINS(out, "check y0: ");
        TU_ASSERT_CONTAINS(out, "check y1: ");
        CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
    }
    CU_ASSERT_EQUAL(compiled_report(text), 0);
    TU_ASSERT_CONTAINS(out, "  epilogue: y0[32*m + n] = acc + load(b, n)\n");
    TU_ASSERT_CONTAINS(out, ": pointwise [14, 64]\n  ops: aten.split_with_sizes.default (line 9), "
                            "aten.addmm.default (line 15)\n  reads: y1.mm f32[14, 64], b f32[96]\n");
    CU_ASSERT_PTR_NULL(strstr(out, ": host"));
}

/* Layers of layer_norm, relu, layer_norm over [33, w], graph text into
 * buf: reduction fusion would join the whole chain into one kernel of
 * more nodes than the back half evaluates (IR_KERNEL_NODES). */
static void ln_chain(int layers, int w, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "graph ln_chain\ninput %%x: f32[33, %d]\n", w);
    for (int i = 0; i < layers && o < len; i++) {
        char prev[16] = "x";
        if (i)
            snprintf(prev, sizeof prev, "m_%d", i - 1);
        o += (size_t)snprintf(
            buf + o, len - o,
            "input %%lw_%d: f32[%d]\ninput %%lb_%d: f32[%d]\ninput %%nw_%d: f32[%d]\ninput %%nb_%d: f32[%d]\n"
            "%%ln_%d: (f32[33, %d], f32[33, 1], f32[33, 1]) = "
            "aten.native_layer_norm.default(%%%s, [%d], %%lw_%d, %%lb_%d, 1e-05)\n"
            "%%lo_%d: f32[33, %d] = getitem(%%ln_%d, 0)\n%%r_%d: f32[33, %d] = aten.relu.default(%%lo_%d)\n"
            "%%n_%d: (f32[33, %d], f32[33, 1], f32[33, 1]) = "
            "aten.native_layer_norm.default(%%r_%d, [%d], %%nw_%d, %%nb_%d, 1e-05)\n"
            "%%m_%d: f32[33, %d] = getitem(%%n_%d, 0)\n",
            i, w, i, w, i, w, i, w, i, w, prev, w, i, i, i, w, i, i, w, i, i, w, i, w, i, i, i, w, i);
    }
    if (o < len)
        snprintf(buf + o, len - o, "output %%m_%d\n", layers - 1);
}

/* The options of a run on each chip with no host fallback. */
static const char *const both_chips[] = {" --config spyre --no-fallback", " --config spyre-4core --no-fallback"};

/* text run with --check and opts: it validates, with no op on the host
 * and `want` in what it prints. */
static void runs_on_the_device(const char *text, const char *opts, const char *want)
{
    CU_ASSERT_EQUAL(run_checked(text, opts), 0);
    TU_ASSERT_CONTAINS(out, "fallback_ops=0 host_cycles=0\n");
    TU_ASSERT_CONTAINS(out, want);
    CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
}

/* A bfloat16 or half model's batch norm in eval mode: its two empty
 * statistics take the declared type (the running statistics'), so the
 * graph loads and runs on the device. */
static void test_a_half_models_batch_norm_runs_on_the_device(void)
{
    static char text[1024];
    const char *types[] = {"bf16", "f16"};
    for (int k = 0; k < 2; k++) {
        snprintf(text, sizeof text,
                 "graph bn_half\ninput %%x: %1$s[1, 4, 3, 3]\ninput %%w: %1$s[4]\ninput %%b: %1$s[4]\n"
                 "input %%rm: %1$s[4]\ninput %%v: %1$s[4]\n"
                 "%%a: %1$s[4] = aten.abs.default(%%v)\n"
                 "%%bn: (%1$s[1, 4, 3, 3], %1$s[0], %1$s[0]) = aten.native_batch_norm.default(%%x, %%w, %%b, %%rm, "
                 "%%a, False, 0.1, 1e-05)\n"
                 "%%y: %1$s[1, 4, 3, 3] = getitem(%%bn, 0)\noutput %%y\n",
                 types[k]);
        runs_on_the_device(text, " --no-fallback", "check y: ");
    }
}

/* Fusion builds no kernel the back half refuses: a deep chain of layer
 * norms runs on the device, no op falling back to the host.  At width
 * 4096 the fused chain's row does not fit the 4-core chip's LX: the
 * fallback cuts the kernel (IR_SRC_CUT) before any host op. */
static void test_a_deep_layer_norm_chain_runs_on_the_device(void)
{
    static char text[1 << 15];
    const int layers[] = {7, 20};
    for (int l = 0; l < 2; l++) {
        ln_chain(layers[l], 96, text, sizeof text);
        for (int i = 0; i < 2; i++)
            runs_on_the_device(text, both_chips[i], " ok");
    }
    ln_chain(7, 4096, text, sizeof text);
    runs_on_the_device(text, both_chips[1], "check m_6: ");
}

/* nn.EmbeddingBag: bags of one length (a 2-D input: offsets an arange),
 * mean and max with padding_idx; bags of varying length (offsets computed,
 * one empty) with per_sample_weights and include_last_offset. */
static void test_embedding_bags_of_every_mode_run_on_the_device(void)
{
    const char *text = "graph eb\ninput %ids: i64[4, 6]\ninput %flat: i64[12]\ninput %psw: f32[12]\n"
                       "input %w: f32[50, 16]\n"
                       "%a: i64[4] = aten.arange.start_step(0, 24, 6, dtype=i64)\n"
                       "%r: i64[24] = aten._reshape_alias.default(%ids, [24], [1])\n"
                       "%m: (f32[4, 16], i64[24], i64[4], i64[4]) = aten._embedding_bag.default(%w, %r, %a, False, 1)\n"
                       "%m0: f32[4, 16] = getitem(%m, 0)\n"
                       "%x: (f32[4, 16], i64[24], i64[4], i64[4, 16]) = "
                       "aten._embedding_bag.default(%w, %r, %a, False, 2, False, None, False, 3)\n"
                       "%x0: f32[4, 16] = getitem(%x, 0)\n"
                       "%i: i64[4] = aten.arange.default(4)\n%q: i64[4] = aten.mul.Tensor(%i, %i)\n"
                       "%p: i64[4] = aten.sub.Tensor(%q, 1)\n%o: i64[4] = aten.clamp_min.default(%p, 0)\n"
                       "%s: (f32[4, 16], i64[12], i64[4], i64[4]) = "
                       "aten._embedding_bag.default(%w, %flat, %q, False, 0, False, %psw, False, 7)\n"
                       "%s0: f32[4, 16] = getitem(%s, 0)\n"
                       "%e: (f32[4, 16], i64[12], i64[4], i64[4]) = aten._embedding_bag.default(%w, %flat, %o, False, 1)\n"
                       "%e0: f32[4, 16] = getitem(%e, 0)\n"
                       "%l: (f32[3, 16], i64[12], i64[3], i64[3, 16]) = "
                       "aten._embedding_bag.default(%w, %flat, %q, False, 2, False, None, True)\n"
                       "%l0: f32[3, 16] = getitem(%l, 0)\n"
                       "output %m0, %x0, %s0, %e0, %l0\n";
    for (int i = 0; i < 2; i++)
        runs_on_the_device(text, both_chips[i], "check l0: ");
}

/* Offsets given as a graph input (nn.EmbeddingBag(ids, offsets), as a
 * recommender passes them): their values are unbounded to the compiler,
 * and the bag mask's cat of them with N was refused as inexact ("integer
 * values up to 16777216"), the bag on the host.  Only compares read them
 * now: sum, and mean with include_last_offset, check on both chips. */
static void test_embedding_bags_over_input_offsets_run_on_the_device(void)
{
    const char *text = "graph ebo\ninput %flat: i64[12]\ninput %off: i64[4]\ninput %w: f32[50, 16]\n"
                       "%s: (f32[4, 16], i64[0], i64[4], i64[4]) = aten._embedding_bag.default(%w, %flat, %off, False, 0)\n"
                       "%s0: f32[4, 16] = getitem(%s, 0)\n"
                       "%l: (f32[3, 16], i64[12], i64[3], i64[3]) = "
                       "aten._embedding_bag.default(%w, %flat, %off, False, 1, False, None, True)\n"
                       "%l0: f32[3, 16] = getitem(%l, 0)\n"
                       "output %s0, %l0\n";
    for (int i = 0; i < 2; i++)
        runs_on_the_device(text, both_chips[i], "check l0: ");
}

/* padding_idx of a large table (4096 x 128) gathers its mask from a
 * table of one stick per row (4096 x 64), not one as large as the
 * weight's; the bags check on both chips. */
static void test_an_embedding_bags_padding_mask_of_a_large_table_is_one_stick_wide(void)
{
    const char *text = "graph ebq\ninput %ids: i64[4, 6]\ninput %w: f32[4096, 128]\n"
                       "%a: i64[4] = aten.arange.start_step(0, 24, 6, dtype=i64)\n"
                       "%r: i64[24] = aten._reshape_alias.default(%ids, [24], [1])\n"
                       "%x: (f32[4, 128], i64[24], i64[4], i64[4]) = "
                       "aten._embedding_bag.default(%w, %r, %a, False, 1, False, None, False, 3)\n"
                       "%x0: f32[4, 128] = getitem(%x, 0)\noutput %x0\n";
    CU_ASSERT_EQUAL(compiled_report(text), 0);
    TU_ASSERT_CONTAINS(out, "reads: x.const f32[4096, 64], ids i64[4, 6]\n");
    for (int i = 0; i < 2; i++)
        runs_on_the_device(text, both_chips[i], "check x0: ");
}

/* The bags' other results are not lowered: a graph reading offset2bag
 * runs the op on the host, and --no-fallback says why. */
static void test_an_embedding_bags_offset2bag_runs_on_the_host_saying_why(void)
{
    const char *text = "graph eb2\ninput %w: f32[20, 8]\ninput %ids: i64[6]\n"
                       "%a: i64[3] = aten.arange.start_step(0, 6, 2, dtype=i64)\n"
                       "%m: (f32[3, 8], i64[6], i64[3], i64[3]) = aten._embedding_bag.default(%w, %ids, %a, False, 1)\n"
                       "%m0: f32[3, 8] = getitem(%m, 0)\n%m1: i64[6] = getitem(%m, 1)\noutput %m0, %m1\n";
    CU_ASSERT_EQUAL(run_checked(text, ""), 0);
    TU_ASSERT_CONTAINS(out, "fallback_ops=1 ");
    CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
    CU_ASSERT_EQUAL(run_checked(text, " --no-fallback"), 2);
    TU_ASSERT_CONTAINS(out, "result 1 (offset2bag, bag_size, max_indices) is not lowered");
}

/* torch.cdist of p = 2 over 8 and 30 rows and _euclidean_dist; p = 1,
 * inf and 3 with batch dims that broadcast. */
static void test_cdist_of_every_p_runs_on_the_device(void)
{
    const char *text = "graph cd\ninput %a: f32[8, 16]\ninput %b: f32[6, 16]\ninput %c: f32[30, 16]\n"
                       "input %u: f32[2, 5, 4]\ninput %v: f32[3, 4]\n"
                       "%d2: f32[8, 6] = aten._cdist_forward.default(%a, %b, 2.0, None)\n"
                       "%m2: f32[30, 6] = aten._cdist_forward.default(%c, %b, 2.0, None)\n"
                       "%e2: f32[8, 6] = aten._euclidean_dist.default(%a, %b)\n"
                       "%d1: f32[2, 5, 3] = aten._cdist_forward.default(%u, %v, 1.0, None)\n"
                       "%di: f32[2, 5, 3] = aten._cdist_forward.default(%u, %v, inf, None)\n"
                       "%d3: f32[2, 5, 3] = aten._cdist_forward.default(%u, %v, 3.0, None)\n"
                       "output %d2, %m2, %e2, %d1, %di, %d3\n";
    for (int i = 0; i < 2; i++)
        runs_on_the_device(text, both_chips[i], "check d3: ");
}

/* Close points (distances near 0.04, |a|^2 near 40) past 25 rows: the
 * distances are differences on the device, within the reference's bound,
 * which |a|^2 + |b|^2 - 2ab in DL16 misses by up to 0.19. */
static void test_cdist_of_close_points_past_25_rows_checks(void)
{
    const char *text = "graph close_points\ninput %x: f32[30, 8]\ninput %n: f32[30, 8]\n"
                       "%a: f32[30, 8] = aten.mul.Tensor(%x, 4.0)\n%s: f32[30, 8] = aten.mul.Tensor(%n, 0.02)\n"
                       "%b: f32[30, 8] = aten.add.Tensor(%a, %s)\n"
                       "%d: f32[30, 30] = aten._cdist_forward.default(%a, %b, 2.0, None)\n"
                       "%e: f32[30, 30] = aten._euclidean_dist.default(%a, %b)\noutput %d, %e\n";
    for (int i = 0; i < 2; i++) {
        runs_on_the_device(text, both_chips[i], "check d: ");
        TU_ASSERT_CONTAINS(out, "check e: ");
    }
}

/* Rows 1024 wide: a sort's and a topk's indices stay within 1024 (an
 * amin of the hit positions), so they run on the device. */
static void test_sort_topk_argmax_of_1024_wide_rows_run_on_the_device(void)
{
    const char *text = "graph wide\ninput %x: f32[2, 1024]\n"
                       "%s: (f32[2, 1024], i64[2, 1024]) = aten.sort.default(%x, 1, True)\n"
                       "%sv: f32[2, 1024] = getitem(%s, 0)\n%si: i64[2, 1024] = getitem(%s, 1)\n"
                       "%k: (f32[2, 7], i64[2, 7]) = aten.topk.default(%x, 7)\n"
                       "%kv: f32[2, 7] = getitem(%k, 0)\n%ki: i64[2, 7] = getitem(%k, 1)\n"
                       "%a: i64[2] = aten.argmax.default(%x, -1)\noutput %sv, %si, %kv, %ki, %a\n";
    for (int i = 0; i < 2; i++)
        runs_on_the_device(text, both_chips[i], "check ki: ");
}

/* any and all are a max or min of 0/1 and a compare: exact at any width
 * (rows of 2,000 and of a bool input, with dim, kept, and of all). */
static void test_any_and_all_run_on_the_device_exactly(void)
{
    const char *text = "graph anyall\ninput %m: bool[4, 40]\ninput %x: f32[3, 2000]\n"
                       "%a: bool[4] = aten.any.dim(%m, -1)\n%b: bool[1, 40] = aten.all.dim(%m, 0, True)\n"
                       "%c: bool[] = aten.any.default(%m)\n%g: bool[3, 2000] = aten.gt.Scalar(%x, -3)\n"
                       "%w: bool[3] = aten.all.dim(%g, -1)\n%z: bool[3, 2000] = aten.gt.Scalar(%x, 5)\n"
                       "%v: bool[3, 1] = aten.any.dim(%z, 1, True)\noutput %a, %b, %c, %w, %v\n";
    for (int i = 0; i < 2; i++) {
        runs_on_the_device(text, both_chips[i], "check v: max_abs_err=0.0e+00 ");
        TU_ASSERT_CONTAINS(out, "check a: max_abs_err=0.0e+00 ");
        TU_ASSERT_CONTAINS(out, "check b: max_abs_err=0.0e+00 ");
        TU_ASSERT_CONTAINS(out, "check c: max_abs_err=0.0e+00 ");
    }
}

/* median (the lower middle, a NaN row's NaN) and kthvalue by sort's ranks,
 * prod by halves (an odd extent, all elements), dist of p = 2 and 3. */
static void test_median_kthvalue_prod_dist_run_on_the_device(void)
{
    const char *text = "graph mkpd\ninput %x: f32[5, 9]\ninput %y: f32[5, 9]\n"
                       "%n: f32[5, 9] = aten.log.default(%x)\n"
                       "%m: (f32[5], i64[5]) = aten.median.dim(%n, -1)\n%mv: f32[5] = getitem(%m, 0)\n"
                       "%mi: i64[5] = getitem(%m, 1)\n%ma: f32[] = aten.median.default(%x)\n"
                       "%k: (f32[1, 9], i64[1, 9]) = aten.kthvalue.default(%x, 2, 0, True)\n"
                       "%kv: f32[1, 9] = getitem(%k, 0)\n%ki: i64[1, 9] = getitem(%k, 1)\n"
                       "%p: f32[5, 1] = aten.prod.dim_int(%x, 1, True)\n%pa: f32[] = aten.prod.default(%y)\n"
                       "%d: f32[] = aten.dist.default(%x, %y)\n%d3: f32[] = aten.dist.default(%x, %y, 3)\n"
                       "output %mv, %mi, %ma, %kv, %ki, %p, %pa, %d, %d3\n";
    for (int i = 0; i < 2; i++)
        runs_on_the_device(text, both_chips[i], "check d3: ");
}

/* bucketize and searchsorted count the boundaries below (right: not
 * above), per row for a 2-D sequence (sorted, or through a sorter: a
 * binary search's result is the count only then); nn.Bilinear's
 * _trilinear is a product and a sum over rows. */
static void test_bucketize_searchsorted_bilinear_run_on_the_device(void)
{
    const char *text = "graph bsb\ninput %x: f32[4, 16]\ninput %b: f32[5]\ninput %s: f32[4, 7]\n"
                       "input %u: f32[6, 20]\ninput %v: f32[6, 12]\ninput %w: f32[40, 20, 12]\n"
                       "%bs: (f32[5], i64[5]) = aten.sort.default(%b)\n%bv: f32[5] = getitem(%bs, 0)\n"
                       "%ss: (f32[4, 7], i64[4, 7]) = aten.sort.default(%s)\n%sv: f32[4, 7] = getitem(%ss, 0)\n"
                       "%l: i64[4, 16] = aten.bucketize.Tensor(%x, %bv)\n"
                       "%r: i32[4, 16] = aten.bucketize.Tensor(%x, %bv, out_int32=True, right=True)\n"
                       "%t: i64[4, 16] = aten.searchsorted.Tensor(%sv, %x, side=\"right\")\n"
                       "%bi: i64[5] = getitem(%bs, 1)\n%q: i64[4, 16] = aten.searchsorted.Tensor(%b, %x, sorter=%bi)\n"
                       "%o: f32[6, 40] = aten._trilinear.default(%u, %w, %v, [1, 3], [0], [1, 2], [2, 3])\n"
                       "output %l, %r, %t, %q, %o\n";
    for (int i = 0; i < 2; i++)
        runs_on_the_device(text, both_chips[i], "check o: ");
}

/* Horizontal fusion joins copies of slices that share a read: 40 cats
 * of x and 7 inputs each would make one kernel of more loads than a row
 * kernel holds (IR_KERNEL_LOADS).  The 4-core chip's LX holds no row of
 * the kernels that fusion makes: the fallback cuts them (IR_SRC_CUT). */
static void test_many_cats_sharing_an_input_run_on_the_device(void)
{
    static char text[1 << 15];
    size_t o = (size_t)snprintf(text, sizeof text, "graph many_loads\ninput %%x: f32[16, 64]\n");
    for (int i = 0; i < 40; i++) {
        for (int j = 0; j < 7; j++)
            o += (size_t)snprintf(text + o, sizeof text - o, "input %%a_%d_%d: f32[16, 64]\n", i, j);
        o += (size_t)snprintf(text + o, sizeof text - o, "%%c_%d: f32[16, 512] = aten.cat.default([%%x", i);
        for (int j = 0; j < 7; j++)
            o += (size_t)snprintf(text + o, sizeof text - o, ", %%a_%d_%d", i, j);
        o += (size_t)snprintf(text + o, sizeof text - o, "], 1)\n");
    }
    o += (size_t)snprintf(text + o, sizeof text - o, "output %%c_0");
    for (int i = 1; i < 40; i++)
        o += (size_t)snprintf(text + o, sizeof text - o, ", %%c_%d", i);
    snprintf(text + o, sizeof text - o, "\n");
    for (int i = 0; i < 2; i++)
        runs_on_the_device(text, both_chips[i], "check c_39: ");
}

/* A 3x3 conv of x (n, 4, 8, 8) into (n, 16, 8, 8), then `norm` of %c
 * (graph text, results %y...), into buf. */
static void conv_then(int n, const char *norm, char *buf, size_t len)
{
    snprintf(buf, len,
             "graph conv_norm\ninput %%x: f32[%d, 4, 8, 8]\ninput %%w: f32[16, 4, 3, 3]\ninput %%b: f32[16]\n"
             "input %%g: f32[16]\ninput %%h: f32[16]\n"
             "%%c: f32[%d, 16, 8, 8] = aten.convolution.default(%%x, %%w, %%b, [1, 1], [1, 1], [1, 1], False, "
             "[0, 0], 1)\n%s",
             n, n, norm);
}

/* A conv's result is channels-last and padded; a norm's sums over (h, w)
 * read it NCHW, two reduced loops that do not merge, which the back half
 * refuses (it reduces one): they read a copy with the reduced dims last
 * instead, and no op, the conv least, goes to the host. */
static void test_a_norm_or_sum_after_a_conv_runs_on_the_device(void)
{
    static const char *norms[] = {
        /* a diffusion ResBlock's GroupNorm, SiLU; batch 2 */
        "%n: (f32[2, 16, 8, 8], f32[2, 4], f32[2, 4]) = aten.native_group_norm.default(%c, %g, %h, 2, 16, 64, 4, "
        "1e-05)\n%y0: f32[2, 16, 8, 8] = getitem(%n, 0)\n%y: f32[2, 16, 8, 8] = aten.silu.default(%y0)\noutput %y\n",
        /* one group; affine=False */
        "%n: (f32[1, 16, 8, 8], f32[1, 1], f32[1, 1]) = aten.native_group_norm.default(%c, None, None, 1, 16, 64, "
        "1, 1e-05)\n%y: f32[1, 16, 8, 8] = getitem(%n, 0)\noutput %y\n",
        /* a group per channel */
        "%n: (f32[1, 16, 8, 8], f32[1, 16], f32[1, 16]) = aten.native_group_norm.default(%c, %g, %h, 1, 16, 64, "
        "16, 1e-05)\n%y: f32[1, 16, 8, 8] = getitem(%n, 0)\noutput %y\n",
        /* LayerNorm([16, 8, 8]) */
        "input %lw: f32[16, 8, 8]\ninput %lb: f32[16, 8, 8]\n%n: (f32[1, 16, 8, 8], f32[1, 1, 1, 1], "
        "f32[1, 1, 1, 1]) = aten.native_layer_norm.default(%c, [16, 8, 8], %lw, %lb, 1e-05)\n"
        "%y: f32[1, 16, 8, 8] = getitem(%n, 0)\noutput %y\n",
        /* a sum over dims 1 and 3, which no contiguous copy walks as one run */
        "%y: f32[1, 8] = aten.sum.dim_IntList(%c, [1, 3])\noutput %y\n",
        /* InstanceNorm2d, as exported: batch norm's statistics over the view */
        "%v: f32[1, 16, 8, 8] = aten.view.default(%c, [1, 16, 8, 8])\n%n: (f32[1, 16, 8, 8], f32[16], f32[16]) = "
        "aten.native_batch_norm.default(%v, %g, %h, None, None, True, 0.1, 1e-05)\n"
        "%y: f32[1, 16, 8, 8] = getitem(%n, 0)\noutput %y\n",
    };
    const char *chips[] = {" --config spyre --no-fallback", " --config spyre-4core --no-fallback"};
    char text[2048];
    for (size_t k = 0; k < sizeof norms / sizeof *norms; k++) {
        conv_then(k ? 1 : 2, norms[k], text, sizeof text);
        for (int i = 0; i < 2; i++)
            runs_on_the_device(text, chips[i], "check y: ");
    }
}

/* A kernel the back half refuses, a 1x1 conv's copy out fused with a
 * softmax over 16384 channels, whose row does not fit the 4-core chip's
 * LX: the softmax goes to the host, the conv's product stays on the
 * device. */
static void test_a_refused_kernel_sends_the_op_after_a_conv_to_the_host(void)
{
    const char *text = "graph conv_softmax\ninput %x: f32[1, 16, 4, 4]\ninput %w: f32[16384, 16, 1, 1]\n"
                       "input %b: f32[16384]\n%c: f32[1, 16384, 4, 4] = aten.convolution.default(%x, %w, %b, [1, 1], "
                       "[0, 0], [1, 1], False, [0, 0], 1)\n%y: f32[1, 16384, 4, 4] = aten._softmax.default(%c, 1, False)\n"
                       "output %y\n";
    CU_ASSERT_EQUAL(run_checked(text, " --config spyre-4core"), 0);
    TU_ASSERT_CONTAINS(out, "fallback_ops=1 ");
    TU_ASSERT_CONTAINS(out, "fallback aten._softmax.default (graph line 6)");
    CU_ASSERT_PTR_NULL(strstr(out, "fallback aten.convolution"));
    TU_ASSERT_CONTAINS(out, "check y: ");
    TU_ASSERT_CONTAINS(out, " ok\n");
    CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
}

/* A 1x1 conv's copy out of rows 8192 wide, fused with a relu, is refused
 * for the copy itself: the relu goes to the host first, then the conv,
 * and the relu comes back to the device (227701 cycles with both on the
 * host, 78987 with the conv alone). */
static void test_a_conv_refused_for_its_own_copy_sends_only_the_conv_to_the_host(void)
{
    const char *text = "graph conv_relu_wide\ninput %x: f32[1, 4, 1, 8192]\ninput %w: f32[16, 4, 1, 1]\n"
                       "%c: f32[1, 16, 1, 8192] = aten.convolution.default(%x, %w, None, [1, 1], [0, 0], [1, 1], "
                       "False, [0, 0], 1)\n%y: f32[1, 16, 1, 8192] = aten.relu.default(%c)\noutput %y\n";
    const char *chips[] = {" --config spyre", " --config spyre-4core"};
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(run_checked(text, chips[i]), 0);
        TU_ASSERT_CONTAINS(out, "fallback_ops=1 ", "fallback aten.convolution.default (graph line 4)", "check y: ",
                           " ok\n");
        TU_ASSERT_LACKS(out, "fallback aten.relu", "MISMATCH");
    }
}

/* Decompose folds an identity (clone) into the value it copies, but the
 * host op runs its source line, which reads the clone by name: the clone
 * of a device kernel's result, of a view (its transpose), of an input. */
static const char *reads_clone = "graph host_reads_clone\n"
                                 "input %x: f32[8, 64]\n"
                                 "%e: f32[8, 64] = aten.exp.default(%x)\n"
                                 "%c: f32[8, 64] = aten.clone.default(%e)\n"
                                 "%l: f32[8, 64] = aten.logcumsumexp.default(%c, 1)\n"
                                 "%r: f32[8, 64] = aten.mul.Tensor(%l, %x)\n"
                                 "output %r\n";
static const char *reads_clone_of_view = "graph host_reads_clone_of_view\n"
                                         "input %x: f32[64, 8]\n"
                                         "%t: f32[8, 64] = aten.t.default(%x)\n"
                                         "%c: f32[8, 64] = aten.clone.default(%t, memory_format=\"contiguous_format\")\n"
                                         "%l: f32[8, 64] = aten.logcumsumexp.default(%c, 1)\n"
                                         "output %l\n";
/* a graph input's clone, and a host result's detach read by another host op */
static const char *reads_clone_of_input = "graph host_reads_clone_of_input\n"
                                          "input %x: f32[8, 64]\n"
                                          "%c: f32[8, 64] = aten.clone.default(%x)\n"
                                          "%l: f32[8, 64] = aten.logcumsumexp.default(%c, 1)\n"
                                          "%d: f32[8, 64] = aten.detach.default(%l)\n"
                                          "%m: f32[8, 64] = aten.logcumsumexp.default(%d, 1)\n"
                                          "%r: f32[8, 64] = aten.mul.Tensor(%m, %c)\n"
                                          "output %r\n";

/* --check's verdict is the DL16-aware tolerance of docs/validation.md:
 * the host op computes in fp32 from its input as the device stored it
 * (DL16, 10-bit significand), the reference from the unrounded fp32
 * values, so each element may differ by the input's rounding carried
 * through the op; ` ok` means every element is within it. */
static void test_a_host_op_reads_a_value_folded_into_anothers_buffer(void)
{
    const char *opts[] = {" --config spyre", " --config spyre-4core"};
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(run_checked(reads_clone, opts[i]), 0);
        TU_ASSERT_CONTAINS(out, "fallback_ops=1 ");
        TU_ASSERT_CONTAINS(out, "check r: ");
        CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
        CU_ASSERT_EQUAL(run_checked(reads_clone_of_view, opts[i]), 0);
        TU_ASSERT_CONTAINS(out, "check l: ");
        CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
        CU_ASSERT_EQUAL(run_checked(reads_clone_of_input, opts[i]), 0);
        TU_ASSERT_CONTAINS(out, "fallback_ops=2 ");
        TU_ASSERT_CONTAINS(out, "check r: ");
        CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
    }
    /* the op reads the buffer under the clone's name */
    CU_ASSERT_EQUAL(compiled_report(reads_clone_of_view), 0);
    TU_ASSERT_CONTAINS(out, "  ops: aten.logcumsumexp.default (line 5)\n  reads: c f32[8, 64]\n");
}

/* A host op reading the clone of a host op's integers (an index computed
 * from an input, expanded and made contiguous for a gather): the copy
 * bringing back the clone's name cannot run on the device (it would read
 * fp32 integers), so the clone runs on the host.  An integer division with
 * a rounding mode once failed to compile (its quotient was f32): it keeps
 * PyTorch's integer type (by a number, exactly on the device). */
static const char *gather_of_a_host_clone = "graph gather_of_a_host_clone\n"
                                            "input %x: f32[8, 8]\n"
                                            "input %i: i64[16]\n"
                                            "%a: i64[16] = aten.add.Tensor(%i, 1)\n"
                                            "%c: i64[16] = aten.clamp.default(%a, 0, 7)\n"
                                            "%v: i64[16, 1] = aten.view.default(%c, [-1, 1])\n"
                                            "%e: i64[16, 8] = aten.expand.default(%v, [-1, 8])\n"
                                            "%k: i64[16, 8] = aten.clone.default(%e, memory_format=\"contiguous_format\")\n"
                                            "%g: f32[16, 8] = aten.gather.default(%x, 0, %k)\n"
                                            "output %g\n";
static const char *int_div_floor = "graph int_div_floor\n"
                                   "input %i: i64[16]\n"
                                   "%d: i64[16] = aten.div.Tensor_mode(%i, -3, rounding_mode=\"floor\")\n"
                                   "%t: i64[16] = aten.div.Tensor_mode(%i, 3, rounding_mode=\"trunc\")\n"
                                   "%s: i64[16] = aten.add.Tensor(%d, %t)\n"
                                   "output %s\n";

/* bitwise_and of integers (6 & 3 is 2), not the logical and the device
 * makes of bools' */
static const char *int_bitwise = "graph int_bitwise\n"
                                 "input %a: i64[16]\ninput %b: i64[16]\n"
                                 "%c: i64[16] = aten.bitwise_and.Tensor(%a, %b)\n"
                                 "%d: i64[16] = aten.bitwise_not.default(%c)\n"
                                 "output %d\n";

static void test_integer_ops_the_device_cannot_run_go_to_the_host_and_check(void)
{
    const char *opts[] = {" --config spyre", " --config spyre-4core"};
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(run_checked(gather_of_a_host_clone, opts[i]), 0);
        TU_ASSERT_CONTAINS(out, "check g: ");
        CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
        CU_ASSERT_EQUAL(run_checked(int_div_floor, opts[i]), 0);
        TU_ASSERT_CONTAINS(out, "check s: ");
        CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
        CU_ASSERT_EQUAL(run_checked(int_bitwise, opts[i]), 0);
        TU_ASSERT_CONTAINS(out, "fallback_ops=2 ");
        TU_ASSERT_CONTAINS(out, "check d: ");
        CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
    }
}

/* A chip whose LX holds almost nothing puts most of encoder_small's ops
 * on the host, one of them reading `%clone` (of a transpose); the run
 * checks against the reference executor and PyTorch's expected output
 * under the same DL16-aware tolerance. */
static void test_encoder_small_on_a_tiny_lx_runs_its_host_ops_and_checks(void)
{
    char cfg[512], text[1024], cmd[2048];
    snprintf(text, sizeof text, "include = %s/chip/configs/spyre.cfg\nname = spyre-tinylx\nlx_usable_bytes = 8192\n",
             SPYRE_SOURCE_DIR);
    tu_write_tmpfile(".cfg", text, strlen(text), cfg, sizeof cfg);
    snprintf(cmd, sizeof cmd, "run %s/traces/encoder_small --check --config %s", SPYRE_SOURCE_DIR, cfg);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NULL(strstr(out, "fallback_ops=0 "));
    TU_ASSERT_CONTAINS(out, "check getitem_6: ");
    TU_ASSERT_CONTAINS(out, "expected getitem_6: ");
    CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
    CU_ASSERT_PTR_NULL(strstr(out, "FAULT"));
    remove(cfg);
}

/* DLRM's pairwise interactions (Z[:, li, lj] with li, lj = tril_indices):
 * tril_indices / triu_indices, linspace and logspace are baked constants,
 * unbind is selects, and an index of several index tensors (adjacent, or
 * apart: their dims first) is one index of combined offsets.  A constant
 * the graph returns is copied into its output. */
static void test_factories_and_an_index_of_two_tensors_run_on_the_device(void)
{
    const char *text = "graph factories\ninput %z: f32[4, 4, 4]\n"
                       "%tri: i64[2, 6] = aten.tril_indices.default(4, 4, -1, device=\"cpu\", pin_memory=False)\n"
                       "%unbind: (i64[6], i64[6]) = aten.unbind.int(%tri)\n"
                       "%li: i64[6] = getitem(%unbind, 0)\n%lj: i64[6] = getitem(%unbind, 1)\n"
                       "%pick: f32[4, 6] = aten.index.Tensor(%z, [None, %li, %lj])\n"
                       "%up: i64[2, 6] = aten.triu_indices.default(4, 4, 1)\n"
                       "%ui: i64[6] = aten.select.int(%up, 0, 0)\n%uj: i64[6] = aten.select.int(%up, 0, 1)\n"
                       "%apart: f32[6, 4] = aten.index.Tensor(%z, [%ui, None, %uj])\n"
                       "%ls: f32[6] = aten.linspace.default(-1, 1, 6, device=\"cpu\", pin_memory=False)\n"
                       "%lg: f32[6] = aten.logspace.default(0, 1, 6, 2.0)\n"
                       "%s1: f32[4, 6] = aten.add.Tensor(%pick, %ls)\n%s2: f32[4, 6] = aten.mul.Tensor(%s1, %lg)\n"
                       "%t: f32[4, 6] = aten.t.default(%apart)\n%r: f32[4, 6] = aten.add.Tensor(%s2, %t)\noutput %r\n";
    runs_on_the_device(text, " --config spyre --no-fallback", "check r: ");
    runs_on_the_device(text, " --config spyre-4core --no-fallback", " ok");
    runs_on_the_device("graph lo\n%linspace: f32[7] = aten.linspace.default(-2, 2, 7)\n"
                       "%tri: i64[2, 6] = aten.tril_indices.default(4, 4, -1)\noutput %linspace, %tri\n",
                       " --no-fallback", "check tri: ");
}

/* Every factory a model's graph holds is lowered, decomposed or baked:
 * with each one's value in a sum, nothing runs on the host. */
static void test_every_factory_runs_on_the_device(void)
{
    const char *text =
        "graph allf\n"
        "input %x: f32[4, 4]\n"
        "%e: f32[4, 4] = aten.eye.default(4)\n"
        "%em: f32[4, 4] = aten.eye.m(4, 4)\n"
        "%f: f32[4, 4] = aten.full.default([4, 4], 2.5)\n"
        "%fl: f32[4, 4] = aten.full_like.default(%x, 3)\n"
        "%zl: f32[4, 4] = aten.zeros_like.default(%x)\n"
        "%ol: f32[4, 4] = aten.ones_like.default(%x)\n"
        "%el: f32[4, 4] = aten.empty_like.default(%x)\n"
        "%ar: f32[4] = aten.arange.start_step(0.5, 4.5, 1.0)\n"
        "%ai: i64[4] = aten.arange.start_step(2, 10, 2)\n"
        "%ac: f32[4] = aten._to_copy.default(%ai, dtype=f32)\n"
        "%st: f32[] = aten.scalar_tensor.default(1.5)\n"
        "%tl: f32[4, 4] = aten.tril.default(%x, -1)\n"
        "%tu: f32[4, 4] = aten.triu.default(%x, 1)\n"
        "%nz: f32[4, 4] = aten.new_zeros.default(%x, [4, 4])\n"
        "%no: f32[4, 4] = aten.new_ones.default(%x, [4, 4])\n"
        "%nf: f32[4, 4] = aten.new_full.default(%x, [4, 4], 0.25)\n"
        "%ls: f32[4] = aten.linspace.default(0, 1, 4)\n"
        "%lg: f32[4] = aten.logspace.default(0, 1, 4)\n"
        "%a1: f32[4, 4] = aten.add.Tensor(%e, %em)\n"
        "%a2: f32[4, 4] = aten.add.Tensor(%a1, %f)\n"
        "%a3: f32[4, 4] = aten.add.Tensor(%a2, %fl)\n"
        "%a4: f32[4, 4] = aten.add.Tensor(%a3, %zl)\n"
        "%a5: f32[4, 4] = aten.add.Tensor(%a4, %ol)\n"
        "%a6: f32[4, 4] = aten.add.Tensor(%a5, %el)\n"
        "%a7: f32[4, 4] = aten.add.Tensor(%a6, %ar)\n"
        "%a8: f32[4, 4] = aten.add.Tensor(%a7, %ac)\n"
        "%a9: f32[4, 4] = aten.mul.Tensor(%a8, %st)\n"
        "%b1: f32[4, 4] = aten.add.Tensor(%a9, %tl)\n"
        "%b2: f32[4, 4] = aten.add.Tensor(%b1, %tu)\n"
        "%b3: f32[4, 4] = aten.add.Tensor(%b2, %nz)\n"
        "%b4: f32[4, 4] = aten.add.Tensor(%b3, %no)\n"
        "%b5: f32[4, 4] = aten.add.Tensor(%b4, %nf)\n"
        "%b6: f32[4, 4] = aten.add.Tensor(%b5, %ls)\n"
        "%b7: f32[4, 4] = aten.add.Tensor(%b6, %lg)\n"
        "output %b7\n";
    runs_on_the_device(text, " --config spyre --no-fallback", "check b7: ");
    runs_on_the_device(text, " --config spyre-4core --no-fallback", " ok");
}

/* Indices beyond DL16's exact integers (1024) stay on the host, and the
 * refusal says why. */
static void test_tril_indices_beyond_dl16_integers_run_on_the_host(void)
{
    const char *text = "graph big\ninput %z: f32[1030, 2]\n"
                       "%tri: i64[2, 2059] = aten.tril_indices.default(1030, 2, 0)\n"
                       "%i: i64[2059] = aten.select.int(%tri, 0, 0)\n"
                       "%p: f32[2059, 2] = aten.index.Tensor(%z, [%i])\noutput %p\n";
    CU_ASSERT_EQUAL(run_checked(text, " --config spyre"), 0);
    TU_ASSERT_CONTAINS(out, "fallback aten.tril_indices.default (graph line 3)");
    TU_ASSERT_CONTAINS(out, " ok\n");
    CU_ASSERT_EQUAL(run_checked(text, " --no-fallback"), 2);
    TU_ASSERT_CONTAINS(out, ":3: aten.tril_indices.default: integer values up to 1029 are not exact on the device");
}

/* Several index tensors whose combined offsets pass DL16's exact
 * integers (40 x 40: up to 1599) run on the host, the refusal saying why
 * (not only that index.Tensor is not lowered). */
static void test_several_indices_beyond_dl16_integers_say_why(void)
{
    const char *text = "graph ix\ninput %x: f32[40, 40]\ninput %a: i64[8]\ninput %b: i64[8]\n"
                       "%r: f32[8] = aten.index.Tensor(%x, [%a, %b])\noutput %r\n";
    CU_ASSERT_EQUAL(run_checked(text, " --no-fallback"), 2);
    TU_ASSERT_CONTAINS(out, ":5: aten.index.Tensor: the indexed dims' combined offsets reach 1599, beyond DL16's "
                            "exact integers (1024)");
    CU_ASSERT_EQUAL(run_checked(text, ""), 0);
    TU_ASSERT_CONTAINS(out, "fallback aten.index.Tensor (graph line 5)");
    TU_ASSERT_CONTAINS(out, " ok\n");
}

/* A factory too big to bake is refused by its bound before its values
 * are made: tril_indices(70000, 70000) (main aborted allocating 39 GB) and
 * a linspace of 10^8 steps (600 MB, 8 s) stop at once. */
static void test_a_huge_factory_is_refused_before_it_is_made(void)
{
    const char *text[] = {"graph big\n%tri: i64[2, 2450035000] = aten.tril_indices.default(70000, 70000, 0)\noutput %tri\n",
                          "graph big\n%l: f32[100000000] = aten.linspace.default(0, 1, 100000000)\noutput %l\n"};
    const char *why[] = {":2: aten.tril_indices.default: integer values up to 69999 are not exact",
                         ":2: aten.linspace.default: 100000000 values are too many to bake"};
    for (int k = 0; k < 2; k++) {
        char g[512], cmd[1024];
        write_graph(text[k], g, sizeof g);
        snprintf(cmd, sizeof cmd, "compile %s -o /dev/null --no-fallback", g);
        CU_ASSERT_EQUAL(tu_spyre_timeout(5, cmd, out, sizeof out), 2);
        TU_ASSERT_CONTAINS(out, why[k]);
        remove(g);
    }
}

/* T5's relative-position bucket: distances, a log bucket past 8, an
 * embedding of the buckets; with and without the clamp below. */
#define T5_BUCKET_HEAD \
    "input %q: f32[20, 20]\n" \
    "%i: i64[20] = aten.arange.default(20)\n" \
    "%c: i64[20, 1] = aten.unsqueeze.default(%i, 1)\n" \
    "%m: i64[1, 20] = aten.unsqueeze.default(%i, 0)\n" \
    "%rel: i64[20, 20] = aten.sub.Tensor(%m, %c)\n" \
    "%z: i64[20, 20] = aten.zeros_like.default(%rel, dtype=i64)\n" \
    "%mn: i64[20, 20] = aten.minimum.default(%rel, %z)\n" \
    "%n: i64[20, 20] = aten.neg.default(%mn)\n" \
    "%f: f32[20, 20] = aten._to_copy.default(%n, dtype=f32)\n"
#define T5_BUCKET_TAIL \
    "%l: f32[20, 20] = aten.log.default(%d)\n" \
    "%d1: f32[20, 20] = aten.div.Tensor(%l, 2.772588722239781)\n" \
    "%s: f32[20, 20] = aten.mul.Tensor(%d1, 8)\n" \
    "%t: i64[20, 20] = aten._to_copy.default(%s, dtype=i64)\n" \
    "%a: i64[20, 20] = aten.add.Tensor(%t, 8)\n" \
    "%full: i64[20, 20] = aten.full_like.default(%a, 15, dtype=i64)\n" \
    "%large: i64[20, 20] = aten.minimum.default(%a, %full)\n" \
    "%lt: bool[20, 20] = aten.lt.Scalar(%n, 8)\n" \
    "%b: i64[20, 20] = aten.where.self(%lt, %n, %large)\n" \
    "%ar: f32[16] = aten.arange.default(16.0)\n" \
    "%col: f32[16, 1] = aten.unsqueeze.default(%ar, 1)\n" \
    "%tab: f32[16, 1] = aten.mul.Tensor(%col, 0.1)\n" \
    "%e: f32[20, 20, 1] = aten.embedding.default(%tab, %b)\n" \
    "%sq: f32[20, 20] = aten.squeeze.dim(%e, -1)\n" \
    "%r: f32[20, 20] = aten.add.Tensor(%q, %sq)\n" \
    "output %b, %r\n"

/* T5's relative-position bucket (traces/models/positions.py:relpos): the
 * cast of log(n / 8) back to int64 is tabulated at compile time, the
 * embedding by the buckets is one-hot; the buckets match the reference
 * exactly. */
static const char *t5_bucket = "graph t5_bucket\n" T5_BUCKET_HEAD
    "%cl: f32[20, 20] = aten.clamp.default(%f, 1)\n"
    "%d: f32[20, 20] = aten.div.Tensor(%cl, 8)\n"
    T5_BUCKET_TAIL;

/* The same as Hugging Face writes it, without the clamp: distance 0 takes
 * log(0) = -inf, cast to int64 (undefined in PyTorch) and discarded by the
 * where; the tabulation refused the infinity and the bucket ran on the
 * host ("integer values up to inf are not exact"). */
static const char *t5_bucket_hf = "graph t5_bucket_hf\n" T5_BUCKET_HEAD
    "%d: f32[20, 20] = aten.div.Tensor(%f, 8)\n"
    T5_BUCKET_TAIL;

/* The i64 values of graph text's value name on the reference executor
 * (its inputs zeros) equal want[0..n). */
static void reference_values_are(const char *text, const char *name, const int64_t *want, int64_t n)
{
    char err[512];
    static float zeros[1 << 16];
    gr_graph *g = gr_graph_parse(text, "t.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    rt_ref *r = rt_ref_new(g, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    int v = gr_graph_find(g, name);
    rt_ref_keep(r, v);
    for (int i = 0; i < g->ninputs; i++) {
        const gr_value *in = &g->values[g->inputs[i]];
        CU_ASSERT_EQUAL(rt_ref_set(r, in->name, zeros, gr_ttype_numel(&in->type), err, sizeof err), 0);
    }
    CU_ASSERT_EQUAL_FATAL(rt_ref_run(r, err, sizeof err), 0);
    const int64_t *got = rt_ref_value_i64(r, v, &(gr_ttype){0});
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    for (int64_t i = 0; i < n; i++)
        CU_ASSERT_EQUAL(got[i], want[i]);
    rt_ref_free(r);
    gr_graph_free(g);
}

static void test_a_t5_relative_position_bucket_runs_on_the_device(void)
{
    /* PyTorch 1.13's buckets of query i, key j: by i - j (0 for j > i); 16 = 2 * 8 lands on log 2 exactly */
    static const int64_t by_distance[20] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 10};
    int64_t want[400];
    for (int i = 0; i < 400; i++)
        want[i] = i / 20 > i % 20 ? by_distance[i / 20 - i % 20] : 0;
    reference_values_are(t5_bucket, "b", want, 400);
    const char *chips[] = {" --config spyre --no-fallback", " --config spyre-4core --no-fallback"};
    for (int i = 0; i < 2; i++) { /* the device's buckets are the reference's, so PyTorch's */
        runs_on_the_device(t5_bucket, chips[i], "check b: max_abs_err=0.0e+00 ");
        TU_ASSERT_CONTAINS(out, "check r: ");
    }
}

/* Token ids an embedding gathers (fp32 on the device) and a padding
 * mask compares (ids != 0, ids < 1000: SASRec, any model masking its pad
 * tokens): the comparisons ran on the host.  They read the ids rounded
 * to DL16 (100 wide: two sticks of DL16, four of fp32), exact against
 * values inside (-1024, 1024) for ids up to 2999;
 * a one_hot of the same ids beside their embedding (wide & deep) too.
 * Both check on both chips. */
static const char *const id_mask = "graph idmask\ninput %ids: i64[4, 100] range=[0, 2999]\ninput %w: f32[3000, 64]\n"
                                   "%e: f32[4, 100, 64] = aten.embedding.default(%w, %ids, 0)\n"
                                   "%ne: bool[4, 100] = aten.ne.Scalar(%ids, 0)\n"
                                   "%lt: bool[4, 100] = aten.lt.Scalar(%ids, LIMIT)\n"
                                   "%a: bool[4, 100] = aten.logical_and.default(%ne, %lt)\n"
                                   "%u: bool[4, 100, 1] = aten.unsqueeze.default(%a, -1)\n"
                                   "%f: f32[4, 100, 1] = aten._to_copy.default(%u, dtype=f32)\n"
                                   "%m: f32[4, 100, 64] = aten.mul.Tensor(%e, %f)\noutput %m, %f\n";

static void id_mask_at(int limit, char *buf, size_t len)
{
    const char *at = strstr(id_mask, "LIMIT");
    snprintf(buf, len, "%.*s%d%s", (int)(at - id_mask), id_mask, limit, at + 5);
}

static void test_a_mask_of_the_ids_an_embedding_gathers_runs_on_the_device(void)
{
    char text[2048];
    id_mask_at(1000, text, sizeof text);
    const char *one_hot = "graph wd\ninput %cat: i64[8] range=[0, 39]\ninput %w: f32[40, 8]\ninput %v: f32[1, 40]\n"
                          "%u: i64[8, 1] = aten.unsqueeze.default(%cat, -1)\n"
                          "%r: i64[40] = aten.arange.default(40, device=\"cpu\", pin_memory=False)\n"
                          "%eq: bool[8, 40] = aten.eq.Tensor(%u, %r)\n"
                          "%o: f32[8, 40] = aten._to_copy.default(%eq, dtype=f32)\n"
                          "%t: f32[40, 1] = aten.t.default(%v)\n%mm: f32[8, 1] = aten.mm.default(%o, %t)\n"
                          "%e: f32[8, 8] = aten.embedding.default(%w, %cat)\n"
                          "%s: f32[8, 1] = aten.sum.dim_IntList(%e, [1], True)\n"
                          "%y: f32[8, 1] = aten.add.Tensor(%mm, %s)\noutput %y\n";
    for (int i = 0; i < 2; i++) {
        runs_on_the_device(text, both_chips[i], "check f: ");
        runs_on_the_device(one_hot, both_chips[i], "check y: ");
    }
}

/* Compared with 1024 the rounded ids would be wrong (1025 reads as
 * 1024): that comparison runs on the host, the refusal saying why, and
 * the values check. */
static void test_ids_compared_past_dl16_integers_run_on_the_host(void)
{
    char text[2048];
    id_mask_at(1024, text, sizeof text);
    CU_ASSERT_EQUAL(run_checked(text, " --no-fallback"), 2);
    TU_ASSERT_CONTAINS(out, "integer values up to 2999 are not exact on the device");
    CU_ASSERT_EQUAL(run_checked(text, ""), 0);
    TU_ASSERT_CONTAINS(out, "fallback aten.lt.Scalar (graph line 6)");
    TU_ASSERT_CONTAINS(out, "check f: ");
    CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
}

static void test_a_t5_bucket_without_the_clamp_runs_on_the_device(void)
{
    static const int64_t by_distance[20] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 10};
    int64_t want[400];
    for (int i = 0; i < 400; i++)
        want[i] = i / 20 > i % 20 ? by_distance[i / 20 - i % 20] : 0;
    reference_values_are(t5_bucket_hf, "b", want, 400);
    const char *chips[] = {" --config spyre --no-fallback", " --config spyre-4core --no-fallback"};
    for (int i = 0; i < 2; i++) {
        runs_on_the_device(t5_bucket_hf, chips[i], "check b: max_abs_err=0.0e+00 ");
        TU_ASSERT_CONTAINS(out, "check r: ");
    }
}

/* (log(n.float()) / log(10)).long() at n = 1000 is 3 only while log(1000)
 * is rounded as glibc rounds it: one ulp lower (another libm, PyTorch's
 * SLEEF) truncates to 2, so the cast is not tabulated and runs on the
 * host. */
static void test_a_cast_to_int_one_ulp_from_an_integer_runs_on_the_host(void)
{
    static const char *text = "graph log10_cast\n"
                              "input %q: f32[6]\n"
                              "%i: i64[6] = aten.arange.start(995, 1001)\n"
                              "%f: f32[6] = aten._to_copy.default(%i, dtype=f32)\n"
                              "%l: f32[6] = aten.log.default(%f)\n"
                              "%d: f32[6] = aten.div.Tensor(%l, 2.302585092994046)\n"
                              "%t: i64[6] = aten._to_copy.default(%d, dtype=i64)\n"
                              "%r: f32[6] = aten.add.Tensor(%q, %t)\n"
                              "output %t, %r\n";
    static const int64_t want[6] = {2, 2, 2, 2, 2, 3}; /* PyTorch 1.13 */
    reference_values_are(text, "t", want, 6);
    CU_ASSERT_EQUAL(run_checked(text, " --no-fallback"), 2);
    TU_ASSERT_CONTAINS(out, "casts to i64 are not supported");
    CU_ASSERT_EQUAL(run_checked(text, ""), 0);
    TU_ASSERT_CONTAINS(out, "fallback aten._to_copy.default (graph line 7)");
    TU_ASSERT_CONTAINS(out, " ok\n");
    CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
}

/* (arange(1, 8).float().rsqrt() * 244.948959).long() at 6 is 99: PyTorch
 * rounds sqrt and then the division (1/sqrt(6) rounded once is an ulp
 * higher: exactly 100.0).  The tabulation computes PyTorch's fp32 (opsem's
 * f32): 99, or the host; never 100 on the device. */
static void test_a_cast_of_rsqrt_is_pytorchs_fp32_not_a_double_rounded_once(void)
{
    static const char *text = "graph rsqrt_index\n"
                              "input %x: f32[7]\n"
                              "%i: i64[7] = aten.arange.start(1, 8)\n"
                              "%f: f32[7] = aten._to_copy.default(%i, dtype=f32)\n"
                              "%s: f32[7] = aten.rsqrt.default(%f)\n"
                              "%m: f32[7] = aten.mul.Tensor(%s, 244.948959)\n"
                              "%t: i64[7] = aten._to_copy.default(%m, dtype=i64)\n"
                              "%r: f32[7] = aten.add.Tensor(%x, %t)\n"
                              "output %t, %r\n";
    static const int64_t want[7] = {244, 173, 141, 122, 109, 99, 92}; /* PyTorch 1.13 */
    reference_values_are(text, "t", want, 7);
    CU_ASSERT_EQUAL(run_checked(text, ""), 0);
    TU_ASSERT_CONTAINS(out, "check t: max_abs_err=0.0e+00 ");
}

/* embedding(w, arange) (GPT-2's wpe) reads w's rows as a plain load: no
 * gather, no one-hot. */
static void test_learned_positions_are_a_load_of_the_tables_rows(void)
{
    static const char *text = "graph learned_positions\n"
                              "input %w: f32[64, 32]\n"
                              "input %x: f32[1, 16, 32]\n"
                              "%i: i64[16] = aten.arange.default(16)\n"
                              "%p: i64[1, 16] = aten.unsqueeze.default(%i, 0)\n"
                              "%e: f32[1, 16, 32] = aten.embedding.default(%w, %p)\n"
                              "%r: f32[1, 16, 32] = aten.add.Tensor(%x, %e)\n"
                              "output %r\n";
    CU_ASSERT_EQUAL(compiled_report(text), 0);
    TU_ASSERT_CONTAINS(out, "k0_arange_embedding_add: pointwise [512]\n");
    TU_ASSERT_CONTAINS(out, "reads: x f32[1, 16, 32], w f32[64, 32]\n");
    runs_on_the_device(text, " --config spyre --no-fallback", "check r: ");
    runs_on_the_device(text, " --config spyre-4core --no-fallback", "check r: ");
}

/* linspace as PyTorch computes it (two halves, from each end), an even
 * and an odd count, against the reference executor on both chips. */
static void test_linspace_runs_on_the_device(void)
{
    static const char *text = "graph linspace\n"
                              "input %x: f32[16]\n"
                              "input %y: f32[7]\n"
                              "%a: f32[16] = aten.linspace.default(-1, 1, 16)\n"
                              "%b: f32[7] = aten.linspace.default(0.5, 10, 7)\n"
                              "%r: f32[16] = aten.add.Tensor(%x, %a)\n"
                              "%s: f32[7] = aten.add.Tensor(%y, %b)\n"
                              "output %r, %s\n";
    runs_on_the_device(text, " --config spyre --no-fallback", "check s: ");
    runs_on_the_device(text, " --config spyre-4core --no-fallback", "check s: ");
}

/* A cast to bool inside a tabulated cast is v != 0, not v:
 * ((n.float() * 0.5).bool().float() * 2.5).long() is 2 from n = 1 on, as
 * PyTorch's (not 1.25 n truncated). */
static void test_a_cast_to_bool_inside_a_tabulated_cast_is_nonzero(void)
{
    static const char *text = "graph bool_cast\n"
                              "input %q: f32[20]\n"
                              "%i: i64[20] = aten.arange.default(20)\n"
                              "%f: f32[20] = aten._to_copy.default(%i, dtype=f32)\n"
                              "%h: f32[20] = aten.mul.Tensor(%f, 0.5)\n"
                              "%b: bool[20] = aten._to_copy.default(%h, dtype=bool)\n"
                              "%bf: f32[20] = aten._to_copy.default(%b, dtype=f32)\n"
                              "%m: f32[20] = aten.mul.Tensor(%bf, 2.5)\n"
                              "%t: i64[20] = aten._to_copy.default(%m, dtype=i64)\n"
                              "%r: f32[20] = aten.add.Tensor(%q, %t)\n"
                              "output %t, %r\n";
    int64_t want[20] = {0}; /* PyTorch 1.13: [0, 2, 2, ..., 2] */
    for (int i = 1; i < 20; i++)
        want[i] = 2;
    reference_values_are(text, "t", want, 20);
    runs_on_the_device(text, " --config spyre --no-fallback", "check t: max_abs_err=0.0e+00 ");
    runs_on_the_device(text, " --config spyre-4core --no-fallback", "check t: max_abs_err=0.0e+00 ");
}


/* The device's max-pool indices are the reference's (PyTorch's values:
 * test_reference_ops.c) for windows of -inf beside padding and of two
 * NaNs, 2-D and 3-D, on both chips. */
static void test_max_pool_indices_of_inf_and_nan_windows_run_on_the_device(void)
{
    float x3[27];
    tu_pool_x3(x3);
    const char *text[] = {tu_pool_nan_2d, tu_pool_nan_3d};
    const float *x[] = {tu_pool_x2, x3};
    const size_t bytes[] = {sizeof tu_pool_x2, sizeof x3};
    const char *chips[] = {" --config spyre", " --config spyre-4core"};
    for (int k = 0; k < 2; k++) {
        char raw[512], opts[1024];
        tu_write_tmpfile(".raw", x[k], bytes[k], raw, sizeof raw);
        for (int i = 0; i < 2; i++) {
            snprintf(opts, sizeof opts, "%s --no-fallback --input x=%s", chips[i], raw);
            runs_on_the_device(text[k], opts, "check mi: max_abs_err=0.0e+00 ");
        }
        remove(raw);
    }
}

/* The max_abs_err (rel 0) or max_rel_err (rel 1) of `check NAME:` in o; -1 when absent. */
static double check_err(const char *o, const char *name, int rel)
{
    char key[128];
    snprintf(key, sizeof key, "check %s: ", name);
    const char *c = strstr(o, key);
    double abs_err = -1, rel_err = -1;
    if (c)
        sscanf(c + strlen(key), "max_abs_err=%lf max_rel_err=%lf", &abs_err, &rel_err);
    return rel ? rel_err : abs_err;
}

/* A tabulated cast whose integers leave DL16's exact range (up to 1900)
 * and one whose values lie near an integer without being one are refused
 * naming why; both run on the host and validate. */
static void test_a_cast_to_int_the_device_cannot_hold_exactly_runs_on_the_host(void)
{
    static char text[1024];
    const char *scale[] = {"100.0", "0.999999"};
    const char *why[] = {":7: aten.add.Tensor: integer values up to 1900 are not exact", "casts to i64 are not supported"};
    for (int k = 0; k < 2; k++) {
        snprintf(text, sizeof text,
                 "graph cast_refused\n"
                 "input %%q: f32[20, 20]\n"
                 "%%i: i64[20] = aten.arange.default(20)\n"
                 "%%f: f32[20] = aten._to_copy.default(%%i, dtype=f32)\n"
                 "%%m: f32[20] = aten.mul.Tensor(%%f, %s)\n"
                 "%%t: i64[20] = aten._to_copy.default(%%m, dtype=i64)\n"
                 "%%r: f32[20, 20] = aten.add.Tensor(%%q, %%t)\n"
                 "output %%r\n",
                 scale[k]);
        CU_ASSERT_NOT_EQUAL(run_checked(text, " --no-fallback"), 0);
        TU_ASSERT_CONTAINS(out, why[k]);
        CU_ASSERT_EQUAL(run_checked(text, ""), 0);
        TU_ASSERT_CONTAINS(out, k ? "fallback_ops=5 " : "fallback_ops=2 ");
        TU_ASSERT_CONTAINS(out, " ok\n");
        CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
        /* the host ops pass m to each other in fp32, so 18.999981 truncates to 18 as in the
         * reference (through DL16 it came back as 19, an error of 1); what is left is q's DL16 */
        CU_ASSERT(check_err(out, "r", 0) < 0.01);
    }
}

/* Consecutive host ops pass their values in fp32 on the host, as the host
 * computes them (runtime/fallback.c); a device kernel reading one of them
 * reads it rounded to DL16 once.  The input (0.5) is exact in DL16, so the host
 * chain's only error is the host's fp32 arithmetic: a few ulps (1e-5 is
 * about 80 of fp32's, for libm's differences between machines), where
 * DL16 between the host ops gave 5.9e-04. */
static void test_a_chain_of_host_ops_passes_fp32_values(void)
{
    const char *text = "graph host_chain\n"
                       "%x: f32[8, 64] = aten.full.default([8, 64], 0.5)\n"
                       "%a: f32[8, 64] = aten.logcumsumexp.default(%x, 1)\n"
                       "%b: f32[8, 64] = aten.logcumsumexp.default(%a, 1)\n"
                       "%c: f32[8, 64] = aten.special_erfcx.default(%b)\n"
                       "%d: f32[8, 64] = aten.mul.Tensor(%a, 0.5)\n"
                       "output %c, %d\n";
    const char *chips[] = {" --config spyre", " --config spyre-4core"};
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(run_checked(text, chips[i]), 0);
        TU_ASSERT_CONTAINS(out, "fallback_ops=3 ");
        CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
        CU_ASSERT(check_err(out, "c", 1) < 1e-5);
        /* d, on the device, reads a in DL16: about DL16's half ulp (2^-10) */
        double d = check_err(out, "d", 1);
        CU_ASSERT(d > 0 && d < 2e-3);
        /* a goes to the device once, for d; b, which only the host reads, has no device copy;
         * neither comes back to the host */
        TU_ASSERT_CONTAINS(out, "(graph line 3): bytes_to_host=1024 bytes_to_device=1024 ");
        TU_ASSERT_CONTAINS(out, "(graph line 4): bytes_to_host=0 bytes_to_device=0 ");
        TU_ASSERT_CONTAINS(out, "(graph line 5): bytes_to_host=0 bytes_to_device=2048 ");
        /* stepwise, a and b are no cuts (the host passes them in fp32, not as their DL16 copies):
         * x alone is */
        CU_ASSERT_EQUAL(run_checked(text, " --stepwise"), 0);
        CU_ASSERT(check_err(out, "c stepwise (cuts=1)", 1) >= 0 && check_err(out, "c stepwise (cuts=1)", 1) < 1e-5);
    }
    /* an output only host ops read besides stays fp32 on the device too (2048 bytes back):
     * 6.4e-04 through DL16 */
    const char *out_b = "graph host_chain_out\n"
                        "%x: f32[8, 64] = aten.full.default([8, 64], 0.5)\n"
                        "%a: f32[8, 64] = aten.logcumsumexp.default(%x, 1)\n"
                        "%b: f32[8, 64] = aten.logcumsumexp.default(%a, 1)\n"
                        "%c: f32[8, 64] = aten.special_erfcx.default(%b)\n"
                        "output %b, %c\n";
    CU_ASSERT_EQUAL(run_checked(out_b, ""), 0);
    TU_ASSERT_CONTAINS(out, "(graph line 4): bytes_to_host=0 bytes_to_device=2048 ");
    CU_ASSERT(check_err(out, "b", 1) >= 0 && check_err(out, "b", 1) < 1e-5);
    CU_ASSERT(check_err(out, "c", 1) >= 0 && check_err(out, "c", 1) < 1e-5);
}

/* A value of 72 chars names its tensor by gr_tensor_name's hash: the host
 * op still finds it, writes the device copy d reads (it wrote none: d read
 * a tensor nobody wrote, MISMATCH), and passes it to the next host op in
 * fp32 (the compiler marks it so in the program: ISA_TF_HOST). */
static void test_a_host_chain_value_with_a_72_char_name_validates(void)
{
#define LONG "%a_value_with_a_rather_long_name_that_exceeds_sixty_four_bytes_of_text_xx"
    const char *text = "graph host_chain_long\n"
                       "%x: f32[8, 64] = aten.full.default([8, 64], 0.5)\n"
                       LONG ": f32[8, 64] = aten.logcumsumexp.default(%x, 1)\n"
                       "%b: f32[8, 64] = aten.logcumsumexp.default(" LONG ", 1)\n"
                       "%c: f32[8, 64] = aten.special_erfcx.default(%b)\n"
                       "%d: f32[8, 64] = aten.mul.Tensor(" LONG ", 0.5)\n"
                       "output %c, %d\n";
#undef LONG
    CU_ASSERT_EQUAL(run_checked(text, ""), 0);
    CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
    CU_ASSERT(check_err(out, "c", 1) >= 0 && check_err(out, "c", 1) < 1e-5);
    double d = check_err(out, "d", 1);
    CU_ASSERT(d > 0 && d < 2e-3);
    TU_ASSERT_CONTAINS(out, "(graph line 3): bytes_to_host=1024 bytes_to_device=1024 ");
    TU_ASSERT_CONTAINS(out, "(graph line 4): bytes_to_host=0 bytes_to_device=0 ");
}

int main(void)
{
    static const tu_test tests[] = {
        {"an op the device lacks runs on the host between kernels and validates",
         test_an_op_the_device_lacks_runs_on_the_host_between_kernels_and_validates},
        {"the host time is in the run's cycles", test_the_host_time_is_in_the_runs_cycles},
        {"--no-fallback keeps the error naming the op", test_no_fallback_keeps_the_error_naming_the_op},
        {"a graph of one host op runs and validates", test_a_graph_of_one_host_op_runs_and_validates},
        {"a run without host ops prints fallback_ops=0", test_a_run_without_host_ops_prints_zero_fallback_ops},
        {"a host op is named at its line in the graph file", test_a_host_op_is_named_at_its_line_in_the_graph_file},
        {"an op the host lacks too is exit 2 naming it at its line", test_an_op_the_host_lacks_too_is_exit_2_naming_it_at_its_line},
        {"the trace shows the host op", test_the_trace_shows_the_host_op},
        {"an op the back half refuses runs on the host", test_an_op_the_back_half_refuses_runs_on_the_host},
        {"a host op of two results runs once and validates", test_a_host_op_of_two_results_runs_once_and_validates},
        {"a host op of several results is one kernel writing each",
         test_a_host_op_of_several_results_is_one_kernel_writing_each},
        {"host results seen through views reach the outputs", test_host_results_seen_through_views_reach_the_outputs},
        {"a host result beyond DL16's range reaches the output",
         test_a_host_result_beyond_dl16_range_reaches_the_output},
        {"a host result beyond DL16's range a kernel reads takes its stand-in",
         test_a_host_result_beyond_dl16_range_a_kernel_reads_takes_its_stand_in},
        {"a host op reads a value kept channels-last", test_a_host_op_reads_a_value_kept_channels_last},
        {"a weight only the host reads is sticked where it pads least",
         test_a_weight_only_the_host_reads_is_sticked_where_it_pads_least},
        {"a host result no kernel reads is read back through its stick",
         test_a_host_result_no_kernel_reads_is_read_back_through_its_stick},
        {"a weight a kernel also reads keeps the kernel's stick", test_a_weight_a_kernel_also_reads_keeps_the_kernels_stick},
        {"a bias slice starting inside a stick runs on the device",
         test_a_bias_slice_starting_inside_a_stick_runs_on_the_device},
        {"a host op reads a value folded into another's buffer",
         test_a_host_op_reads_a_value_folded_into_anothers_buffer},
        {"a deep layer norm chain runs on the device", test_a_deep_layer_norm_chain_runs_on_the_device},
        {"many cats sharing an input run on the device", test_many_cats_sharing_an_input_run_on_the_device},
        {"a half model's batch norm runs on the device", test_a_half_models_batch_norm_runs_on_the_device},
        {"a norm or sum after a conv runs on the device", test_a_norm_or_sum_after_a_conv_runs_on_the_device},
        {"a conv refused for its own copy sends only the conv to the host",
         test_a_conv_refused_for_its_own_copy_sends_only_the_conv_to_the_host},
        {"a refused kernel sends the op after a conv to the host",
         test_a_refused_kernel_sends_the_op_after_a_conv_to_the_host},
        {"embedding bags of every mode run on the device", test_embedding_bags_of_every_mode_run_on_the_device},
        {"embedding bags over input offsets run on the device", test_embedding_bags_over_input_offsets_run_on_the_device},
        {"an embedding bag's padding mask of a large table is one stick wide",
         test_an_embedding_bags_padding_mask_of_a_large_table_is_one_stick_wide},
        {"an embedding bag's offset2bag runs on the host saying why",
         test_an_embedding_bags_offset2bag_runs_on_the_host_saying_why},
        {"cdist of every p runs on the device", test_cdist_of_every_p_runs_on_the_device},
        {"cdist of close points past 25 rows checks", test_cdist_of_close_points_past_25_rows_checks},
        {"sort, topk, argmax of 1024-wide rows run on the device",
         test_sort_topk_argmax_of_1024_wide_rows_run_on_the_device},
        {"any and all run on the device exactly", test_any_and_all_run_on_the_device_exactly},
        {"median, kthvalue, prod, dist run on the device", test_median_kthvalue_prod_dist_run_on_the_device},
        {"bucketize, searchsorted, bilinear run on the device", test_bucketize_searchsorted_bilinear_run_on_the_device},
        {"factories and an index of two tensors run on the device",
         test_factories_and_an_index_of_two_tensors_run_on_the_device},
        {"every factory runs on the device", test_every_factory_runs_on_the_device},
        {"tril_indices beyond DL16's integers run on the host", test_tril_indices_beyond_dl16_integers_run_on_the_host},
        {"several indices beyond DL16 integers say why", test_several_indices_beyond_dl16_integers_say_why},
        {"a huge factory is refused before it is made", test_a_huge_factory_is_refused_before_it_is_made},
        {"a T5 relative-position bucket runs on the device", test_a_t5_relative_position_bucket_runs_on_the_device},
        {"a T5 bucket without the clamp runs on the device", test_a_t5_bucket_without_the_clamp_runs_on_the_device},
        {"a mask of the ids an embedding gathers runs on the device",
         test_a_mask_of_the_ids_an_embedding_gathers_runs_on_the_device},
        {"ids compared past DL16 integers run on the host", test_ids_compared_past_dl16_integers_run_on_the_host},
        {"max-pool indices of -inf and NaN windows run on the device",
         test_max_pool_indices_of_inf_and_nan_windows_run_on_the_device},
        {"a cast of rsqrt is PyTorch's fp32, not a double rounded once",
         test_a_cast_of_rsqrt_is_pytorchs_fp32_not_a_double_rounded_once},
        {"a cast to bool inside a tabulated cast is nonzero", test_a_cast_to_bool_inside_a_tabulated_cast_is_nonzero},
        {"a cast to int one ulp from an integer runs on the host",
         test_a_cast_to_int_one_ulp_from_an_integer_runs_on_the_host},
        {"learned positions are a load of the table's rows", test_learned_positions_are_a_load_of_the_tables_rows},
        {"linspace runs on the device", test_linspace_runs_on_the_device},
        {"a cast to int the device cannot hold exactly runs on the host",
         test_a_cast_to_int_the_device_cannot_hold_exactly_runs_on_the_host},
        {"a chain of host ops passes fp32 values", test_a_chain_of_host_ops_passes_fp32_values},
        {"a host chain value with a 72-char name validates", test_a_host_chain_value_with_a_72_char_name_validates},
        {"integer ops the device cannot run go to the host and check",
         test_integer_ops_the_device_cannot_run_go_to_the_host_and_check},
        {"encoder_small on a tiny LX runs its host ops and checks",
         test_encoder_small_on_a_tiny_lx_runs_its_host_ops_and_checks},
        {NULL, NULL},
    };
    return tu_run("fallback", tests);
}
