/* spyre: the command-line tool.  Each subcommand is a function; main
 * dispatches on the first argument.
 * Exit status: 0 success, 1 validation mismatch, 2 bad input or usage,
 * 3 the simulated program broke a rule. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cc.h"
#include "chip.h"
#include "isa.h"
#include "ktir.h"
#include "rt.h"
#include "sim.h"
#include "generate.h"
#include "serve.h"
#include "sdsc_cmd.h"
#include "sweep.h"
#include "tp.h"

enum { EXIT_OK = 0, EXIT_MISMATCH = 1, EXIT_USAGE = 2, EXIT_FAULT = 3 };

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *usage;
    const char *help;
} command;

static const command *find_command(const char *name);

static int fail(const char *fmt, const char *msg)
{
    fprintf(stderr, fmt, msg);
    fputc('\n', stderr);
    return EXIT_USAGE;
}

/* Prints the subcommand's usage; returns 1 when argv asks for help. */
static int wants_help(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            const command *c = find_command(name);
            printf("usage: spyre %s\n\n%s\n", c->usage, c->help);
            return 1;
        }
    return 0;
}

static int usage_error(const char *name, const char *what)
{
    const command *c = find_command(name);
    fprintf(stderr, "spyre %s: %s\nusage: spyre %s\n", name, what, c->usage);
    return EXIT_USAGE;
}

/* The graph of a command's GRAPH argument (a graph file or an export
 * directory); NULL, message printed, when there is none or it does not
 * load. */
static gr_graph *graph_arg(const char *name, const char *path)
{
    if (!path) {
        usage_error(name, "needs GRAPH (a graph file or an export directory)");
        return NULL;
    }
    char err[1024];
    gr_graph *g = gr_graph_load(path, err, sizeof err);
    if (!g)
        fprintf(stderr, "spyre %s: %s\n", name, err);
    return g;
}

/* "unexpected argument 'ARG'" (an option unknown here, or a second path) */
static int unexpected(const char *name, const char *arg)
{
    const command *c = find_command(name);
    fprintf(stderr, "spyre %s: unexpected argument '%s'\nusage: spyre %s\n", name, arg, c->usage);
    return EXIT_USAGE;
}

/* A count for a limit: an integer >= 0, also written as MeE (1e9, 15e8),
 * as the help text writes the defaults. */
static int parse_count(const char *s, uint64_t *out)
{
    int64_t v;
    if (!isa_parse_int(s, &v))
        return v < 0 ? -1 : (*out = (uint64_t)v, 0);
    char *end;
    unsigned long long m = strtoull(s, &end, 10);
    if (end == s || (*end != 'e' && *end != 'E') || !isdigit((unsigned char)end[1]))
        return -1;
    const char *es = end + 1;
    unsigned long e = strtoul(es, &end, 10);
    if (*end || e > 19)
        return -1;
    for (; e; e--) {
        if (m > UINT64_MAX / 10)
            return -1;
        m *= 10;
    }
    *out = m;
    return 0;
}

static int load_config(const char *path_or_name, chip_config *cfg)
{
    char err[1024], *path = chip_config_path(path_or_name ? path_or_name : "spyre");
    int rc = chip_config_load(path, cfg, err, sizeof err);
    free(path);
    if (rc)
        fprintf(stderr, "spyre: %s\n", err);
    return rc;
}

/* ---- as ---- */

static int cmd_as(int argc, char **argv)
{
    if (wants_help(argc, argv, "as"))
        return EXIT_OK;
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (argv[i][0] == '-' || in)
            return unexpected("as", argv[i]);
        else
            in = argv[i];
    }
    if (!in || !out)
        return usage_error("as", "needs FILE.s and -o FILE.elf");
    char err[1024];
    char *text = isa_text_read(in, ISA_TEXT_MAX, err, sizeof err);
    if (!text)
        return fail("spyre as: %s", err);
    isa_program *p = isa_assemble(text, in, err, sizeof err);
    free(text);
    if (!p)
        return fail("spyre as: %s", err);
    int rc = isa_elf_write(p, out, err, sizeof err);
    isa_program_free(p);
    return rc ? fail("spyre as: %s", err) : EXIT_OK;
}

/* ---- dis / info ---- */

static isa_program *read_program(const char *name, int argc, char **argv, const char **path)
{
    *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' || *path) {
            unexpected(name, argv[i]);
            return NULL;
        }
        *path = argv[i];
    }
    if (!*path) {
        usage_error(name, "needs FILE.elf");
        return NULL;
    }
    char err[1024];
    isa_program *p = isa_elf_read(*path, err, sizeof err);
    if (!p)
        fprintf(stderr, "spyre %s: %s\n", name, err);
    return p;
}

/* spyre NAME FILE.elf: read the program, show it, free it. */
static int with_program(const char *name, int argc, char **argv, void (*show)(const isa_program *, const char *))
{
    if (wants_help(argc, argv, name))
        return EXIT_OK;
    const char *path;
    isa_program *p = read_program(name, argc, argv, &path);
    if (!p)
        return EXIT_USAGE;
    show(p, path);
    isa_program_free(p);
    return EXIT_OK;
}

static void show_dis(const isa_program *p, const char *path)
{
    (void)path;
    char *text = isa_disassemble(p);
    fputs(text, stdout);
    free(text);
}

static int cmd_dis(int argc, char **argv)
{
    return with_program("dis", argc, argv, show_dis);
}

static void show_info(const isa_program *p, const char *path)
{
    printf("%s: config %s, %d cores, LX %" PRIu64 " bytes, stick %u bytes, DRAM segment %" PRIu64 " bytes, constants %zu bytes\n",
           path, p->config, p->ncores, p->lx_bytes, p->stick_bytes, p->dram_bytes, p->nconsts);
    printf("tensors:\n  %-20s %-7s %-4s %-4s %-20s %-12s %-12s\n", "name", "role", "host", "dev", "shape", "dram_off",
           "bytes");
    for (size_t i = 0; i < p->ntensors; i++) {
        const isa_tensor *t = &p->tensors[i];
        char shape[128] = "";
        size_t n = 0;
        for (int d = 0; d < t->rank; d++)
            n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%" PRId64, d ? "x" : "", t->shape[d]);
        printf("  %-20s %-7s %-4s %-4s %-20s 0x%-10" PRIx64 " %-12" PRIu64 "\n", t->name, isa_role_names[t->role],
               isa_host_dtype_names[t->host_dtype], isa_dtype_names[t->dev_dtype], shape, t->dram_off, t->bytes);
    }
    printf("instructions per core:");
    size_t total = 0;
    for (int c = 0; c < p->ncores; c++) {
        printf("%s%zu", c % 16 ? " " : "\n ", p->cores[c].n);
        total += p->cores[c].n;
    }
    printf("\ntotal instructions: %zu\n", total);
    if (p->graph)
        printf("computes:\n%s", p->graph);
}

static int cmd_info(int argc, char **argv)
{
    return with_program("info", argc, argv, show_info);
}

/* ---- gen ---- */

