/* bench_tp: the Llama-3-8B-size decoder layer (traces/models/llama.py,
 * hidden 4096, 32 query / 8 KV heads, FFN 14336) split over 1, 2, 4 and 8
 * cards of spyre-x8 (docs/multicard.md), TIMING ONLY, for
 *   prefill: llama_8b_layer, x (1, 512, 4096);
 *   decode:  llama_8b_decode, one token attending to a KV cache of 512.
 * Each run is `spyre run DIR --tp N --no-values` (the command the user
 * runs, in one process, a thread per card); it prints the simulated time,
 * the speed-up over TP 1 and the share of the last card's time spent in
 * collectives.  When the build has the MPI link (SPYRE_MPIEXEC), decode at
 * TP 4 also runs under `mpirun --oversubscribe -np 4`: its simulated cycles
 * must be the one-process run's, and both host times are printed.  The
 * graphs are exported --graph-only on first use into BUILD/traces (as
 * bench_llama does).  Exit status: 0 ok, 2 an export or a run failed.
 * Headline last: decode_speedup_tp4. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"

typedef struct {
    double cycles, us, share, host_s;
} tp_run;

/* `[LAUNCHER] BUILD/spyre run DIR --tp n --no-values`: its overall line. */
static int run(const char *launcher, const char *build, const char *dir, int n, tp_run *r)
{
    char cmd[3 * PATH_MAX], line[1024];
    snprintf(cmd, sizeof cmd, "%s%s/spyre run %s --tp %d --no-values 2>&1", launcher, build, dir, n);
    double t0 = bench_now();
    FILE *p = popen(cmd, "r");
    int found = 0;
    while (p && fgets(line, sizeof line, p))
        if (!strncmp(line, "cycles=", 7))
            found = sscanf(line, "cycles=%lf time_us=%lf (at %*f GHz) collective_cycles=%*f collective_share=%lf",
                           &r->cycles, &r->us, &r->share) == 3;
        else if (!strncmp(line, "spyre run:", 10))
            fputs(line, stderr);
    int st = p ? pclose(p) : -1;
    r->host_s = bench_now() - t0;
    if (st != 0 || !found) {
        fprintf(stderr, "bench_tp: %s failed\n", cmd);
        return -1;
    }
    return 0;
}

/* One phase at TP 1, 2, 4, 8; its TP 4 speed-up in *tp4. */
static int phase(const char *src, const char *build, const char *name, double *tp4)
{
    char dir[PATH_MAX + 64], model[128];
    snprintf(dir, sizeof dir, "%s/traces/%s", build, name);
    snprintf(model, sizeof model, "llama.py:%s", name);
    if (bench_export("bench_tp", src, model, dir, "--graph-only"))
        return -1;
    tp_run one = {0};
    for (int n = 1; n <= 8; n *= 2) {
        tp_run r;
        if (run("", build, dir, n, &r))
            return -1;
        if (n == 1)
            one = r;
        printf("%s_tp%d_us=%.1f %s_tp%d_speedup=%.2f %s_tp%d_collective_share=%.4f %s_tp%d_host_s=%.1f\n", name, n,
               r.us, name, n, one.cycles / r.cycles, name, n, r.share, name, n, r.host_s);
        if (n == 4)
            *tp4 = one.cycles / r.cycles;
    }
    return 0;
}

#ifdef SPYRE_MPIEXEC
/* Decode at TP 4 under mpirun against one process: same cycles, host times. */
static int mpi_against_threads(const char *build)
{
    char dir[PATH_MAX + 64], launcher[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/traces/llama_8b_decode", build);
    snprintf(launcher, sizeof launcher, "%s --oversubscribe -np 4 ", SPYRE_MPIEXEC);
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1); /* benchmarks may run as root (CI) */
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    tp_run t, m;
    if (run("", build, dir, 4, &t) || run(launcher, build, dir, 4, &m))
        return -1;
    printf("decode_tp4_threads_host_s=%.1f decode_tp4_mpi_host_s=%.1f mpi_cycles_same=%d\n", t.host_s, m.host_s,
           t.cycles == m.cycles);
    return t.cycles == m.cycles ? 0 : -1;
}
#endif

int main(void)
{
    char src[PATH_MAX], build[PATH_MAX];
    if (bench_dirs(src, sizeof src, build, sizeof build))
        return 2;
    double prefill4 = 0, decode4 = 0;
    if (phase(src, build, "llama_8b_layer", &prefill4) || phase(src, build, "llama_8b_decode", &decode4))
        return 2;
#ifdef SPYRE_MPIEXEC
    if (mpi_against_threads(build))
        return 2;
#endif
    printf("prefill_speedup_tp4=%.2f\n", prefill4);
    printf("decode_speedup_tp4=%.2f\n", decode4);
    return 0;
}
