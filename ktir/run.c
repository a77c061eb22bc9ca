/* ktir command line: `spyre run FILE.mlir --arg NAME=VALUE ... [--check
 * --expected FILE]`: compile, load, fill the inputs, run, print the time
 * and compare the outputs with the expected values. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ktir.h"
#include "rt.h"

#define KT_MAX_ARGS 64
/* ktir-cpu's own tolerance for its fp16 examples (tests/test_examples.py:
 * rtol = atol = 1e-2); DL16 keeps 9 fraction bits, a relative error of
 * 2^-10 per rounding, so a chain of a few ops stays well inside it. */
#define KT_RTOL 1e-2
#define KT_ATOL 1e-2

typedef struct {
    const char *file, *config, *expected;
    const char *inputs[KT_MAX_ARGS];
    int ninputs, check, ones;
    double rtol, atol;
    uint64_t seed;
    kt_arg args[KT_MAX_ARGS];
    int nargs;
} kt_opts;

static int usage(const char *msg)
{
    fprintf(stderr, "spyre run: %s\nusage: spyre run FILE.mlir [--arg NAME=VALUE]... [--input NAME=FILE]... [--ones] "
                    "[--seed N] [--config FILE] [--check --expected FILE.safetensors [--rtol X] [--atol Y]]\n", msg);
    return KT_EXIT_REFUSED;
}

static int parse_opts(int argc, char **argv, kt_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 42, o->rtol = KT_RTOL, o->atol = KT_ATOL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--check")) o->check = 1;
        else if (!strcmp(a, "--ones")) o->ones = 1;
        else if (!strcmp(a, "--arg") && v && o->nargs < KT_MAX_ARGS) {
            const char *eq = strchr(v, '=');
            char *end;
            if (!eq || eq == v) return usage("--arg needs NAME=VALUE");
            double x = strtod(eq + 1, &end);
            if (*end || end == eq + 1) return usage("--arg VALUE must be a number");
            o->args[o->nargs].name = strndup(v, (size_t)(eq - v)), o->args[o->nargs++].value = x, i++;
        } else if (!strcmp(a, "--input") && v && o->ninputs < KT_MAX_ARGS) o->inputs[o->ninputs++] = v, i++;
        else if (!strcmp(a, "--expected") && v) o->expected = v, i++;
        else if (!strcmp(a, "--rtol") && v) o->rtol = strtod(v, NULL), i++;
        else if (!strcmp(a, "--atol") && v) o->atol = strtod(v, NULL), i++;
        else if (!strcmp(a, "--config") && v) o->config = v, i++;
        else if (!strcmp(a, "--seed") && v) o->seed = strtoull(v, NULL, 0), i++;
        else if (a[0] != '-' && !o->file) o->file = a;
        else return usage("unknown or incomplete option");
    }
    if (!o->file) return usage("needs FILE.mlir");
    if (o->check && !o->expected) return usage("--check of a KTIR program needs --expected FILE");
    return 0;
}

static void print_time(const rt_run_result *res, const chip_config *cfg)
{
    const sim_stats *st = &res->stats;
    printf("cycles=%.0f time_us=%.3f (at %.3g GHz)\n", st->cycles, sim_stats_time_us(st, cfg), cfg->clock_ghz);
    printf("mac_utilization=%.4f macs=%" PRIu64 " insns=%" PRIu64 " sfp_elems=%" PRIu64 " dram_bytes_read=%" PRIu64
           " dram_bytes_written=%" PRIu64 " ring_bytes=%" PRIu64 "\n",
           sim_stats_mac_utilization(st, cfg), st->macs, st->insns, st->sfp_elems, st->dram_bytes_read,
           st->dram_bytes_written, st->ring_bytes);
    for (int u = 0; u < ISA_NUNITS; u++) {
        double busy = 0;
        for (int i = 0; i < cfg->cores && i < SIM_MAX_CORES; i++) busy += st->unit_busy[i][u];
        if (busy > 0) printf("  unit %-5s busy_cycles=%.0f (summed over cores)\n", isa_unit_names[u], busy);
    }
}

/* Compare every output with the tensor of the same name in the expected file. */
static int check_outputs(rt_program *prog, const kt_opts *o, const char *path, char *err, size_t errlen)
{
    rt_st_file *f = rt_st_read(path, err, errlen);
    if (!f) return -1;
    const isa_program *p = rt_program_isa(prog);
    int bad = 0;
    for (size_t t = 0; t < p->ntensors; t++) {
        const isa_tensor *ti = &p->tensors[t];
        if (ti->role != ISA_ROLE_OUTPUT) continue;
        const rt_st_tensor *e = rt_st_find(f, ti->name);
        int64_t n = rt_tensor_elems(ti);
        if (!e || e->numel != n) {
            snprintf(err, errlen, "%s: no tensor %s of %lld elements", path, ti->name, (long long)n);
            rt_st_free(f);
            return -1;
        }
        float *got = malloc(sizeof *got * (size_t)n), *want = malloc(sizeof *want * (size_t)n);
        if (!got || !want) abort();
        rt_read_tensor(prog, ti->name, got, err, errlen);
        rt_st_to_f32(e, want);
        int64_t within = 0, worst = 0;
        double max_abs = 0;
        for (int64_t i = 0; i < n; i++) {
            double d = fabs((double)got[i] - want[i]);
            if (d <= o->atol + o->rtol * fabs(want[i])) within++;
            else if (!(d <= max_abs)) max_abs = d, worst = i;
        }
        printf("check %s: within_tol=%lld/%lld max_abs_err_outside=%.3g%s\n", ti->name, (long long)within, (long long)n,
               max_abs, within == n ? " ok" : " MISMATCH");
        if (within != n)
            printf("  worst element %lld: got %g expected %g\n", (long long)worst, got[worst], want[worst]);
        bad += within != n;
        free(got), free(want);
    }
    rt_st_free(f);
    return bad;
}