static int cmd_gen(int argc, char **argv)
{
    if (wants_help(argc, argv, "gen"))
        return EXIT_OK;
    const char *out = NULL, *config = NULL, *kind = NULL;
    int64_t dims[3];
    int ndims = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--config") && i + 1 < argc)
            config = argv[++i];
        else if (argv[i][0] == '-' && !isdigit((unsigned char)argv[i][1]))
            return unexpected("gen", argv[i]);
        else if (!kind)
            kind = argv[i];
        else if (ndims == 3 || isa_parse_int(argv[i], &dims[ndims++]))
            return usage_error("gen", "dimensions must be integers");
    }
    if (!kind || !out)
        return usage_error("gen", "needs KIND, its dimensions and -o FILE.elf");
    chip_config cfg;
    if (load_config(config, &cfg))
        return EXIT_USAGE;
    char err[1024];
    isa_program *p;
    if (!strcmp(kind, "gemm")) {
        if (ndims != 3)
            return usage_error("gen", "gemm needs M N K");
        p = cc_gen_gemm(&cfg, dims[0], dims[1], dims[2], err, sizeof err);
    } else if (!strcmp(kind, "softmax")) {
        if (ndims != 2)
            return usage_error("gen", "softmax needs ROWS COLS");
        p = cc_gen_softmax(&cfg, dims[0], dims[1], err, sizeof err);
    } else {
        return usage_error("gen", "KIND is gemm or softmax");
    }
    if (!p)
        return fail("spyre gen: %s", err);
    int rc = isa_elf_write(p, out, err, sizeof err);
    isa_program_free(p);
    return rc ? fail("spyre gen: %s", err) : EXIT_OK;
}

/* ---- run ---- */

void print_stats(const sim_stats *st, const chip_config *cfg)
{
    double us = sim_stats_time_us(st, cfg);
    uint64_t dram = st->dram_bytes_read + st->dram_bytes_written, rows = st->dram_row_hits + st->dram_row_misses;
    printf("cycles=%.0f time_us=%.3f (at %.3g GHz)\n", st->cycles, us, cfg->clock_ghz);
    printf("mac_utilization=%.4f macs=%" PRIu64 " insns=%" PRIu64 " sfp_elems=%" PRIu64 "\n",
           sim_stats_mac_utilization(st, cfg), st->macs, st->insns, st->sfp_elems);
    printf("dram_bytes_read=%" PRIu64 " dram_bytes_written=%" PRIu64 " dram_gbps=%.2f row_hit_rate=%.4f\n",
           st->dram_bytes_read, st->dram_bytes_written, us > 0 ? (double)dram / (us * 1e3) : 0.0,
           rows ? (double)st->dram_row_hits / (double)rows : 0.0);
    printf("dram_bus: data %.1f%% rw_mix %.1f%% of the run, mean over channels\n", 100 * sim_stats_dram_bus(st, cfg, 0),
           100 * sim_stats_dram_bus(st, cfg, 1));
    uint64_t peak = 0;
    int peak_core = 0, ncores = cfg->cores < SIM_MAX_CORES ? cfg->cores : SIM_MAX_CORES;
    for (int i = 0; i < ncores; i++)
        if (st->lx_peak[i] > peak) {
            peak = st->lx_peak[i];
            peak_core = i;
        }
    printf("ring_bytes=%" PRIu64 " lx_peak_bytes=%" PRIu64 " (core %d of %" PRIu64 ")\n", st->ring_bytes, peak, peak_core,
           cfg->lx_bytes);
    printf("units: busy%% / stall%% of the run, mean over cores (busiest core)\n");
    for (int u = 0; u < ISA_NUNITS; u++) {
        double busy = 0, stall = 0, top = 0;
        int topc = 0;
        for (int i = 0; i < ncores; i++) {
            busy += st->unit_busy[i][u];
            stall += st->unit_stall[i][u];
            if (st->unit_busy[i][u] > top) {
                top = st->unit_busy[i][u];
                topc = i;
            }
        }
        double denom = st->cycles > 0 ? st->cycles * ncores : 1;
        printf("  %-5s busy %5.1f%%  stall %5.1f%%  (core %d busy %.1f%%)\n", isa_unit_names[u], 100 * busy / denom,
               100 * stall / denom, topc, st->cycles > 0 ? 100 * top / st->cycles : 0.0);
    }
}

/* The five kernels with the longest span (end - start): share of the run,
 * MAC utilization of the whole chip over the span, DRAM bytes moved. */
void print_top_kernels(const sim_stats *st, const chip_config *cfg)
{
    enum { TOP = 5 };
    int top[TOP], ntop = 0;
    for (int k = 0; k < st->nkernels && k < SIM_MAX_KERNELS; k++) {
        const sim_kernel_stats *ks = &st->kernels[k];
        if (!ks->insns)
            continue;
        double span = ks->end - ks->start;
        int at = ntop < TOP ? ntop : TOP;
        while (at > 0 && span > st->kernels[top[at - 1]].end - st->kernels[top[at - 1]].start)
            at--;
        if (at == TOP)
            continue;
        int last = ntop < TOP ? ntop : TOP - 1;
        for (int j = last; j > at; j--)
            top[j] = top[j - 1];
        top[at] = k;
        if (ntop < TOP)
            ntop++;
    }
    if (!ntop)
        return;
    double peak = (double)cfg->cores * cfg->corelets * cfg->pt_rows * cfg->pt_cols * cfg->pt_lanes;
    printf("top kernels: span (end - start), share of the run, MAC utilization of the chip over the span, DRAM bytes\n");
    for (int j = 0; j < ntop; j++) {
        const sim_kernel_stats *ks = &st->kernels[top[j]];
        double span = ks->end - ks->start;
        printf("  %-24s cycles=%.0f share=%5.1f%% mac_utilization=%.4f dram_bytes=%" PRIu64 "\n", ks->name, span,
               st->cycles > 0 ? 100 * span / st->cycles : 0.0, span > 0 ? (double)ks->macs / (span * peak) : 0.0,
               ks->dram_bytes);
    }
}

static char *export_file(const char *path, const char *name);

/* An export's optional file (inputs.safetensors, expected.safetensors) is
 * absent only when nothing is at the path: one that is there but cannot be
 * read is an error of its reader, never a silent fallback. */
static int file_absent(const char *path)
{
    struct stat st;
    return stat(path, &st) != 0 && errno == ENOENT;
}

/* A path that names a graph (a graph file or an export directory), not a
 * program: anything but FILE.elf. */
static int names_graph(const char *path)
{
    size_t n = strlen(path);
    return !(n > 4 && !strcmp(path + n - 4, ".elf"));
}

/* `spyre run --work-div KERNEL=SPEC` overrides, --no-lx-plan, --no-lx-keep and
 * --no-reroll, for compile_and_load. */
static const char *run_work_div[SW_WORK_DIV_MAX];
static int run_nwork_div;
static int run_no_lx_plan, run_no_lx_keep, run_no_reroll, run_no_fallback, run_siblings, run_placement;

/* --siblings MODE: CC_SIBLINGS_* of its name, -1 for another word. */
static int siblings_mode(const char *s)
{
    static const char *const names[] = {[CC_SIBLINGS_ESTIMATE] = "estimate", [CC_SIBLINGS_NEVER] = "never",
                                        [CC_SIBLINGS_ALWAYS] = "always", NULL};
    return isa_name_index(names, s);
}

