/* bench_estimate: the compiler's cost model against the simulator.  Every
 * trace's graph (traces/X, X/prefill, X/decode) and the BERT-base layer
 * (exported into BUILD/traces/bert_base on first use, as bench_bert does)
 * is compiled for spyre and spyre-4core and simulated timing only; each
 * kernel's estimate (cc_result_estimate, the report's `estimate:`) is set
 * against its simulated time: the longest one core ran it, from that
 * core's first instruction's start to its last one's end (core_span of
 * sim_kernel_stats), not the span over every core (end - start), which
 * after a fence counts the cores' different starts as well.  The estimate
 * prices the DRAM refresh's average wait, so the simulated time it is set
 * against is the mean over PHASES launches at refresh phases evenly spread
 * over tREFI (odd, as spyre sweep's default: docs/sweep.md, "Refresh
 * phases"); phase 0 alone makes a short kernel's ratio the luck of where
 * one refresh falls.  Prints a line per graph and
 * chip, the ratios' spread, and last estimate_geomean= (the geometric
 * mean of estimate / simulated over every kernel) and estimate_worst=
 * (the ratio furthest from 1, as a ratio), after the ratios' spread in
 * bands and the ten furthest from 1.  docs/compiler.md, "Estimates
 * against the simulator". */
#define PHASES 7
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"
#include "rt.h"

static double logsum, worst = 1;
static int nratios, nbelow_half, nabove_two;
static char worst_at[512];

/* Every ratio with where it was, for the list of the furthest from 1. */
#define MAX_RATIOS 4096
static struct ratio {
    double q;
    char at[160];
} ratios[MAX_RATIOS];

/* One kernel's ratio into the totals. */
static void add_ratio(double q, const char *graph, const char *chip, const char *kernel)
{
    logsum += log(q);
    if (nratios < MAX_RATIOS) {
        ratios[nratios].q = q;
        snprintf(ratios[nratios].at, sizeof ratios[nratios].at, "%s on %s, %s", graph, chip, kernel);
    }
    nratios++;
    nbelow_half += q < 0.5;
    nabove_two += q > 2;
    if (fabs(log(q)) > fabs(log(worst))) {
        worst = q;
        snprintf(worst_at, sizeof worst_at, "%s on %s, %s", graph, chip, kernel);
    }
}

/* Launch prog timing only at PHASES refresh phases evenly spread over
 * tREFI, the means into *m.  0, or -1 with a message. */
static int launch_timing(rt_program *prog, rt_run_result *res, rt_phase_means *m, char *err, size_t errlen)
{
    bench_sim_options(rt_program_device(prog), 0, 0);
    if (!rt_launch_phases(prog, PHASES, res, m))
        return 0;
    rt_run_format(res, err, errlen);
    return -1;
}

/* Compile graph dir for chip, run it timing only and add its kernels'
 * ratios.  0, or -1 with a message. */
static int measure(const char *dir, const char *label, const char *chip)
{
    char err[1024], *cfgpath = chip_config_path(chip);
    rt_device *dev = rt_open(cfgpath, err, sizeof err);
    free(cfgpath);
    gr_graph *g = dev ? gr_graph_load(dir, err, sizeof err) : NULL;
    cc_compile_opts o = {.target = dev ? rt_config(dev) : NULL};
    cc_result *r = g ? cc_compile(g, &o, err, sizeof err) : NULL;
    isa_program *p = r ? cc_result_take_program(r) : NULL;
    rt_program *prog = p ? rt_load_program(dev, p, err, sizeof err) : NULL;
    rt_run_result *res = malloc(sizeof *res);
    rt_phase_means m = {0};
    int rc = prog && res && !rt_fill_inputs(prog, 1, err, sizeof err) ? launch_timing(prog, res, &m, err, sizeof err) : -1;
    if (rc)
        fprintf(stderr, "bench_estimate: %s on %s: %s\n", label, chip, err);
    double ls = 0;
    int n = 0;
    for (int k = 0; !rc && k < res->stats.nkernels; k++) {
        const sim_kernel_stats *ks = &res->stats.kernels[k];
        const double est = cc_result_estimate(r, ks->name), span = m.core_span[k];
        if (est <= 0 || span <= 0 || !ks->insns)
            continue;
        add_ratio(est / span, label, chip, ks->name);
        ls += log(est / span);
        n++;
    }
    if (!rc)
        printf("%-28s %-12s kernels=%-3d cycles=%-9.0f geomean=%.3f\n", label, chip, n, m.cycles,
               n ? exp(ls / n) : 1.0);
    rt_phase_means_free(&m);
    free(res);
    if (prog)
        rt_unload(prog);
    cc_result_free(r);
    gr_graph_free(g);
    rt_close(dev);
    return rc;
}

