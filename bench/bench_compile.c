/* bench_compile: the compiler's host time and peak memory, set against the
 * host time of simulating what it compiled timing-only (sim_options values
 * 0, races off, as bench_llama runs it), for
 *   bert_base:       one BERT-base encoder layer (tools/main-job's graph,
 *                    traces/models/encoder.py:bert_handwritten);
 *   llama_8b_layer:  the Llama-3-8B-size prefill layer of bench_llama;
 *   llama_8b_decode: its decode step.
 * The graphs are exported on first use into BUILD/traces/NAME as
 * bench_bert and bench_llama export them (BUILD is the build directory
 * holding this program).
 *
 * Each graph is compiled REPS times, each time in a child process forked
 * before this program has opened a device or simulated anything, so the
 * child's peak resident set (its getrusage ru_maxrss at exit) is the graph, the compiler
 * and little else.  compile_seconds is cc_compile alone (loading the graph
 * and writing the ELF are not counted); the first child writes the program
 * to BUILD/bench/compile_NAME.elf, which is then loaded and launched REPS
 * times with no tensor written (timing needs no values).  Host times are
 * medians of the REPS runs (the machine is shared, so single runs are
 * noisy); both ratios' halves are measured in this one run.  Exit status:
 * 0 ok, 2 a graph cannot be exported, loaded or compiled, 3 a program
 * faulted.  Headline last: compile_vs_sim_time, the worst graph's ratio of
 * compile to simulation host time. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cc.h"
#include "benchutil.h"
#include "rt.h"

enum { REPS = 3, NGRAPHS = 3 };

typedef struct {
    const char *name, *model, *flags; /* BUILD/traces/NAME, traces/models/MODEL, export flags */
    double compile_s[REPS], sim_s[REPS];
    long peak_kb; /* the largest of the compiling children's */
    double cycles;
} graph_run;

static int die(int status, const char *what, const char *msg)
{
    fprintf(stderr, "bench_compile: %s: %s\n", what, msg);
    return status;
}

/* In the child: load, compile (timed), write the ELF if elf is not NULL,
 * send the seconds and its peak resident set down fd.  Never returns. */
static void child_compile(const char *graph, const char *elf, int fd)
{
    char err[4096];
    gr_graph *g = gr_graph_load(graph, err, sizeof err);
    if (!g)
        _exit(die(2, graph, err));
    chip_config cfg;
    if (chip_config_load(chip_config_path("spyre"), &cfg, err, sizeof err))
        _exit(die(2, "configuration", err));
    double s = 0;
    isa_program *p = bench_compile(g, &cfg, &s, err, sizeof err);
    if (!p)
        _exit(die(2, graph, err));
    if (elf && isa_elf_write(p, elf, err, sizeof err))
        _exit(die(2, elf, err));
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double out[2] = {s, (double)ru.ru_maxrss}; /* Linux: kilobytes */
    _exit(write(fd, out, sizeof out) == (ssize_t)sizeof out ? 0 : 2);
}

/* One compile in a forked child: its seconds and peak KB.  0, or the
 * child's exit status. */
static int compile_once(const char *graph, const char *elf, double *seconds, long *peak_kb)
{
    int fd[2];
    if (pipe(fd))
        return die(2, "pipe", "cannot create");
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return die(2, "fork", "cannot fork");
    if (pid == 0) {
        close(fd[0]);
        child_compile(graph, elf, fd[1]);
    }
    close(fd[1]);
    int status = 0;
    double in[2];
    ssize_t n = read(fd[0], in, sizeof in);
    close(fd[0]);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return die(2, graph, "the compiling child did not exit");
    if (WEXITSTATUS(status) || n != (ssize_t)sizeof in)
        return WEXITSTATUS(status) ? WEXITSTATUS(status) : 2;
    *seconds = in[0];
    *peak_kb = (long)in[1];
    return 0;
}

/* Launch the ELF REPS times, timing only. */
static int simulate(rt_device *dev, const char *elf, graph_run *g)
{
    char err[4096];
    rt_program *prog = rt_load(dev, elf, err, sizeof err);
    if (!prog)
        return die(2, "load program", err);
    bench_sim_options(dev, 0, 0);
    rt_run_result *res = malloc(sizeof *res);
    if (!res)
        return die(2, "host", "out of memory");
    for (int r = 0; r < REPS; r++) {
        double t0 = bench_now();
        if (rt_launch(prog, res)) {
            rt_run_format(res, err, sizeof err);
            return die(3, g->name, err);
        }
        g->sim_s[r] = bench_now() - t0;
    }
    g->cycles = res->stats.cycles;
    free(res);
    rt_unload(prog);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v)
{
    double s[REPS];
    memcpy(s, v, sizeof s);
    qsort(s, REPS, sizeof *s, cmp_double);
    return s[REPS / 2];
}

int main(void)
{
    char src[PATH_MAX], build[PATH_MAX], dir[PATH_MAX + 32], graph[PATH_MAX + 64], elf[NGRAPHS][PATH_MAX + 64];
    char err[2048];
    graph_run g[NGRAPHS] = {
        {.name = "bert_base", .model = "encoder.py:bert_handwritten", .flags = ""},
        {.name = "llama_8b_layer", .model = "llama.py:llama_8b_layer", .flags = "--graph-only"},
        {.name = "llama_8b_decode", .model = "llama.py:llama_8b_decode", .flags = "--graph-only"},
    };
    if (bench_dirs(src, sizeof src, build, sizeof build))
        return die(2, "/proc/self/exe", "cannot find the build directory");
    /* every compile first, while this process is small: a child's peak
     * resident set includes the pages it inherits */
    for (int i = 0; i < NGRAPHS; i++) {
        snprintf(dir, sizeof dir, "%s/traces/%s", build, g[i].name);
        snprintf(graph, sizeof graph, "%s/graph.txt", dir);
        snprintf(elf[i], sizeof elf[i], "%s/bench/compile_%s.elf", build, g[i].name);
        if (bench_export("bench_compile", src, g[i].model, dir, g[i].flags))
            return 2;
        for (int r = 0; r < REPS; r++) {
            long kb = 0;
            int s = compile_once(graph, r ? NULL : elf[i], &g[i].compile_s[r], &kb);
            if (s)
                return s;
            g[i].peak_kb = kb > g[i].peak_kb ? kb : g[i].peak_kb;
        }
    }
    char *cfgpath = chip_config_path("spyre"); /* lives as long as the benchmark */
    rt_device *dev = rt_open(cfgpath, err, sizeof err);
    if (!dev)
        return die(2, cfgpath, err);
    double worst = 0;
    for (int i = 0; i < NGRAPHS; i++) {
        int s = simulate(dev, elf[i], &g[i]);
        if (s)
            return s;
        double cs = median(g[i].compile_s), ss = median(g[i].sim_s);
        printf("%s_compile_seconds=%.3f\n", g[i].name, cs);
        printf("%s_compile_peak_mb=%.1f\n", g[i].name, g[i].peak_kb / 1024.0);
        printf("%s_sim_cycles=%.0f\n", g[i].name, g[i].cycles);
        printf("%s_sim_host_seconds=%.3f\n", g[i].name, ss);
        printf("%s_compile_vs_sim_time=%.3f\n", g[i].name, cs / ss);
        worst = cs / ss > worst ? cs / ss : worst;
    }
    rt_close(dev);
    printf("compile_vs_sim_time=%.3f\n", worst);
    return 0;
}