/* --placement MODE: CC_PLACE_* of its name, -1 for another word. */
static int placement_mode(const char *s)
{
    static const char *const names[] = {[CC_PLACE_FREE] = "free", [CC_PLACE_INDEPENDENT] = "independent",
                                        [CC_PLACE_NONE] = "none", NULL};
    return isa_name_index(names, s);
}

/* --tuning FILE (docs/sweep.md): the file's work divisions for this graph
 * and chip go before the --work-div options in wd (so those win); the
 * strings it adds are tuned[0..*ntuned), for the caller to free. */
static int apply_tuning(const char *file, const char *path, const gr_graph *g, const chip_config *cfg, const char **wd,
                        int *n, char **tuned, int *ntuned)
{
    const char *t[SW_WORK_DIV_MAX];
    int nt = 0;
    char err[1024];
    if (sweep_tuning_load(file, path, g, cfg, t, &nt, SW_WORK_DIV_MAX - *n, err, sizeof err)) {
        fprintf(stderr, "spyre: %s\n", err);
        return -1;
    }
    for (int i = 0; i < *n; i++)
        t[nt + i] = wd[i];
    for (int i = 0; i < nt; i++)
        tuned[i] = (char *)t[i];
    *ntuned = nt;
    *n += nt;
    for (int i = 0; i < *n; i++)
        wd[i] = t[i];
    return 0;
}

/* Compile graph g for the device's chip and load the program; with keep,
 * the compiler's result stays in *keep (the caller frees it). */
static rt_program *compile_and_load(rt_device *dev, const gr_graph *g, int write_values, cc_result **keep, char *err,
                                    size_t errlen)
{
    cc_compile_opts o = {0};
    o.write_values = write_values;
    o.target = rt_config(dev);
    o.work_div = run_work_div;
    o.nwork_div = run_nwork_div;
    o.no_lx_plan = run_no_lx_plan;
    o.no_lx_keep = run_no_lx_keep;
    o.no_reroll = run_no_reroll;
    o.no_fallback = run_no_fallback;
    o.siblings = run_siblings;
    o.placement = run_placement;
    cc_result *r = cc_compile(g, &o, err, errlen);
    if (!r)
        return NULL;
    isa_program *p = cc_result_take_program(r);
    if (keep)
        *keep = r;
    else
        cc_result_free(r);
    return rt_load_program(dev, p, err, errlen);
}

/* Compare the outputs with PyTorch's (an export's expected.safetensors)
 * at the reference's tolerances (rt_check_expected): an exit status, 1 on
 * a mismatch, 2 when the file is unreadable or does not fit the graph.
 * PyTorch's outputs are for the export's inputs: skip, when not NULL,
 * says why the run's inputs are others, and the comparison is skipped
 * with a line saying so (the reference executor's comparison stands). */
static int check_expected(rt_program *prog, const gr_graph *g, const char *path, const char *skip)
{
    if (file_absent(path))
        return EXIT_OK;
    if (skip) {
        printf("expected: skipped: %s\n", skip);
        return EXIT_OK;
    }
    char err[1024];
    rt_check_result *chk = NULL;
    int n = 0, bad = rt_check_expected(prog, g, path, &chk, &n, err, sizeof err);
    if (bad < 0) {
        fprintf(stderr, "spyre run: %s\n", err);
        free(chk);
        return EXIT_USAGE;
    }
    for (int i = 0; i < n; i++) {
        char line[1024];
        rt_check_format(&chk[i], line, sizeof line);
        printf("expected %s\n", strncmp(line, "check ", 6) ? line : line + 6);
    }
    free(chk);
    return bad > 0 ? EXIT_MISMATCH : EXIT_OK;
}

/* A non-negative finite decimal number (ns): 0, or -1. */
static int parse_ns(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0)
        return -1;
    *out = v;
    return 0;
}

/* `spyre run`'s command line. */
typedef struct {
    const char *path, *config, *stats_json, *trace, *tuning;
    int check, stepwise, report;
    uint64_t seed;
    const char *inputs[64];
    int ninputs;
    sim_options opt;
} run_args;

/* One option of `spyre run` at argv[*i] (its value, when it takes one,
 * after it): 0, or the exit status of a usage error. */
static int run_option(int argc, char **argv, int *i, run_args *a, sim_trace_level *level, int *race_flag)
{
    const char *o = argv[*i];
    const int val = *i + 1 < argc;
    int64_t v;
    if (!strcmp(o, "--check"))
        a->check = 1;
    else if (!strcmp(o, "--report"))
        a->report = 1;
    else if (!strcmp(o, "--stepwise"))
        a->check = a->stepwise = 1;
    else if (!strcmp(o, "--no-values"))
        a->opt.values = 0;
    else if (!strcmp(o, "--no-race-check"))
        *race_flag = 0;
    else if (!strcmp(o, "--race-check"))
        *race_flag = 1;
    else if (!strcmp(o, "--seed") && val) {
        if (isa_parse_int(argv[++*i], &v) || v < 0)
            return usage_error("run", "--seed takes a non-negative integer");
        a->seed = (uint64_t)v;
    } else if ((!strcmp(o, "--max-insns") || !strcmp(o, "--max-cycles")) && val) {
        int insns = !strcmp(o, "--max-insns");
        uint64_t n;
        if (parse_count(argv[++*i], &n))
            return usage_error("run", insns ? "--max-insns takes a non-negative integer (or MeE: 1e9)"
                                            : "--max-cycles takes a non-negative integer (or MeE: 1e9)");
        *(insns ? &a->opt.max_insns : &a->opt.max_cycles) = n ? n : SIM_NO_LIMIT; /* 0: no limit */
    } else if (!strcmp(o, "--refresh-phase") && val) {
        if (parse_ns(argv[++*i], &a->opt.refresh_phase_ns))
            return usage_error("run", "--refresh-phase takes a number of ns from 0 to below dram_trefi_ns");
    } else if (!strcmp(o, "--config") && val)
        a->config = argv[++*i];
    else if (!strcmp(o, "--work-div") && val) {
        if (run_nwork_div == SW_WORK_DIV_OPTS)
            return usage_error("run", "too many --work-div options");
        run_work_div[run_nwork_div++] = argv[++*i];
    } else if (!strcmp(o, "--no-lx-plan"))
        run_no_lx_plan = 1;
    else if (!strcmp(o, "--no-lx-keep"))
        run_no_lx_keep = 1;
    else if (!strcmp(o, "--no-reroll"))
        run_no_reroll = 1;
    else if (!strcmp(o, "--no-fallback"))
        run_no_fallback = 1;
    else if (!strcmp(o, "--siblings") && val) {
        if ((run_siblings = siblings_mode(argv[++*i])) < 0)
            return usage_error("run", "--siblings is estimate, never or always");
    } else if (!strcmp(o, "--placement") && val) {
        if ((run_placement = placement_mode(argv[++*i])) < 0)
            return usage_error("run", "--placement is none, independent or free");
    }
    else if (!strcmp(o, "--tuning") && val)
        a->tuning = argv[++*i];
    else if (!strcmp(o, "--stats-json") && val)
        a->stats_json = argv[++*i];
    else if (!strcmp(o, "--trace") && val)
        a->trace = argv[++*i];
    else if (!strcmp(o, "--trace-level") && val) {
        ++*i;
        if (!strcmp(argv[*i], "insn"))
            *level = SIM_TRACE_INSN;
        else if (!strcmp(argv[*i], "kernel"))
            *level = SIM_TRACE_KERNEL;
        else
            return usage_error("run", "--trace-level is insn or kernel");
    } else if (!strcmp(o, "--input") && val) {
        if (a->ninputs == 64)
            return usage_error("run", "too many --input options");
        a->inputs[a->ninputs++] = argv[++*i];
    } else if (o[0] == '-' || a->path)
        return unexpected("run", o);
    else
        a->path = o;
    return 0;
}

