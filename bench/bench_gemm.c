/* bench_gemm: simulator throughput on the 1024^3 GEMM against OpenBLAS
 * sgemm on the same shape, measured in the same run.  Prints key=value
 * lines, the headline figure (sim_vs_openblas) last. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cc.h"
#include "benchutil.h"
#include "rt.h"

int main(int argc, char **argv)
{
    const int64_t M = 1024, N = 1024, K = 1024;
    const int reps = argc > 1 ? atoi(argv[1]) : 5;
    char err[1024];
    rt_device *dev = bench_open("bench_gemm");
    isa_program *p = cc_gen_gemm(rt_config(dev), M, N, K, err, sizeof err);
    rt_program *prog = p ? rt_load_program(dev, p, err, sizeof err) : NULL;
    if (!prog || rt_fill_inputs(prog, 1, err, sizeof err)) {
        fprintf(stderr, "bench_gemm: %s\n", err);
        return 2;
    }
    /* Simulator: best of reps runs (values computed every time). */
    double sim_best = 1e30;
    rt_run_result res;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        if (rt_launch(prog, &res)) {
            char line[1024];
            rt_run_format(&res, line, sizeof line);
            fprintf(stderr, "bench_gemm: %s\n", line);
            return 3;
        }
        double t = bench_now() - t0;
        if (t < sim_best)
            sim_best = t;
    }
    /* OpenBLAS on the same shape, fp32, best of reps. */
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N), *C = malloc(sizeof(float) * M * N);
    rt_random_uniform(1, "A", A, (size_t)(M * K));
    rt_random_uniform(1, "B", B, (size_t)(K * N));
    double blas_best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A, (int)K, B, (int)N,
                    0.0f, C, (int)N);
        double t = bench_now() - t0;
        if (t < blas_best)
            blas_best = t;
    }
    double macs = (double)M * N * K;
    printf("shape=%ldx%ldx%ld\n", (long)M, (long)N, (long)K);
    printf("sim_macs=%llu\n", (unsigned long long)res.stats.macs);
    printf("sim_host_seconds=%.6f\n", sim_best);
    printf("openblas_seconds=%.6f\n", blas_best);
    printf("sim_gmacs=%.3f\n", macs / sim_best * 1e-9);
    printf("openblas_gmacs=%.3f\n", macs / blas_best * 1e-9);
    printf("sim_vs_openblas=%.3f\n", blas_best / sim_best);
    free(A);
    free(B);
    free(C);
    rt_unload(prog);
    rt_close(dev);
    return 0;
}
