/* bench_mm: how close a compiled 1024^3 matmul kernel gets to the chip's
 * peak MAC rate.  Three chained 1024-wide linears (ReLU between them) are
 * compiled for spyre and simulated timing-only; the middle kernel takes
 * its A from LX (kept by the first) and its B from DRAM.  Prints each
 * kernel's MAC utilization (MACs / (cycles x cores x 1024 MACs per
 * cycle)), the same with every core loading its own B (forced grids, for
 * comparison), and the headline figure last. */
#include <stdio.h>
#include <stdlib.h>

#include "benchutil.h"
#include "cc.h"
#include "rt.h"

static const char *graph_text = "graph mlp3_1024\n"
                                "input %x: f32[1024, 1024]\n"
                                "input %w1: f32[1024, 1024]\n"
                                "input %w2: f32[1024, 1024]\n"
                                "input %w3: f32[1024, 1024]\n"
                                "%h1: f32[1024, 1024] = aten.mm.default(%x, %w1)\n"
                                "%r1: f32[1024, 1024] = aten.relu.default(%h1)\n"
                                "%h2: f32[1024, 1024] = aten.mm.default(%r1, %w2)\n"
                                "%r2: f32[1024, 1024] = aten.relu.default(%h2)\n"
                                "%h3: f32[1024, 1024] = aten.mm.default(%r2, %w3)\n"
                                "output %h3\n";

/* Compile with the work divisions wd[0..n), simulate timing-only; the
 * middle kernel's utilization, or -1. */
static double run(const gr_graph *g, rt_device *dev, const char *const *wd, int n, const char *tag)
{
    char err[1024];
    const chip_config *cfg = rt_config(dev);
    cc_compile_opts o = {0};
    o.target = cfg;
    o.work_div = wd;
    o.nwork_div = n;
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    if (!r) {
        fprintf(stderr, "bench_mm: %s\n", err);
        return -1;
    }
    isa_program *p = cc_result_take_program(r);
    cc_result_free(r);
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    rt_run_result res;
    if (!prog || rt_launch(prog, &res)) {
        fprintf(stderr, "bench_mm: %s\n", prog ? "the run failed" : err);
        return -1;
    }
    double peak = (double)cfg->cores * cfg->corelets * cfg->pt_rows * cfg->pt_cols * cfg->pt_lanes, mid = -1;
    for (int k = 0; k < res.stats.nkernels; k++) {
        const sim_kernel_stats *ks = &res.stats.kernels[k];
        double u = (double)ks->macs / ((ks->end - ks->start) * peak);
        printf("%s_%s_mac_utilization=%.3f\n", tag, ks->name, u);
        printf("%s_%s_dram_bytes=%llu\n", tag, ks->name, (unsigned long long)ks->dram_bytes);
        if (k == 1)
            mid = u;
    }
    rt_unload(prog);
    return mid;
}

int main(void)
{
    char err[1024], *path = chip_config_path("spyre"); /* lives as long as the benchmark */
    rt_device *dev = rt_open(path, err, sizeof err);
    gr_graph *g = gr_graph_parse(graph_text, "bench_mm", err, sizeof err);
    if (!dev || !g) {
        fprintf(stderr, "bench_mm: %s\n", err);
        return 2;
    }
    bench_sim_options(dev, 0, 0);
    static const char *const own[] = {"k0_mm_relu=32x1", "k1_mm_relu=32x1", "k2_mm=32x1"};
    double forced = run(g, dev, own, 3, "own_b");
    double mid = run(g, dev, NULL, 0, "compiled");
    gr_graph_free(g);
    rt_close(dev);
    if (mid < 0 || forced < 0)
        return 3;
    printf("target_mac_utilization=0.70\n");
    printf("compiled_mm1024_mac_utilization=%.3f\n", mid);
    return 0;
}