/* The command line into a: 0, or the exit status of a usage error. */
static int run_parse(int argc, char **argv, run_args *a)
{
    *a = (run_args){.seed = 1, .opt = {.values = 1, .detect_races = 1, .trace = SIM_TRACE_OFF}};
    sim_trace_level level = SIM_TRACE_OFF; /* --trace-level not given: insn */
    int race_flag = -1; /* --race-check / --no-race-check; default: on with values */
    for (int i = 1; i < argc; i++) {
        int st = run_option(argc, argv, &i, a, &level, &race_flag);
        if (st)
            return st;
    }
    if (!a->path)
        return usage_error("run", "needs FILE.elf, GRAPH or DIR");
    if (a->check && !a->opt.values)
        return usage_error("run", "--check needs values: drop --no-values");
    if (a->report && !names_graph(a->path))
        return usage_error("run", "--report needs a GRAPH or DIR to compile (a program has no estimates)");
    /* timing-only runs are for speed: they check races only when asked */
    a->opt.detect_races = race_flag >= 0 ? race_flag : a->opt.values;
    if (level != SIM_TRACE_OFF && !a->trace) /* else no trace, and no word why */
        return usage_error("run", "--trace-level needs --trace FILE");
    if (a->trace)
        a->opt.trace = level == SIM_TRACE_OFF ? SIM_TRACE_INSN : level;
    return 0;
}

/* A run under way: the device, the graph (when a graph was named) with
 * its export's inputs and expected outputs, the program; tuned: the work
 * divisions a --tuning file added. */
typedef struct {
    const run_args *a;
    rt_device *dev;
    gr_graph *g;
    rt_program *prog;
    cc_result *cr; /* --report: the compiler's result */
    char *gin, *gexp;
    int random_inputs;
    char *tuned[SW_WORK_DIV_MAX];
    int ntuned;
    char err[1024];
} run_state;

/* The program: loaded from FILE.elf, or the graph compiled (with the
 * tuning file's work divisions) and loaded. */
static int run_load(run_state *s)
{
    const char *path = s->a->path;
    if (names_graph(path)) {
        s->g = gr_graph_load(path, s->err, sizeof s->err);
        if (!s->g) {
            fprintf(stderr, "spyre run: %s\n", s->err);
            return -1;
        }
        s->gin = export_file(path, "inputs.safetensors");
        s->gexp = export_file(path, "expected.safetensors");
        if (s->a->tuning && apply_tuning(s->a->tuning, path, s->g, rt_config(s->dev), run_work_div, &run_nwork_div,
                                         s->tuned, &s->ntuned))
            return -1;
        s->prog = compile_and_load(s->dev, s->g, 0, s->a->report ? &s->cr : NULL, s->err, sizeof s->err);
    } else {
        s->prog = rt_load(s->dev, path, s->err, sizeof s->err);
    }
    if (!s->prog) {
        fprintf(stderr, "spyre run: %s\n", s->err);
        return -1;
    }
    return 0;
}

/* The inputs: random from the seed, then an export's inputs (values on),
 * then the --input files. */
static int run_fill(run_state *s, rt_program *prog)
{
    if (rt_fill_inputs(prog, s->a->seed, s->err, sizeof s->err)) {
        fprintf(stderr, "spyre run: %s\n", s->err);
        return -1;
    }
    if (s->g && s->a->opt.values) { /* timing only needs no data: a --graph-only export has none */
        s->random_inputs = file_absent(s->gin);
        if (rt_load_graph_tensors(prog, s->g, s->random_inputs ? NULL : s->gin, s->err, sizeof s->err)) {
            fprintf(stderr, "spyre run: %s\n", s->err);
            return -1;
        }
    }
    for (int i = 0; i < s->a->ninputs; i++)
        if (rt_input_arg(prog, s->a->inputs[i], s->err, sizeof s->err)) {
            fprintf(stderr, "spyre run: %s\n", s->err);
            return -1;
        }
    return 0;
}

/* The host fallback ops of the run, each with its cost (docs/runtime.md),
 * at their lines in the source graph g when the run compiled one (else
 * in the program's graph text). */
static void print_fallback(const rt_run_result *res, const gr_graph *g)
{
    printf("fallback_ops=%d host_cycles=%.0f\n", res->fallback_ops, res->stats.host_cycles);
    for (int i = 0; i < res->fallback_ops && i < RT_MAX_FALLBACK; i++) {
        const rt_fallback_op *f = &res->fallback[i];
        int line = g && f->node < g->nnodes ? g->nodes[f->node].line : f->line;
        printf("  fallback %s (graph line %d): bytes_to_host=%" PRIu64 " bytes_to_device=%" PRIu64 " cycles=%.0f\n",
               f->op, line, f->bytes_to_host, f->bytes_to_device, f->cycles);
    }
}

/* --report: each kernel's estimate (the compile report's `estimate:`)
 * against its simulated time (the longest one core ran it, core_span), in
 * program order, and over all of them the
 * geometric mean of estimate / simulated and the ratio furthest from 1
 * (docs/compiler.md, "Estimates against the simulator"). */
static void print_estimates(const cc_result *r, const sim_stats *st)
{
    double logsum = 0, worst = 1;
    int n = 0;
    printf("estimates: per kernel the cost model's cycles, the simulated cycles (the longest one core ran it), estimate / simulated\n");
    for (int k = 0; k < st->nkernels; k++) {
        const sim_kernel_stats *ks = &st->kernels[k];
        const double est = cc_result_estimate(r, ks->name), span = ks->core_span;
        if (est <= 0 || span <= 0 || !ks->insns)
            continue;
        const double q = est / span;
        printf("  %-24s estimate=%.0f simulated=%.0f ratio=%.3f\n", ks->name, est, span, q);
        logsum += log(q);
        worst = fabs(log(q)) > fabs(log(worst)) ? q : worst;
        n++;
    }
    if (n)
        printf("estimates: %d kernels, geometric mean %.3f, furthest from 1 %.3f\n", n, exp(logsum / n), worst);
}

/* --stats-json, if asked: 0, or -1 said on stderr. */
static int write_stats_json(run_state *s, const rt_run_result *res)
{
    const char *path = s->a->stats_json;
    if (!path || !sim_write_stats_json(&res->stats, rt_config(s->dev), path, s->err, sizeof s->err))
        return 0;
    fprintf(stderr, "spyre run: %s\n", s->err);
    return -1;
}

/* A launch refused on the user's values (an input, a computed index), as
 * FILE:LINE: of the graph line it names. */
