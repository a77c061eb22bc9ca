/* sdsc_cmd.c: torch-spyre kernel directories on the simulator: `spyre run
 * DIR` (spyre launch's tensor specs, random or --ones inputs, --check
 * against the reference executor) and `spyre check DIR` (the SDSC rules,
 * one line per violation). */
#include "sdsc_cmd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "sd.h"

enum { EXIT_OK = 0, EXIT_MISMATCH = 1, EXIT_USAGE = 2, EXIT_FAULT = 3 };

int sdsc_names_kernel_dir(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '-' && sd_is_kernel_dir(argv[i]))
            return 1;
    return 0;
}

typedef struct {
    const char *dir, *config, *stats_json;
    int check, ones, positive, nspecs, nin;
    uint64_t seed;
    sd_spec specs[64];
    sim_options opt;
} sdsc_args;

static int usage(const char *cmd, const char *what)
{
    fprintf(stderr, "spyre %s: %s\nusage: spyre %s DIR [-i SPEC]... [-o SPEC]... [--ones] [--check] [--seed N] "
                    "[--positive] [--config FILE] [--stats-json FILE] [--no-race-check]\n",
            cmd, what, cmd);
    return EXIT_USAGE;
}

/* A tensor spec option; inputs must come before outputs, as spyre launch's. */
static int spec_option(sdsc_args *a, const char *text, int input)
{
    char err[256];
    if (a->nspecs == 64)
        return usage("run", "too many tensor specs");
    if (input && a->nspecs > a->nin)
        return usage("run", "every -i comes before the -o specs");
    if (sd_spec_parse(text, &a->specs[a->nspecs], err, sizeof err))
        return usage("run", err);
    a->nspecs++;
    a->nin += input;
    return 0;
}

static int parse(const char *cmd, int argc, char **argv, sdsc_args *a)
{
    *a = (sdsc_args){.seed = 1, .opt = {.values = 1, .detect_races = 1}};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int val = i + 1 < argc, st = 0;
        if (!strcmp(o, "--check"))
            a->check = 1;
        else if (!strcmp(o, "--ones"))
            a->ones = 1;
        else if (!strcmp(o, "--positive"))
            a->positive = 1;
        else if (!strcmp(o, "--no-race-check"))
            a->opt.detect_races = 0;
        else if ((!strcmp(o, "-i") || !strcmp(o, "-o")) && val)
            st = spec_option(a, argv[++i], o[1] == 'i');
        else if (!strcmp(o, "--seed") && val) {
            int64_t v;
            if (isa_parse_int(argv[++i], &v) || v < 0)
                return usage(cmd, "--seed takes a non-negative integer");
            a->seed = (uint64_t)v;
        } else if (!strcmp(o, "--config") && val)
            a->config = argv[++i];
        else if (!strcmp(o, "--stats-json") && val)
            a->stats_json = argv[++i];
        else if (o[0] == '-' || a->dir) {
            fprintf(stderr, "spyre %s: unexpected argument '%s'\n", cmd, o);
            return EXIT_USAGE;
        } else
            a->dir = o;
        if (st)
            return st;
    }
    return a->dir ? 0 : usage(cmd, "needs a kernel directory (holding sdsc_N.json)");
}

/* The device of --config and the bundle read and checked for its chip;
 * problems are printed (exit 2). */
static int open_bundle(const char *cmd, const sdsc_args *a, rt_device **dev, sd_bundle **b)
{
    char err[1024];
    char *path = chip_config_path(a->config ? a->config : "spyre");
    *dev = rt_open(path, err, sizeof err);
    free(path);
    if (!*dev) {
        fprintf(stderr, "spyre %s: %s\n", cmd, err);
        return EXIT_USAGE;
    }
    *b = sd_load(a->dir, rt_config(*dev), err, sizeof err);
    if (!*b) {
        fprintf(stderr, "spyre %s: %s\n", cmd, err);
        return EXIT_USAGE;
    }
    fputs(sd_problems(*b), stderr);
    return sd_nproblems(*b) ? EXIT_USAGE : EXIT_OK;
}

/* Every input set to one (spyre launch's default), or seeded random in
 * [-1, 1), or with --positive |u| + 0.5 (in [0.5, 1.5): spyre-cli's inputs
 * for ops like div, whose divisor must stay away from zero). */
