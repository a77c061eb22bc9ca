/* gen.c: the named kernels of `spyre gen` (cc_gen_gemm, cc_gen_softmax):
 * each writes the graph of its ATen op and compiles it through the graph
 * compiler (cc_compile with a target), keeping the names the contract in
 * cc.h gives its tensors, kernel and graph text. */
#include "codegen.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What one generator asks of the compiler. */
typedef struct {
    const char *what;   /* "gemm 64x64x64": prefixes every message */
    const char *source; /* the graph file's text */
    const char *graph;  /* the program's graph text (the runtime's reference) */
    const char *kernel; /* the name of a program of one kernel */
    int64_t rows, cols; /* a matmul's output, for its core grid */
    const char *bad;    /* why the shape cannot be generated, or NULL */
} gen_job;

/* A core grid of exactly n cores for an rows x cols matmul output, as
 * square as the output allows (GN parts of whole sticks): "GMxGN". */
static void grid_spec(const chip_config *cfg, int64_t rows, int64_t cols, int n, char *buf, size_t len)
{
    int64_t sticks = cc_ceil_div(cols, cfg->stick_bytes / 2), gn = 1;
    for (int64_t d = (int64_t)sqrt((double)n); d >= 1; d--)
        if (n % d == 0 && d <= sticks && n / d <= rows) {
            gn = d;
            break;
        }
    snprintf(buf, len, "%" PRId64 "x%" PRId64, n / gn, gn);
}

/* One work-division override per kernel of g (as cc_compile with co
 * fuses it, at most max) so that each uses exactly `cores` cores, into
 * specs.  Returns the count or -1 (message in err). */
static int core_limit(const gr_graph *g, const cc_compile_opts *co, const gen_job *job, int cores,
                      char (*specs)[96], int max, char *err, size_t errlen)
{
    cc_compile_opts front = *co; /* the kernels are known after the front half */
    front.target = NULL;
    cc_result *r = cc_compile(g, &front, err, errlen);
    if (!r)
        return -1;
    int n = cc_result_nkernels(r);
    if (n > max) {
        snprintf(err, errlen, "%d kernels, more than the %d a core limit can take", n, max);
        n = -1;
    }
    for (int k = 0; k < n; k++) {
        char spec[32];
        if (cc_result_kernel_kind(r, k) == CC_KERNEL_MATMUL)
            grid_spec(co->target, job->rows, job->cols, cores, spec, sizeof spec);
        else
            snprintf(spec, sizeof spec, "%d", cores);
        snprintf(specs[k], sizeof specs[k], "%s=%s", cc_result_kernel_name(r, k), spec);
    }
    cc_result_free(r);
    return n;
}

/* The program the compiler makes of job->source for cfg on `cores` cores
 * (0: its choice), with LX planning or not, renamed to the contract: the
 * graph text, and the kernel's name when there is one kernel. */
static isa_program *compile_job(const chip_config *cfg, const gen_job *job, int cores, int lx_plan, char *err,
                                size_t errlen)
{
    enum { MAX_KERNELS = 8 };
    char specs[MAX_KERNELS][96];
    const char *wd[MAX_KERNELS];
    gr_graph *g = gr_graph_parse(job->source, job->what, err, errlen);
    if (!g)
        return NULL;
    cc_compile_opts co = {0};
    co.no_lx_plan = !lx_plan;
    co.no_fallback = 1; /* a named kernel runs on the device or is refused */
    co.target = cfg;
    cc_result *r = NULL;
    int n = cores ? core_limit(g, &co, job, cores, specs, MAX_KERNELS, err, errlen) : 0;
    if (n >= 0) {
        for (int k = 0; k < n; k++)
            wd[k] = specs[k];
        co.work_div = wd;
        co.nwork_div = n;
        r = cc_compile(g, &co, err, errlen);
    }
    isa_program *p = r ? cc_result_take_program(r) : NULL;
    int one = r && cc_result_nkernels(r) == 1;
    cc_result_free(r);
    gr_graph_free(g);
    if (!p)
        return NULL;
    for (size_t k = 0; one && k < p->nkernels; k++)
        snprintf(p->kernels[k].name, sizeof p->kernels[k].name, "%s", job->kernel);
    char *text = strdup(job->graph);
    if (!text) {
        isa_program_free(p);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    free(p->graph);
    p->graph = text;
    return p;
}

/* compile_job with every message prefixed by job->what. */
static isa_program *gen(const chip_config *cfg, const gen_job *job, const cc_gen_opts *opts, char *err, size_t errlen)
{
    if (job->bad) {
        snprintf(err, errlen, "%s: %s", job->what, job->bad);
        return NULL;
    }
    cc_gen_opts o;
    char why[1024] = "";
    isa_program *p = NULL;
    if (!cc_resolve_opts(cfg, opts, &o, why, sizeof why)) /* cores=0 resolves to all: ask for none */
        p = compile_job(cfg, job, opts ? opts->cores : 0, o.lx_plan, why, sizeof why);
    if (!p)
        snprintf(err, errlen, "%s: %s", job->what, why);
    return p;
}

isa_program *cc_gen_gemm(const chip_config *cfg, int64_t M, int64_t N, int64_t K, char *err, size_t errlen)
{
    return cc_gen_gemm_opts(cfg, M, N, K, NULL, err, errlen);
}

isa_program *cc_gen_gemm_opts(const chip_config *cfg, int64_t M, int64_t N, int64_t K, const cc_gen_opts *opts,
                              char *err, size_t errlen)
{
    char what[96], source[512];
    snprintf(what, sizeof what, "gemm %" PRId64 "x%" PRId64 "x%" PRId64, M, N, K);
    snprintf(source, sizeof source,
             "graph gemm\n"
             "input %%A: f32[%" PRId64 ", %" PRId64 "]\n"
             "input %%B: f32[%" PRId64 ", %" PRId64 "]\n"
             "%%C: f32[%" PRId64 ", %" PRId64 "] = aten.mm.default(%%A, %%B)\n"
             "output %%C\n",
             M, K, K, N, M, N);
    gen_job job = {what, source, "%C = aten.mm(%A, %B)\n", "gemm", M, N,
                   M <= 0 || N <= 0 || K <= 0 ? "every dimension must be positive" : NULL};
    return gen(cfg, &job, opts, err, errlen);
}

isa_program *cc_gen_softmax(const chip_config *cfg, int64_t rows, int64_t cols, char *err, size_t errlen)
{
    return cc_gen_softmax_opts(cfg, rows, cols, NULL, err, errlen);
}

isa_program *cc_gen_softmax_opts(const chip_config *cfg, int64_t rows, int64_t cols, const cc_gen_opts *opts,
                                 char *err, size_t errlen)
{
    char what[96], source[512];
    snprintf(what, sizeof what, "softmax %" PRId64 "x%" PRId64, rows, cols);
    snprintf(source, sizeof source,
             "graph softmax\n"
             "input %%x: f32[%" PRId64 ", %" PRId64 "]\n"
             "%%y: f32[%" PRId64 ", %" PRId64 "] = aten._softmax.default(%%x, -1, False)\n"
             "output %%y\n",
             rows, cols, rows, cols);
    gen_job job = {what, source, "%y = aten._softmax(%x, -1, False)\n", "softmax", rows, cols,
                   rows <= 0 || cols <= 0 ? "both dimensions must be positive" : NULL};
    return gen(cfg, &job, opts, err, errlen);
}