static void refused_launch(const run_state *s, const rt_run_result *res)
{
    const isa_program *p = rt_program_isa(s->prog);
    int v = s->g && res->refused >= 0 ? gr_graph_find_tensor(s->g, p->tensors[res->refused].name) : -1;
    int line = v >= 0 ? s->g->values[v].line : res->refused_line;
    char msg[2048];
    rt_run_format(res, msg, sizeof msg);
    if (s->g && line)
        fprintf(stderr, "%s:%d: %s\n", s->g->path, line, res->fault.msg);
    else
        fprintf(stderr, "spyre run: %s: %s\n", s->a->path, msg);
}

/* Run the program and report: the result line, statistics, top kernels,
 * the trace and --stats-json files. An exit status. */
static int run_report(run_state *s, rt_run_result *res)
{
    const run_args *a = s->a;
    char line[2048];
    int rc = rt_launch(s->prog, res);
    /* a trace that cannot be written is exit 2, unless the run faulted (3) */
    int trace_bad = a->trace && sim_write_trace(rt_sim(s->dev), rt_program_isa(s->prog), a->trace, s->err, sizeof s->err);
    if (trace_bad)
        fprintf(stderr, "spyre run: %s\n", s->err);
    if (rc && (res->refused >= 0 || res->refused_line)) /* a user error: its graph line */
        refused_launch(s, res);
    else if (rc) {
        rt_run_format(res, line, sizeof line);
        fprintf(stderr, "spyre run: %s: %s\n", a->path, line);
        /* the statistics up to the fault, beside the trace, for whoever
         * debugs it (its exit 3 stands if the file cannot be written) */
        if (res->status == RT_RUN_FAULT)
            write_stats_json(s, res);
    }
    if (rc || trace_bad)
        return res->status == RT_RUN_UNSUPPORTED ? EXIT_USAGE : rc ? EXIT_FAULT : EXIT_USAGE;
    rt_run_format(res, line, sizeof line);
    printf("%s\n", line);
    print_stats(&res->stats, rt_config(s->dev));
    print_fallback(res, s->g);
    print_top_kernels(&res->stats, rt_config(s->dev));
    if (s->cr)
        print_estimates(s->cr, &res->stats);
    return write_stats_json(s, res) ? EXIT_USAGE : EXIT_OK;
}

/* Print check results; how many are not ok. */
static int print_checks(const rt_check_result *r, int n)
{
    char line[2048];
    int bad = 0;
    for (int i = 0; i < n; i++) {
        rt_check_format(&r[i], line, sizeof line);
        printf("%s\n", line);
        bad += !r[i].ok;
    }
    return bad;
}

/* The stepwise check of a compiled graph's run (docs/validation.md): the
 * graph built again with every value also written to DRAM (the probe),
 * run on the same inputs, its kept values the cuts.  An exit status; a
 * probe that cannot stand for the run leaves the check as it was, said. */
static int run_stepwise(run_state *s)
{
    rt_program *probe = compile_and_load(s->dev, s->g, 1, NULL, s->err, sizeof s->err);
    rt_run_result *res = probe ? malloc(sizeof *res) : NULL;
    int status = EXIT_OK, fail = !res;
    if (!fail)
        fail = run_fill(s, probe);
    if (!fail) {
        rt_keep_values(probe, 2);
        fail = rt_launch(probe, res);
        if (fail)
            rt_run_format(res, s->err, sizeof s->err);
    }
    rt_check_result *r = NULL;
    int n = 0, bad = fail ? -1 : rt_check_stepwise(s->prog, probe, s->g, &r, &n, s->err, sizeof s->err);
    if (bad < 0)
        printf("check stepwise: not run: %s\n", s->err);
    else if (print_checks(r, n) || bad)
        status = EXIT_MISMATCH;
    free(r);
    free(res);
    if (probe)
        rt_unload(probe);
    return status;
}

/* Does the run want a stepwise check after its end-to-end one? */
static int wants_stepwise(const run_state *s, const rt_check_result *r, int n)
{
    return s->g && (s->a->stepwise || rt_check_vacuous(r, n));
}

/* --check: the outputs against the reference executor (stepwise too when
 * vacuous or asked), then against PyTorch's expected outputs (an
 * export's). An exit status. */
static int run_check(run_state *s)
{
    rt_check_result *r = NULL;
    int n = 0, status = EXIT_OK;
    int bad = s->g ? rt_check_graph(s->prog, s->g, &r, &n, s->err, sizeof s->err)
                   : rt_check(s->prog, &r, &n, s->err, sizeof s->err);
    if (bad < 0) {
        fprintf(stderr, "spyre run: %s\n", s->err);
        status = EXIT_USAGE;
    } else {
        if (print_checks(r, n) || bad)
            status = EXIT_MISMATCH;
        if (wants_stepwise(s, r, n) && run_stepwise(s) != EXIT_OK)
            status = EXIT_MISMATCH;
    }
    free(r);
    /* also after a mismatch: a bad expected.safetensors is exit 2 either way */
    int e = s->g && status != EXIT_USAGE
                ? check_expected(s->prog, s->g, s->gexp,
                                 s->a->ninputs ? "--input replaced inputs that PyTorch's outputs were computed for"
                                 : s->random_inputs ? "no inputs.safetensors: the inputs are random"
                                                    : NULL)
                : EXIT_OK;
    return e > status ? e : status;
}

/* Load or compile, fill the inputs, run and report, check. */
static int run_program(run_state *s)
{
    if (run_load(s) || run_fill(s, s->prog))
        return EXIT_USAGE;
    rt_run_result *res = malloc(sizeof *res);
    if (!res) {
        fprintf(stderr, "spyre run: out of memory\n");
        return EXIT_USAGE;
    }
    if (s->a->check && !s->g) /* a vacuous end-to-end check goes on stepwise (docs/validation.md); a
                               * graph's from a probe build (run_stepwise) */
        rt_keep_values(s->prog, s->a->stepwise ? 2 : 1);
    int status = run_report(s, res);
    free(res);
    if (status == EXIT_OK && s->a->check)
        status = run_check(s);
    return status;
}

static int cmd_run(int argc, char **argv)
{
    if (wants_help(argc, argv, "run"))
        return EXIT_OK;
    if (sdsc_names_kernel_dir(argc, argv)) /* a torch-spyre kernel directory (sdsc_cmd.c) */
        return sdsc_run(argc, argv);
    if (argc > 1 && kt_is_ktir_path(argv[1])) /* a KTIR program: its own path (ktir/run.c) */
        return kt_cli_run(argc, argv);
    if (tp_wanted(argc, argv)) /* several cards (tp.c) */
        return tp_run(argc, argv);
    if (tp_refuse_mpirun("run", "one rank per card needs --tp N (N the ranks)"))
        return EXIT_USAGE;
    run_args a;
    int status = run_parse(argc, argv, &a);
    if (status)
        return status;
    run_state s = {0};
    s.a = &a;
    char *cfgpath = chip_config_path(a.config ? a.config : "spyre");
    s.dev = rt_open(cfgpath, s.err, sizeof s.err);
    free(cfgpath);
    if (!s.dev)
        return fail("spyre run: %s", s.err);
    if (a.opt.refresh_phase_ns >= rt_config(s.dev)->dram_trefi_ns) { /* the phase is within one interval */
        fprintf(stderr, "spyre run: --refresh-phase %g is not below dram_trefi_ns (%g ns on %s)\n",
                a.opt.refresh_phase_ns, rt_config(s.dev)->dram_trefi_ns, rt_config(s.dev)->name);
        rt_close(s.dev);
        return EXIT_USAGE;
    }
    rt_set_options(s.dev, &a.opt);
    status = run_program(&s);
    for (int i = 0; i < s.ntuned; i++)
        free(s.tuned[i]);
    free(s.gin);
    free(s.gexp);
    gr_graph_free(s.g);
    if (s.prog)
        rt_unload(s.prog);
    cc_result_free(s.cr);
    rt_close(s.dev);
    return status;
}

