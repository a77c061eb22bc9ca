/* bench_conv: how close compiled convolutions get to a matrix product of
 * the same MACs.  ResNet-18's conv shapes (the 7x7 stride-2 stem, 3x3 at
 * each stage, a 1x1 stride-2 downsample) and MobileNetV2's depthwise 3x3,
 * batch 1, each compiled for spyre as its own graph and simulated
 * timing-only, whole program (the padded channels-last copy of the input,
 * the taps' products, the NCHW result); then the matmul of the same M, N,
 * K (M = output pixels, N = output channels, K = input channels x taps; a
 * batch of one per group).  Prints the MAC utilization (MACs / (cycles x
 * cores x 1024 MACs per cycle)) of each and their ratio; for the conv
 * also over its PT kernels alone (the taps, without the NCHW <->
 * channels-last copies a graph of NCHW tensors needs at its ends; a
 * depthwise conv runs on the SFP, with no PT kernel), the
 * headline figure (the smallest whole-program ratio over ResNet-18's
 * shapes) last. */
#include <stdio.h>
#include <stdlib.h>

#include "benchutil.h"
#include "cc.h"
#include "rt.h"

typedef struct {
    const char *name;
    int cin, cout, hw, k, stride, groups, resnet;
} conv_case;

static const conv_case cases[] = {
    {"stem_7x7_s2_3_64_224", 3, 64, 224, 7, 2, 1, 1},
    {"3x3_64_56", 64, 64, 56, 3, 1, 1, 1},
    {"3x3_128_28", 128, 128, 28, 3, 1, 1, 1},
    {"3x3_256_14", 256, 256, 14, 3, 1, 1, 1},
    {"3x3_512_7", 512, 512, 7, 3, 1, 1, 1},
    {"1x1_s2_64_128_56", 64, 128, 56, 1, 2, 1, 1},
    {"dw_3x3_144_28", 144, 144, 28, 3, 1, 144, 0},
};

/* Simulate g on dev timing-only: the cycles, or -1; *pt the cycles of
 * the kernels that use the PT (spans; the conv's taps). */
static double cycles_of(const char *text, rt_device *dev, double *pt)
{
    char err[1024];
    gr_graph *g = gr_graph_parse(text, "bench_conv", err, sizeof err);
    double secs;
    isa_program *p = g ? bench_compile(g, rt_config(dev), &secs, err, sizeof err) : NULL;
    gr_graph_free(g);
    rt_program *prog = p ? rt_load_program(dev, p, err, sizeof err) : NULL;
    rt_run_result res;
    if (!prog || rt_launch(prog, &res)) {
        fprintf(stderr, "bench_conv: %s\n", prog ? "the run failed" : err);
        if (prog)
            rt_unload(prog);
        return -1;
    }
    rt_unload(prog);
    *pt = 0;
    for (int k = 0; k < res.stats.nkernels; k++)
        if (res.stats.kernels[k].macs)
            *pt += res.stats.kernels[k].end - res.stats.kernels[k].start;
    return res.stats.cycles;
}

/* The utilization of the conv (whole, and its PT kernels) and of its
 * matmul (whole); 0, or -1. */
static int run_case(const conv_case *c, rt_device *dev, double *uc, double *ut, double *um)
{
    const int pad = c->k / 2, oh = (c->hw + 2 * pad - c->k) / c->stride + 1, cig = c->cin / c->groups;
    const int cog = c->cout / c->groups;
    const long M = (long)oh * oh, N = cog, K = (long)cig * c->k * c->k, G = c->groups;
    char conv[1024], mm[1024];
    snprintf(conv, sizeof conv,
             "graph conv\ninput %%x: f32[1, %d, %d, %d]\ninput %%w: f32[%d, %d, %d, %d]\n"
             "%%y: f32[1, %d, %d, %d] = aten.convolution.default(%%x, %%w, None, [%d, %d], [%d, %d], [1, 1], False, "
             "[0, 0], %d)\noutput %%y\n",
             c->cin, c->hw, c->hw, c->cout, cig, c->k, c->k, c->cout, oh, oh, c->stride, c->stride, pad, pad, c->groups);
    snprintf(mm, sizeof mm,
             "graph mm\ninput %%a: f32[%ld, %ld, %ld]\ninput %%b: f32[%ld, %ld, %ld]\n"
             "%%c: f32[%ld, %ld, %ld] = aten.bmm.default(%%a, %%b)\noutput %%c\n",
             G, M, K, G, K, N, G, M, N);
    const chip_config *cfg = rt_config(dev);
    double peak = (double)cfg->cores * cfg->corelets * cfg->pt_rows * cfg->pt_cols * cfg->pt_lanes;
    double pt, ptm, macs = (double)G * M * N * K, cc = cycles_of(conv, dev, &pt), cm = cycles_of(mm, dev, &ptm);
    if (cc < 0 || cm < 0)
        return -1;
    *uc = macs / (cc * peak);
    *um = macs / (cm * peak);
    printf("%s_macs=%.0f\n%s_conv_cycles=%.0f\n%s_mm_cycles=%.0f\n", c->name, macs, c->name, cc, c->name, cm);
    printf("%s_conv_mac_utilization=%.4f\n%s_mm_mac_utilization=%.4f\n%s_ratio=%.3f\n", c->name, *uc, c->name, *um,
           c->name, *uc / *um);
    *ut = pt > 0 ? macs / (pt * peak) : *uc; /* a depthwise conv runs on the SFP: no PT kernel */
    if (pt > 0)
        printf("%s_conv_taps_cycles=%.0f\n%s_conv_taps_mac_utilization=%.4f\n%s_taps_ratio=%.3f\n", c->name, pt,
               c->name, *ut, c->name, *ut / *um);
    return 0;
}

int main(void)
{
    rt_device *dev = bench_open("bench_conv");
    bench_sim_options(dev, 0, 0);
    double worst = 1e9, worst_taps = 1e9;
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double uc, ut, um;
        if (run_case(&cases[i], dev, &uc, &ut, &um)) {
            failed = 1;
            continue;
        }
        if (cases[i].resnet && uc / um < worst)
            worst = uc / um;
        if (cases[i].resnet && ut / um < worst_taps)
            worst_taps = ut / um;
    }
    rt_close(dev);
    if (failed)
        return 3;
    printf("target_resnet18_conv_to_mm_ratio=0.50\n");
    printf("resnet18_conv_taps_to_mm_ratio_min=%.3f\n", worst_taps);
    printf("resnet18_conv_to_mm_ratio_min=%.3f\n", worst);
    return 0;
}
