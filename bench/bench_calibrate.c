/* bench_calibrate: every row of "Measurements on real hardware to
 * calibrate against" (shared/reference/spyre-hardware.md), run with the
 * hand-shaped kernels of bench/shapes.h (fixed programs, so the figures
 * move only when the timing model does), simulated against measured.
 * Prints one line per row and, last, max_calibration_error=<fraction>.
 * The configuration's fitted values are explained in chip/configs/spyre.cfg
 * and docs/calibration.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"
#include "rt.h"
#include "shapes.h"

static rt_device *dev;
static double worst;

static sim_stats *run(isa_program *p, const char *what)
{
    char err[1024];
    if (!p) {
        fprintf(stderr, "bench_calibrate: %s\n", what);
        exit(2);
    }
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    if (!prog || rt_fill_inputs(prog, 1, err, sizeof err)) {
        fprintf(stderr, "bench_calibrate: %s: %s\n", what, err);
        exit(2);
    }
    rt_run_result *res = malloc(sizeof *res);
    if (rt_launch(prog, res)) {
        fprintf(stderr, "bench_calibrate: %s: %s\n", what, res->fault.msg);
        exit(3);
    }
    sim_stats *st = malloc(sizeof *st);
    *st = res->stats;
    free(res);
    rt_unload(prog);
    return st;
}

static void row(const char *name, const char *unit, double measured, double simulated)
{
    double e = fabs(simulated - measured) / measured;
    if (e > worst)
        worst = e;
    printf("%-34s measured=%9.3f %-9s simulated=%9.3f error=%+.3f\n", name, measured, unit, simulated,
           (simulated - measured) / measured);
}

int main(void)
{
    char err[1024];
    dev = bench_open("bench_calibrate");
    const chip_config *cfg = rt_config(dev);
    bench_sim_options(dev, 0, 1); /* timing only: same cycles, less host time */
    struct {
        const char *name;
        int cores, lx_plan;
        double us;
    } sm[] = {
        {"softmax 512x1024 1 core DRAM", 1, 0, 32.51},
        {"softmax 512x1024 1 core LX plan", 1, 1, 23.67},
        {"softmax 512x1024 4 cores DRAM", 4, 0, 32.17},
    };
    for (int i = 0; i < 3; i++) {
        cc_gen_opts go = {sm[i].cores, sm[i].lx_plan};
        sim_stats *st = run(shapes_softmax(cfg, 512, 1024, &go, err, sizeof err), sm[i].name);
        row(sm[i].name, "us", sm[i].us, sim_stats_time_us(st, cfg));
        free(st);
    }
    /* Sustained matmul rate of one core on a large product. */
    cc_gen_opts one = {1, 1};
    sim_stats *st = run(shapes_gemm(cfg, 1024, 1024, 1024, &one, err, sizeof err), "matmul");
    row("matmul 1024^3 1 core", "MAC/ns", 1140.0, (double)st->macs / (sim_stats_time_us(st, cfg) * 1e3));
    free(st);
    /* DRAM streaming on every core: reads only, then reads and writes. */
    const uint64_t slice = 4u << 20;
    for (int wb = 0; wb < 2; wb++) {
        st = run(shapes_stream(cfg, slice, wb, NULL, err, sizeof err), "stream");
        double bytes = (double)(st->dram_bytes_read + st->dram_bytes_written);
        row(wb ? "DRAM streaming balanced read+write" : "DRAM streaming one direction", "GB/s", wb ? 105.0 : 150.0,
            bytes / (sim_stats_time_us(st, cfg) * 1e3));
        free(st);
    }
    printf("max_calibration_error=%.3f\n", worst);
    rt_close(dev);
    return 0;
}