/* ---- compile ---- */

static int cmd_compile(int argc, char **argv)
{
    if (wants_help(argc, argv, "compile"))
        return EXIT_OK;
    if (tp_wanted(argc, argv)) /* several cards (tp.c) */
        return tp_compile(argc, argv);
    const char *path = NULL, *dump = NULL, *out = NULL, *config = NULL, *tuning = NULL;
    int report = 0, list = 0, no_lx_plan = 0, no_lx_keep = 0, no_reroll = 0, no_fallback = 0, siblings = 0, placement = 0;
    int time_passes = 0, threads = 0;
    const char *work_div[SW_WORK_DIV_MAX];
    int nwork_div = 0;
    char *tuned[SW_WORK_DIV_MAX];
    int ntuned = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-lx-plan") || !strcmp(argv[i], "--no-lx-keep")) {
            *(argv[i][8] == 'p' ? &no_lx_plan : &no_lx_keep) = 1;
            continue;
        }
        if (!strcmp(argv[i], "--no-reroll") || !strcmp(argv[i], "--no-fallback")) {
            *(argv[i][5] == 'r' ? &no_reroll : &no_fallback) = 1;
            continue;
        }
        if (!strcmp(argv[i], "--work-div") || !strncmp(argv[i], "--work-div=", 11)) {
            if (argv[i][10] != '=' && i + 1 >= argc)
                return usage_error("compile", "--work-div takes KERNEL=SPEC");
            if (nwork_div == SW_WORK_DIV_OPTS)
                return usage_error("compile", "too many --work-div options");
            work_div[nwork_div++] = argv[i][10] == '=' ? argv[i] + 11 : argv[++i];
        } else if (!strcmp(argv[i], "--siblings") && i + 1 < argc) {
            if ((siblings = siblings_mode(argv[++i])) < 0)
                return usage_error("compile", "--siblings is estimate, never or always");
        } else if (!strcmp(argv[i], "--placement") && i + 1 < argc) {
            if ((placement = placement_mode(argv[++i])) < 0)
                return usage_error("compile", "--placement is none, independent or free");
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            char *end;
            threads = (int)strtol(argv[++i], &end, 10);
            if (*end || threads < 1)
                return usage_error("compile", "--threads is 1 or 2");
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--tuning") && i + 1 < argc)
            tuning = argv[++i];
        else if (!strcmp(argv[i], "--config") && i + 1 < argc)
            config = argv[++i];
        else if (!strncmp(argv[i], "--dump-after=", 13))
            dump = argv[i] + 13;
        else if (!strcmp(argv[i], "--dump-after") && i + 1 < argc)
            dump = argv[++i];
        else if (!strcmp(argv[i], "--report"))
            report = 1;
        else if (!strcmp(argv[i], "--time-passes"))
            time_passes = 1;
        else if (!strcmp(argv[i], "--list-passes"))
            list = 1;
        else if (!strcmp(argv[i], "--decompositions"))
            list = 2;
        else if (argv[i][0] == '-' || path)
            return unexpected("compile", argv[i]);
        else
            path = argv[i];
    }
    if (list == 2) {
        cc_decompositions_print(stdout);
        return EXIT_OK;
    }
    if (list) {
        for (const char *const *p = cc_pass_names(); *p; p++)
            printf("%s\n", *p);
        for (const char *const *p = cc_backend_pass_names(); *p; p++)
            printf("%s\n", *p);
        return EXIT_OK;
    }
    gr_graph *g = graph_arg("compile", path);
    if (!g)
        return EXIT_USAGE;
    char err[1024];
    cc_compile_opts opts = {.dump_after = dump, .dump = stdout, .work_div = work_div, .nwork_div = nwork_div,
                            .no_lx_plan = no_lx_plan, .no_lx_keep = no_lx_keep, .no_reroll = no_reroll,
                            .no_fallback = no_fallback, .siblings = siblings,
                            .placement = placement, .time_passes = time_passes ? stderr : NULL,
                            .threads = threads};
    chip_config cfg;
    int backend_dump = 0;
    for (const char *const *p = cc_backend_pass_names(); dump && *p; p++)
        backend_dump |= !strcmp(*p, dump);
    if (out || config || backend_dump || nwork_div || tuning) {
        char *cfgpath = chip_config_path(config ? config : "spyre");
        int bad = chip_config_load(cfgpath, &cfg, err, sizeof err);
        free(cfgpath);
        if (bad) {
            gr_graph_free(g);
            return fail("spyre compile: %s", err);
        }
        opts.target = &cfg;
        if (tuning && apply_tuning(tuning, path, g, &cfg, work_div, &nwork_div, tuned, &ntuned)) {
            gr_graph_free(g);
            return EXIT_USAGE;
        }
        opts.nwork_div = nwork_div;
    }
    cc_result *r = cc_compile(g, &opts, err, sizeof err);
    for (int i = 0; i < ntuned; i++)
        free(tuned[i]);
    int status = EXIT_OK;
    if (!r) {
        fprintf(stderr, "spyre compile: %s\n", err);
        status = EXIT_USAGE;
    } else {
        if (report || (!dump && !out))
            cc_compile_report(r, stdout);
        if ((report || (!dump && !out)) && !opts.target) /* the estimates come with a chip only */
            printf("no chip given: --config CHIP (or -o FILE, spyre) adds each kernel's core split, tiles and "
                   "estimate\n");
        isa_program *p = cc_result_take_program(r);
        if (out && isa_elf_write(p, out, err, sizeof err)) {
            fprintf(stderr, "spyre compile: %s\n", err);
            status = EXIT_USAGE;
        }
        isa_program_free(p);
        cc_result_free(r);
    }
    gr_graph_free(g);
    return status;
}

/* ---- ref ---- */

/* DIR/NAME, DIR the directory of a graph file or an export directory. */
static char *export_file(const char *path, const char *name)
{
    size_t n = strlen(path);
    if (n > 4 && !strcmp(path + n - 4, ".txt")) {
        const char *slash = strrchr(path, '/');
        char *dir = slash ? strndup(path, (size_t)(slash - path)) : NULL;
        if (slash && !dir)
            abort();
        char *file = isa_path_join(dir ? dir : ".", name);
        free(dir);
        return file;
    }
    return isa_path_join(path, name);
}

