/* bench_mm: how close compiled matmul kernels get to the chip's peak MAC
 * rate.  Three chained 1024-wide linears (ReLU between them) are compiled
 * for spyre and simulated timing-only; the middle kernel takes its A from
 * LX (kept by the first) and its B from DRAM.  Prints each kernel's MAC
 * utilization (MACs / (cycles x cores x 1024 MACs per cycle)), the same
 * with every core loading its own B (forced grids, for comparison); then
 * the same for three chained 2048-wide linears and for Llama-3-8B's MLP
 * at 512 tokens (bench_llama's layer: gate, up with SiLU and the product,
 * down with the residual; weights too large for a core's LX whole), each
 * with its kernels' least utilization; and the headline figure last. */
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

static const char *chain2048_text = "graph mlp3_2048\n"
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

static const char *llama_mlp_text = "graph llama_mlp\n"
                                    "input %x: f32[512, 4096]\n"
                                    "input %res: f32[512, 4096]\n"
                                    "input %wg: f32[14336, 4096]\n"
                                    "input %wu: f32[14336, 4096]\n"
                                    "input %wd: f32[4096, 14336]\n"
                                    "%tg: f32[4096, 14336] = aten.t.default(%wg)\n"
                                    "%g: f32[512, 14336] = aten.mm.default(%x, %tg)\n"
                                    "%s: f32[512, 14336] = aten.silu.default(%g)\n"
                                    "%tu: f32[4096, 14336] = aten.t.default(%wu)\n"
                                    "%u: f32[512, 14336] = aten.mm.default(%x, %tu)\n"
                                    "%h: f32[512, 14336] = aten.mul.Tensor(%s, %u)\n"
                                    "%td: f32[14336, 4096] = aten.t.default(%wd)\n"
                                    "%d: f32[512, 4096] = aten.mm.default(%h, %td)\n"
                                    "%y: f32[512, 4096] = aten.add.Tensor(%res, %d)\n"
                                    "output %y\n";

/* Compile with the work divisions wd[0..n), simulate timing-only; the
 * middle kernel's utilization (and in *least the least of any kernel
 * with MACs), or -1. */
static double run(const gr_graph *g, rt_device *dev, const char *const *wd, int n, const char *tag, double *least)
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
    if (least)
        *least = 1;
    for (int k = 0; k < res.stats.nkernels; k++) {
        const sim_kernel_stats *ks = &res.stats.kernels[k];
        double u = (double)ks->macs / ((ks->end - ks->start) * peak);
        printf("%s_%s_mac_utilization=%.3f\n", tag, ks->name, u);
        printf("%s_%s_dram_bytes=%llu\n", tag, ks->name, (unsigned long long)ks->dram_bytes);
        if (k == 1)
            mid = u;
        if (least && ks->macs && u < *least)
            *least = u;
    }
    rt_unload(prog);
    return mid;
}

/* The graph text's kernels compiled as the cost model chooses; the least
 * utilization, or -1. */
static double run_text(rt_device *dev, const char *text, const char *tag)
{
    char err[1024];
    gr_graph *g = gr_graph_parse(text, tag, err, sizeof err);
    if (!g) {
        fprintf(stderr, "bench_mm: %s\n", err);
        return -1;
    }
    double least = -1;
    if (run(g, dev, NULL, 0, tag, &least) < 0)
        least = -1;
    gr_graph_free(g);
    if (least >= 0)
        printf("%s_least_mac_utilization=%.3f\n", tag, least);
    return least;
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
    double forced = run(g, dev, own, 3, "own_b", NULL);
    double mid = run(g, dev, NULL, 0, "compiled", NULL);
    gr_graph_free(g);
    double c2048 = run_text(dev, chain2048_text, "mm2048");
    double mlp = run_text(dev, llama_mlp_text, "llama_mlp");
    rt_close(dev);
    if (mid < 0 || forced < 0 || c2048 < 0 || mlp < 0)
        return 3;
    printf("target_least_mac_utilization=0.65\n");
    printf("target_mac_utilization=0.70\n");
    printf("compiled_mm1024_mac_utilization=%.3f\n", mid);
    return 0;
}