/* Further from 1 first (qsort). */
static int by_distance(const void *a, const void *b)
{
    const double x = fabs(log(((const struct ratio *)a)->q)), y = fabs(log(((const struct ratio *)b)->q));
    return (x < y) - (x > y);
}

/* The spread of the ratios (how many in each band around 1) and the ten
 * furthest from 1, where to look first. */
static void print_spread(void)
{
    const int n = nratios < MAX_RATIOS ? nratios : MAX_RATIOS;
    const double edges[] = {0.5, 0.67, 0.8, 0.9, 1.11, 1.25, 1.5, 2};
    int band[9] = {0};
    for (int i = 0; i < n; i++) {
        int b = 0;
        while (b < 8 && ratios[i].q >= edges[b])
            b++;
        band[b]++;
    }
    printf("spread: <0.5:%d 0.5-0.67:%d 0.67-0.8:%d 0.8-0.9:%d 0.9-1.11:%d 1.11-1.25:%d 1.25-1.5:%d 1.5-2:%d >2:%d\n",
           band[0], band[1], band[2], band[3], band[4], band[5], band[6], band[7], band[8]);
    qsort(ratios, (size_t)n, sizeof ratios[0], by_distance);
    for (int i = 0; i < n && i < 10; i++)
        printf("  furthest %d: %.3f %s\n", i + 1, ratios[i].q, ratios[i].at);
}

/* The graph directories of traces/ (and one level down: prefill, decode), sorted. */
static int list_traces(const char *src, char names[][256], int max)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/traces", src);
    DIR *d = opendir(path);
    int n = 0;
    const char *subs[] = {"", "/prefill", "/decode"};
    for (struct dirent *e; d && (e = readdir(d)) && n < max;)
        for (int s = 0; s < 3 && e->d_name[0] != '.' && n < max; s++) {
            snprintf(path, sizeof path, "%s/traces/%s%s/graph.txt", src, e->d_name, subs[s]);
            if (bench_exists(path))
                snprintf(names[n++], 256, "%.200s%s", e->d_name, subs[s]);
        }
    if (d)
        closedir(d);
    qsort(names, (size_t)n, 256, (int (*)(const void *, const void *))strcmp);
    return n;
}

int main(void)
{
    static char names[64][256];
    char src[2048], build[2048], dir[2400];
    if (bench_dirs(src, sizeof src, build, sizeof build))
        return 2;
    int n = list_traces(src, names, 64), failed = 0;
    const char *chips[] = {"spyre", "spyre-4core"};
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 2; c++) {
            snprintf(dir, sizeof dir, "%s/traces/%.255s", src, names[i]);
            failed |= measure(dir, names[i], chips[c]) != 0;
        }
    snprintf(dir, sizeof dir, "%s/traces/bert_base", build);
    if (bench_export("bench_estimate", src, "encoder.py:bert_handwritten", dir, ""))
        return 2;
    for (int c = 0; c < 2; c++)
        failed |= measure(dir, "bert_base", chips[c]) != 0;
    if (!nratios) {
        fprintf(stderr, "bench_estimate: no kernel measured\n");
        return 2;
    }
    print_spread();
    printf("kernels=%d below_half=%d above_two=%d worst_at=%s\n", nratios, nbelow_half, nabove_two, worst_at);
    printf("estimate_geomean=%.3f\n", exp(logsum / nratios));
    printf("estimate_worst=%.3f\n", worst);
    return failed ? 2 : 0;
}