static int cmd_ref(int argc, char **argv)
{
    if (wants_help(argc, argv, "ref"))
        return EXIT_OK;
    const char *path = NULL, *inputs = NULL, *expected = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--inputs") && i + 1 < argc)
            inputs = argv[++i];
        else if (!strcmp(argv[i], "--expected") && i + 1 < argc)
            expected = argv[++i];
        else if (argv[i][0] == '-' || path)
            return unexpected("ref", argv[i]);
        else
            path = argv[i];
    }
    gr_graph *g = graph_arg("ref", path);
    if (!g)
        return EXIT_USAGE;
    char err[1024];
    char *in_path = inputs ? isa_path_join(NULL, inputs) : export_file(path, "inputs.safetensors");
    char *exp_path = expected ? isa_path_join(NULL, expected) : export_file(path, "expected.safetensors");
    int status = EXIT_USAGE;
    rt_st_file *want = NULL;
    rt_ref *r = rt_ref_new(g, err, sizeof err);
    if (!r || rt_ref_load_weights(r, NULL, err, sizeof err) || rt_ref_load_inputs(r, in_path, err, sizeof err) ||
        rt_ref_run(r, err, sizeof err) || !(want = rt_st_read(exp_path, err, sizeof err))) {
        fprintf(stderr, "spyre ref: %s\n", err);
        goto out;
    }
    status = EXIT_OK;
    for (int i = 0; i < g->noutputs; i++) {
        char key[32];
        snprintf(key, sizeof key, "output%d", i);
        gr_ttype type;
        const float *y = rt_ref_output(r, i, &type);
        const rt_st_tensor *t = rt_st_find(want, key);
        int64_t n = gr_ttype_numel(&type);
        if (!y || !t) {
            fprintf(stderr, "spyre ref: %s: no %s of %lld elements\n", exp_path, key, (long long)n);
            status = EXIT_USAGE;
            continue;
        }
        if (rt_st_check_type(t, exp_path, &g->values[g->outputs[i]], "expected output", err, sizeof err)) {
            fprintf(stderr, "spyre ref: %s\n", err);
            status = EXIT_USAGE;
            continue;
        }
        float *w = malloc((size_t)(n ? n : 1) * sizeof *w);
        if (!w) {
            fprintf(stderr, "spyre ref: %s: out of memory for %s\n", exp_path, key);
            status = EXIT_USAGE;
            break;
        }
        rt_st_to_f32(t, w);
        /* fp32 rounding of a reordered computation: relative to the output's scale */
        double scale = 0, maxerr = 0;
        for (int64_t j = 0; j < n; j++)
            scale = fabs(w[j]) > scale ? fabs(w[j]) : scale;
        for (int64_t j = 0; j < n; j++) {
            if (isnan(y[j]) && isnan(w[j])) /* NaN where PyTorch has one (a mean over no element) */
                continue;
            double e = fabs((double)y[j] - w[j]);
            if (e > maxerr || e != e)
                maxerr = e != e ? INFINITY : e;
        }
        int ok = maxerr <= 1e-5 * (scale > 1 ? scale : 1) * 16;
        printf("ref %s (%%%s): max_abs_err=%.3g scale=%.3g %s\n", key, g->values[g->outputs[i]].name, maxerr, scale,
               ok ? "ok" : "MISMATCH");
        if (!ok && status == EXIT_OK)
            status = EXIT_MISMATCH;
        free(w);
    }
out:
    rt_st_free(want);
    rt_ref_free(r);
    gr_graph_free(g);
    free(in_path);
    free(exp_path);
    return status;
}