static int is_inout(const kt_report *rep, const char *name)
{
    for (int i = 0; i < rep->ninout; i++)
        if (!strcmp(rep->inout[i], name)) return 1;
    return 0;
}

/* An output the program also loads: seeded random values (as rt_fill_inputs), or the values of FILE. */
static int fill_inout(rt_program *prog, const isa_tensor *t, const kt_opts *o, char *err, size_t errlen)
{
    int64_t n = rt_tensor_elems(t);
    float *v = malloc(sizeof *v * (size_t)n);
    if (!v) abort();
    rt_random_uniform(o->seed, t->name, v, (size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = o->ones ? 1.0f : isa_host_round(ISA_HT_F16, v[i]);
    size_t len = strlen(t->name);
    for (int i = 0; i < o->ninputs; i++) {
        if (strncmp(o->inputs[i], t->name, len) || o->inputs[i][len] != '=') continue;
        FILE *f = fopen(o->inputs[i] + len + 1, "rb");
        size_t got = f ? fread(v, sizeof *v, (size_t)n, f) : 0;
        int extra = f ? fgetc(f) != EOF : 0;
        if (f) fclose(f);
        if (got != (size_t)n || extra) {
            free(v);
            return isa_errf(err, errlen, "%s: needs exactly %lld fp32 values for %s", o->inputs[i] + len + 1,
                            (long long)n, t->name);
        }
    }
    int rc = rt_write_tensor(prog, t->name, v, ISA_HT_F32, err, errlen);
    free(v);
    return rc;
}

static int load_inputs(rt_program *prog, const kt_opts *o, const kt_report *rep, char *err, size_t errlen)
{
    const isa_program *p = rt_program_isa(prog);
    if (rt_fill_inputs(prog, o->seed, err, errlen)) return -1;
    for (size_t t = 0; t < p->ntensors; t++)
        if (is_inout(rep, p->tensors[t].name) && fill_inout(prog, &p->tensors[t], o, err, errlen)) return -1;
    for (size_t t = 0; o->ones && t < p->ntensors; t++) {
        if (p->tensors[t].role != ISA_ROLE_INPUT) continue;
        int64_t n = rt_tensor_elems(&p->tensors[t]);
        float *v = malloc(sizeof *v * (size_t)n);
        if (!v) abort();
        for (int64_t i = 0; i < n; i++) v[i] = 1.0f;
        int rc = rt_set_input(prog, p->tensors[t].name, v, err, errlen);
        free(v);
        if (rc) return -1;
    }
    for (int i = 0; i < o->ninputs; i++) {
        const char *eq = strchr(o->inputs[i], '=');
        char name[ISA_NAME_MAX];
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - o->inputs[i]) : 0, o->inputs[i]);
        if (!is_inout(rep, name) && rt_input_arg(prog, o->inputs[i], err, errlen)) return -1;
    }
    return 0;
}

static int run_program(rt_device *dev, isa_program *ip, const kt_opts *o, const kt_report *rep)
{
    char err[1024];
    const chip_config *cfg = rt_config(dev);
    rt_program *prog = rt_load_program(dev, ip, err, sizeof err);
    if (!prog) return fprintf(stderr, "%s\n", err), KT_EXIT_CHIP;
    int code = 0;
    rt_run_result res;
    if (load_inputs(prog, o, rep, err, sizeof err)) {
        fprintf(stderr, "%s\n", err), code = KT_EXIT_REFUSED;
    } else if (rt_launch(prog, &res)) {
        rt_run_format(&res, err, sizeof err);
        fprintf(stderr, "%s: %s\n", o->file, err), code = KT_EXIT_CHIP;
    } else {
        print_time(&res, cfg);
        printf("ktir_cpu_roofline_cycles=%.0f (ktir-cpu's own estimate, its docs/latency.md: no overlap, 1 cycle = 1 ns) "
               "simulated_ns=%.0f\n", rep->roofline_cycles, sim_stats_time_us(&res.stats, cfg) * 1e3);
        int bad = o->check ? check_outputs(prog, o, o->expected, err, sizeof err) : 0;
        if (bad < 0) fprintf(stderr, "%s\n", err), code = KT_EXIT_REFUSED;
        else if (bad > 0) code = 1;
    }
    rt_unload(prog);
    return code;
}

int kt_cli_run(int argc, char **argv)
{
    kt_opts o;
    int code = parse_opts(argc, argv, &o);
    if (code) return code;
    char err[1024];
    char *cfgpath = chip_config_path(o.config ? o.config : "spyre");
    rt_device *dev = rt_open(cfgpath, err, sizeof err);
    free(cfgpath);
    if (!dev) {
        fprintf(stderr, "%s\n", err);
        code = KT_EXIT_REFUSED;
    } else {
        kt_report rep = {0};
        isa_program *ip = kt_compile_file(o.file, o.args, o.nargs, rt_config(dev), err, sizeof err, &code, &rep);
        if (ip && rep.note[0]) fprintf(stderr, "%s\n", rep.note);
        if (!ip) fprintf(stderr, "%s\n", err);
        else code = run_program(dev, ip, &o, &rep);
        rt_close(dev);
    }
    for (int i = 0; i < o.nargs; i++) free((char *)o.args[i].name);
    return code;
}
