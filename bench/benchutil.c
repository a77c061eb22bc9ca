/* benchutil.c: helpers shared by the benchmark programs. */
#include "benchutil.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_parent(char *dir)
{
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir)
        *slash = 0;
}

int bench_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

int bench_dirs(char *src, size_t srclen, char *build, size_t buildlen)
{
    snprintf(src, srclen, "%s", chip_config_dir());
    bench_parent(src); /* SRC/chip/configs -> SRC/sim */
    bench_parent(src); /* -> SRC */
    ssize_t n = readlink("/proc/self/exe", build, buildlen - 1);
    if (n <= 0)
        return -1;
    build[n] = 0;
    bench_parent(build); /* BUILD/bench/bench_NAME -> BUILD/bench */
    bench_parent(build); /* -> BUILD */
    return 0;
}

int bench_export(const char *who, const char *src, const char *model, const char *dir, const char *flags)
{
    char graph[PATH_MAX + 64], cmd[4 * PATH_MAX];
    snprintf(graph, sizeof graph, "%s/graph.txt", dir);
    if (bench_exists(graph))
        return 0;
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/tools/export.py' '%s/traces/models/%s' -o '%s' %s >&2", src, src,
             model, dir, flags);
    fprintf(stderr, "%s: exporting %s\n", who, dir);
    if (system(cmd) != 0 || !bench_exists(graph)) {
        fprintf(stderr, "%s: export failed (needs /usr/bin/python3 with torch: tools/setup): %s\n", who, cmd);
        return -1;
    }
    return 0;
}

isa_program *bench_compile(const gr_graph *g, const chip_config *cfg, double *seconds, char *err, size_t errlen)
{
    cc_compile_opts o;
    memset(&o, 0, sizeof o);
    o.target = cfg;
    double t0 = bench_now();
    cc_result *cr = cc_compile(g, &o, err, errlen);
    if (!cr)
        return NULL;
    isa_program *p = cc_result_take_program(cr);
    cc_result_free(cr);
    *seconds = bench_now() - t0;
    if (!p)
        snprintf(err, errlen, "the compiler returned no program");
    return p;
}

rt_device *bench_open(const char *who)
{
    char err[1024], *path = chip_config_path("spyre"); /* lives as long as the benchmark */
    rt_device *dev = rt_open(path, err, sizeof err);
    if (!dev) {
        fprintf(stderr, "%s: %s\n", who, err);
        exit(2);
    }
    return dev;
}

void bench_sim_options(rt_device *dev, int values, int races)
{
    sim_options o = {.values = values, .detect_races = races, .trace = SIM_TRACE_OFF};
    sim_set_options(rt_sim(dev), &o);
}

double bench_peak_macs_per_s(const chip_config *cfg)
{
    return (double)cfg->cores * cfg->corelets * cfg->pt_rows * cfg->pt_cols * cfg->pt_lanes * cfg->clock_ghz * 1e9;
}

double bench_dram_bytes_per_s(const chip_config *cfg)
{
    return cfg->dram_channels * (double)cfg->dram_burst_bytes / (cfg->dram_burst_tck * cfg->dram_tck_ns) * 1e9;
}