static const command commands[] = {
    {"as", cmd_as, "as FILE.s -o FILE.elf", "Assemble a program (syntax: docs/isa.md) into an ELF file."},
    {"dis", cmd_dis, "dis FILE.elf", "Print a program as assembler text that `spyre as` accepts."},
    {"info", cmd_info, "info FILE.elf", "Print a program's target chip, tensor table and instruction counts per core."},
    {"compile", cmd_compile,
     "compile GRAPH [-o FILE.elf] [--config FILE] [--report] [--dump-after=PASS] [--list-passes] [--decompositions]\n"
     "               [--work-div KERNEL=SPEC]... [--tuning FILE] [--no-lx-plan | --no-lx-keep] [--no-reroll]\n"
     "               [--no-fallback] [--siblings estimate|never|always] [--placement none|independent|free]\n"
     "               [--time-passes] [--threads N]",
     "Compile an ATen graph (a graph file, or a directory written by tools/export.py; format in\n"
     "docs/graph-format.md) through the front half of the compiler: decomposition, Inductor-style\n"
     "lowering, dependencies, dead-code elimination, fusion, ordering (docs/compiler.md).  Prints the\n"
     "fused kernels with the ATen ops in each (--report, the default); --dump-after=PASS prints the IR\n"
     "after that pass (--list-passes names them); --decompositions prints the decompose pass's rules.\n"
     "--time-passes prints each pass's host time to stderr as it ends (\"pass NAME MS ms\"; a graph\n"
     "compiled more than once, fused and apart or again for the host fallback, prints each time).\n"
     "--threads 1 emits each kernel's cores on one host thread, 2 a big product's on two; by default\n"
     "on two when the host has two processors and the second is free (SPYRE_THREADS=1 or 2 says too);\n"
     "the program is the same either way.\n"
     "With -o (or --config, or a back-half pass to dump)\n"
     "the back half runs too (layout, workdiv, lxplan, codegen, reroll) for the chip of --config (default spyre) and\n"
     "-o writes the program.  --work-div KERNEL=SPEC forces a kernel's split across cores (a matmul\n"
     "grid MxN such as 4x8, or a row kernel's core count), as a `hint work_div` line in the graph does.\n"
     "--tuning FILE applies a tuning file of `spyre sweep --autotune` (lines for other graphs, chips\n"
     "or kernels are ignored; --work-div options win over it).\n"
     "--no-lx-plan turns LX planning off (no fusion: every intermediate goes through DRAM, and no tensor\n"
     "stays in LX between kernels); --no-lx-keep keeps the fusions but no tensor in LX between kernels.\n"
     "The report shows per kernel the tensors kept in LX, read from LX, spilled and reloaded.\n"
     "The reroll pass rolls each kernel's instructions into counted loops (the report's last section\n"
     "gives instructions per kernel before and after); --no-reroll leaves them spelled out, for comparison.\n"
     "An op the compiler cannot do on the device becomes a host op (kind host), which the runtime runs\n"
     "on the host between kernels; --no-fallback makes it an error naming the op instead.\n"
     "Products that share their A operand (q, k and v of attention; gate and up of an MLP) become one\n"
     "product where the estimate says the program is faster (--siblings estimate, the default); never\n"
     "keeps them apart, always fuses wherever it can.  Kernel names follow: fused, attention's QK^T is\n"
     "k1_bmm rather than k3_bmm, which --work-div names must match.\n"
     "A kernel that depends on no kernel since the last bar runs on the cores the estimates expect free\n"
     "first, reading kept tensors from DRAM and adding bars where that lets the next kernel move\n"
     "(--placement free, the default: up to 15% faster on small decode graphs); independent moves only\n"
     "a kernel that depends on no earlier kernel; none runs every kernel from core 0."},
    {"ref", cmd_ref, "ref GRAPH [--inputs FILE] [--expected FILE]",
     "Run a graph on the host with the reference executor (fp32, OpenBLAS for matrix products; it\n"
     "shares no code with the compiler's lowering) on the export directory's inputs.safetensors and\n"
     "compare each output with PyTorch's expected.safetensors.  Exit 1 on a mismatch, 2 when a file's\n"
     "tensor is missing or has another shape or dtype than the graph declares."},
    {"gen", cmd_gen, "gen gemm M N K -o FILE.elf [--config FILE] | gen softmax ROWS COLS -o FILE.elf [--config FILE]",
     "Generate a program: C = A x B (A is M x K, B is K x N) split across the cores, or a softmax over\n"
     "the rows of a ROWS x COLS tensor, compiled from the graph of that one op as `spyre compile` does.\n"
     "--config picks the chip (a path or a name in chip/configs/; default spyre)."},
    {"run", cmd_run,
     "run FILE.elf|GRAPH|DIR [--check | --stepwise] [--seed N] [--config FILE] [--input NAME=FILE]... [--no-values]\n"
     "           [--stats-json FILE] [--trace FILE [--trace-level insn|kernel]] [--[no-]race-check]\n"
     "           [--work-div KERNEL=SPEC]... [--tuning FILE] [--no-lx-plan | --no-lx-keep] [--no-reroll]\n"
     "           [--no-fallback] [--siblings MODE] [--placement MODE] [--max-insns N] [--max-cycles N] [--refresh-phase NS] [--report]\n"
     "       | run FILE.mlir [--arg NAME=VALUE]... [--input NAME=FILE]... [--check --expected FILE]\n"
     "       | run GRAPH --tp N [--system NAME] [--config CHIP] [--check] [--no-values] [--seed N]\n"
     "           [--trace FILE [--trace-level insn|kernel]] [--stats-json FILE]",
     "With --tp N a transformer GRAPH is split the Megatron way for N cards of the system (--system, a\n"
     "name in chip/configs/ or a .sys file; default spyre-x8; --config replaces its cards' chip), every\n"
     "card run in a thread of its own, meeting the others at the allreduces (timed by the ring\n"
     "algorithm on the system's link); one statistics line per card and one overall; --check compares\n"
     "the cards' outputs put together with the unsplit graph's reference (docs/multicard.md); --trace\n"
     "writes one timeline with a process per card, --stats-json every card's statistics and the totals.\n"
     "An op the splitter has no rule for on a cut tensor is an error naming it (exit 2).\n"
     "A KTIR program (FILE.mlir or .ktir) is compiled per core of its grid and run with its --arg values\n"
     "and --input tensors; --check compares with --expected (docs/torch-spyre.md, \"KTIR programs\").\n"
     "A torch-spyre kernel DIR (holding sdsc_N.json) is checked as `spyre check` does and its SDSC kernels\n"
     "run as the SDSC divides them, with spyre launch's tensor specs (-i 512x1024@fp16 ... -o ...; fp16,\n"
     "bf16, fp32) and random or --ones inputs; --check runs each kernel's ATen op in the reference\n"
     "(docs/torch-spyre.md).\n"
     "A GRAPH (or export DIR) is compiled for the chip first; its inputs come from DIR/inputs.safetensors\n"
     "when there is one and its weights from the graph's weights file; --check then validates against the\n"
     "reference executor and, when DIR/expected.safetensors exists, against PyTorch's outputs (skipped,\n"
     "said so, when --input replaces an input or there is no inputs.safetensors).  Every tensor loaded\n"
     "from a file must have the shape and dtype the graph declares.\n"
     "Load a program on a simulated chip, fill its inputs with seeded random values in [-1, 1)\n"
     "(--seed, default 1) or from raw little-endian fp32 files (--input), run it and print the\n"
     "simulated cycles and time, MAC utilization, DRAM traffic, bandwidth and row-hit rate, ring\n"
     "traffic, peak LX use, per-unit busy/stall time and the five most expensive kernels.\n"
     "--check compares every output with the reference (OpenBLAS for matrix products) and prints one\n"
     "line per output ending in ok or MISMATCH.  Where an output's tolerance is infinite (vacuous=N:\n"
     "the error bound of a deep residual network grows without limit) a stepwise check follows: the\n"
     "reference is compared with the device at every value the program holds whole (cut) and goes on\n"
     "from the device's value there, one `check NAME stepwise (cuts=K)` line per output and a `check\n"
     "NAME cut (...)` line per cut out of tolerance; --stepwise does it always (docs/validation.md).\n"
     "--no-values simulates timing only (no arithmetic; addresses and ordering are still checked).\n"
     "--stats-json writes the statistics as JSON (keys in docs/timing.md; after a fault, up to it);\n"
     "--trace writes a Chrome trace-event timeline (Perfetto, chrome://tracing): one slice per\n"
     "instruction, or per kernel with --trace-level kernel.  Unordered overlapping accesses (races)\n"
     "and deadlocks are faults unless --no-race-check turns race detection off; timing-only runs\n"
     "(--no-values) check races only with --race-check.\n"
     "--max-insns N stops the run (exit 3) once the cores have issued N instructions (default 1e9,\n"
     "some 25 s of host time for a loop of nops); --max-cycles N once simulated time passes N cycles\n"
     "(default 1.5e9, 1 s at 1.5 GHz).  0 means no limit.  The largest shipped workload (the Llama-8B\n"
     "prefill layer) issues 4.0e6 to 4.5e6 instructions in 1.35e7 cycles.\n"
     "--refresh-phase NS starts the run NS ns (0 to below the chip's dram_trefi_ns; default 0) into the\n"
     "DRAM's refresh schedule: on hardware a launch meets the refresh at an arbitrary phase, which moves\n"
     "a short graph's cycles by a few percent (docs/dram.md, \"Refresh phase\").\n"
     "--report (a GRAPH) prints after them each kernel's cost-model estimate (spyre compile --report's\n"
     "`estimate:`) against the longest one core ran it, and their geometric mean and worst ratio.\n"
     "--work-div, --tuning FILE, --no-lx-plan, --no-lx-keep, --no-reroll, --no-fallback, --siblings and --placement act as for\n"
     "`spyre compile`.  Host fallback ops are listed after the statistics (fallback_ops=N, each op's\n"
     "bytes and cycles, which the run's cycles include).\n"
     "Exit status: 0 ok, 1 mismatch, 2 bad input or usage (or a host op the host cannot run), 3 the\n"
     "program broke a rule (including a race, a deadlock or a limit)."},
    {"generate", cmd_generate, generate_usage, generate_help},
    {"serve", cmd_serve, serve_usage, serve_help},
    {"sweep", cmd_sweep, sweep_usage, sweep_help},
    {"check", sdsc_check, sdsc_check_usage, sdsc_check_help},
};

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, name))
            return &commands[i];
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: spyre COMMAND [ARGS]   (spyre COMMAND --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %s\n", commands[i].usage);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return EXIT_OK;
    }
    const command *c = find_command(argv[1]);
    if (!c) {
        fprintf(stderr, "spyre: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return EXIT_USAGE;
    }
    int rc = c->fn(argc - 1, argv + 1);
    /* a report that did not reach its reader is not a success */
    if (fflush(stdout) || ferror(stdout)) {
        fprintf(stderr, "spyre %s: cannot write the standard output: %s\n", argv[1], strerror(errno));
        return rc ? rc : EXIT_USAGE;
    }
    return rc;
}