static int fill(rt_program *prog, const sd_bundle *b, const sdsc_args *a, char *err, size_t errlen)
{
    if (rt_fill_inputs(prog, a->seed, err, errlen))
        return -1;
    if (!a->ones && !a->positive)
        return 0;
    for (int i = 0; i < sd_ninputs(b); i++) {
        int64_t n;
        const float *u = rt_host_tensor(prog, sd_arg_name(b, i), &n);
        float *v = u ? malloc((size_t)n * sizeof *v) : NULL;
        if (!v)
            return isa_errf(err, errlen, "out of memory");
        for (int64_t j = 0; j < n; j++)
            v[j] = a->ones ? 1.0f : fabsf(u[j]) + 0.5f;
        int rc = rt_set_input(prog, sd_arg_name(b, i), v, err, errlen);
        free(v);
        if (rc)
            return -1;
    }
    return 0;
}

/* Launch, report, check: an exit status. */
static int launch(rt_device *dev, rt_program *prog, const sdsc_args *a)
{
    char line[2048], err[1024];
    rt_run_result *res = calloc(1, sizeof *res);
    if (!res)
        return EXIT_USAGE;
    int rc = rt_launch(prog, res), status = EXIT_OK;
    rt_run_format(res, line, sizeof line);
    if (rc) {
        fprintf(stderr, "spyre run: %s: %s\n", a->dir, line);
        free(res);
        return EXIT_FAULT;
    }
    printf("%s\n", line);
    print_stats(&res->stats, rt_config(dev));
    print_top_kernels(&res->stats, rt_config(dev));
    if (a->stats_json && sim_write_stats_json(&res->stats, rt_config(dev), a->stats_json, err, sizeof err)) {
        fprintf(stderr, "spyre run: %s\n", err);
        status = EXIT_USAGE;
    }
    free(res);
    if (status || !a->check)
        return status;
    rt_check_result *r = NULL;
    int n = 0, bad = rt_check(prog, &r, &n, err, sizeof err);
    if (bad < 0) {
        fprintf(stderr, "spyre run: %s\n", err);
        status = EXIT_USAGE;
    }
    for (int i = 0; bad >= 0 && i < n; i++) {
        rt_check_format(&r[i], line, sizeof line);
        printf("%s\n", line);
    }
    free(r);
    return bad > 0 ? EXIT_MISMATCH : status;
}

int sdsc_run(int argc, char **argv)
{
    sdsc_args a;
    rt_device *dev = NULL;
    sd_bundle *b = NULL;
    int status = parse("run", argc, argv, &a);
    if (!status)
        status = open_bundle("run", &a, &dev, &b);
    if (status) {
        sd_free(b);
        rt_close(dev);
        return status;
    }
    rt_set_options(dev, &a.opt);
    char err[1024];
    if (a.nspecs && a.nin != sd_ninputs(b)) {
        fprintf(stderr, "spyre run: %s: the kernels take %d inputs, %d -i specs are given\n", a.dir, sd_ninputs(b), a.nin);
        status = EXIT_USAGE;
    }
    isa_program *p = status ? NULL : sd_build(b, rt_config(dev), a.specs, a.nspecs, err, sizeof err);
    rt_program *prog = p ? rt_load_program(dev, p, err, sizeof err) : NULL;
    if (!status && (!prog || fill(prog, b, &a, err, sizeof err))) {
        fprintf(stderr, "spyre run: %s\n", err);
        status = EXIT_USAGE;
    }
    if (!status) {
        printf("sdsc: %s: %d kernels, %d inputs, %d outputs\n", a.dir, sd_nkernels(b), sd_ninputs(b), sd_noutputs(b));
        status = launch(dev, prog, &a);
    }
    if (prog)
        rt_unload(prog);
    sd_free(b);
    rt_close(dev);
    return status;
}

const char sdsc_check_usage[] = "check DIR [--config FILE]";
const char sdsc_check_help[] =
    "Check a torch-spyre kernel directory (its sdsc_N.json) against RFC 0552's rules and the chip of\n"
    "--config (default spyre): the form of each file, the tensor count cap, work slices covering every\n"
    "tensor exactly once, data stages within a slice, the stick, LX capacity and the DRAM span per core,\n"
    "and LX tensors read with the layout their producer wrote; and bundle.mlir, when there is one, against\n"
    "the JSON: the files it executes, the symbols it binds and each core's slice offset (docs/torch-spyre.md).\n"
    "Each violation is one line FILE: JSON.path: rule (bundle.mlir:LINE: rule) on the standard error, and\n"
    "the exit status is 2.";

int sdsc_check(int argc, char **argv)
{
    sdsc_args a;
    rt_device *dev = NULL;
    sd_bundle *b = NULL;
    int status = parse("check", argc, argv, &a);
    if (!status)
        status = open_bundle("check", &a, &dev, &b);
    if (!status)
        printf("%s: %d kernels, %d inputs, %d outputs: ok\n", a.dir, sd_nkernels(b), sd_ninputs(b), sd_noutputs(b));
    sd_free(b);
    rt_close(dev);
    return status;
}
