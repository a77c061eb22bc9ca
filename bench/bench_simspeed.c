/* bench_simspeed: host time of the simulator against OpenBLAS on the same
 * work, measured in the same run.  Values and timing together (the
 * default run, race detection on) for the 1024^3 GEMM and the (512, 1024)
 * softmax; timing only for the GEMM (as `spyre run --no-values` runs it:
 * no race check; also printed with one); and how host time scales over three
 * GEMM sizes each 8x the work of the last.  Headline last:
 * timing_only_vs_openblas_time. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cc.h"
#include "benchutil.h"
#include "rt.h"

static rt_device *dev;

/* Best host seconds of `reps` runs of a generated program. */
static double sim_seconds(isa_program *p, int values, int races, int reps, double *cycles)
{
    char err[1024];
    bench_sim_options(dev, values, races);
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    if (!prog || rt_fill_inputs(prog, 1, err, sizeof err)) {
        fprintf(stderr, "bench_simspeed: %s\n", err);
        exit(2);
    }
    rt_run_result *res = malloc(sizeof *res);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        if (rt_launch(prog, res)) {
            fprintf(stderr, "bench_simspeed: run failed: %s\n", res->fault.msg);
            exit(3);
        }
        double t = bench_now() - t0;
        if (t < best)
            best = t;
    }
    *cycles = res->stats.cycles;
    free(res);
    rt_unload(prog);
    return best;
}

static double blas_seconds(int n, int reps)
{
    float *A = malloc(sizeof(float) * n * n), *B = malloc(sizeof(float) * n * n), *C = malloc(sizeof(float) * n * n);
    rt_random_uniform(1, "A", A, (size_t)n * n);
    rt_random_uniform(1, "B", B, (size_t)n * n);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
        double t = bench_now() - t0;
        if (t < best)
            best = t;
    }
    free(A);
    free(B);
    free(C);
    return best;
}

static isa_program *gemm(int n)
{
    char err[1024];
    isa_program *p = cc_gen_gemm(rt_config(dev), n, n, n, err, sizeof err);
    if (!p) {
        fprintf(stderr, "bench_simspeed: %s\n", err);
        exit(2);
    }
    return p;
}

int main(void)
{
    char err[1024];
    dev = bench_open("bench_simspeed");
    double cyc;
    double blas = blas_seconds(1024, 5);
    /* OpenBLAS's idle server thread polls with sched_yield for about 0.1 s
     * after the library starts and after each threaded call (its
     * THREAD_TIMEOUT, 2^28 cycles): on two cores it took 35 to 100 ms of
     * CPU from the simulator's launches timed at once */
    nanosleep(&(struct timespec){0, 250000000}, NULL);
    double timed = sim_seconds(gemm(1024), 1, 1, 3, &cyc);
    isa_program *sm = cc_gen_softmax(rt_config(dev), 512, 1024, err, sizeof err);
    if (!sm) {
        fprintf(stderr, "bench_simspeed: %s\n", err);
        return 2;
    }
    double smx = sim_seconds(sm, 1, 1, 5, &cyc);
    double tonly = sim_seconds(gemm(1024), 0, 0, 5, &cyc);
    double tonly_races = sim_seconds(gemm(1024), 0, 1, 5, &cyc);
    /* scaling: 512^3, 1024^3, 2048^3, each 8x the MACs of the last */
    double t[3];
    for (int i = 0; i < 3; i++)
        t[i] = sim_seconds(gemm(512 << i), 1, 1, 2, &cyc);
    printf("openblas_gemm1024_seconds=%.6f\n", blas);
    printf("sim_gemm1024_seconds=%.6f\n", timed);
    printf("sim_softmax_512x1024_seconds=%.6f\n", smx);
    printf("sim_gemm1024_timing_only_seconds=%.6f\n", tonly);
    printf("sim_gemm512_seconds=%.6f\nsim_gemm2048_seconds=%.6f\n", t[0], t[2]);
    printf("scaling_step1=%.3f\nscaling_step2=%.3f\n", t[1] / t[0], t[2] / t[1]);
    double worst = t[1] / t[0] > t[2] / t[1] ? t[1] / t[0] : t[2] / t[1];
    printf("scaling_vs_work=%.3f\n", worst / 8.0);
    printf("timing_only_race_check_vs_openblas_time=%.3f\n", tonly_races / blas);
    printf("timed_sim_vs_openblas_time=%.3f\n", timed / blas);
    printf("timing_only_vs_openblas_time=%.3f\n", tonly / blas);
    rt_close(dev);
    return 0;
}
