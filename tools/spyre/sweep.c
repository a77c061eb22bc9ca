/* spyre sweep: performance modelling of work-division choices.
 *
 * For each kernel of a graph (or one, --kernel), every split the back half
 * accepts (matmul grids GMxGN with GM*GN <= cores, uneven ones included;
 * row-kernel core counts) is compiled with that one kernel forced
 * (cc_compile_opts.work_div) and the others at the compiler's default,
 * then simulated timing-only.  Each candidate is compiled once, in a
 * forked worker process (with its own device), which simulates the program
 * it compiled when the compiler accepted it and the parent, which numbers
 * the accepted ones in order, says this run needs it (not done before, in
 * this shard).  Results go to OUT/sweep.csv (appended as
 * they finish, so an interrupted sweep resumes), then OUT/sweep.json and
 * an SVG per kernel.  docs/sweep.md has the formats. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#define _XOPEN_SOURCE 700 /* realpath */

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cc.h"
#include "rt.h"
#include "sim.h"
#include "sweep.h"

int sw_usage(const char *what)
{
    fprintf(stderr, "spyre sweep: %s\nusage: spyre %s\n", what, sweep_usage);
    return SW_USAGE;
}

/* The rows of sweep.csv at path appended to rs (those not there yet),
 * taken at the same refresh phases as the shards before (*phases; 0 when
 * none yet): 0, or -1 with err. */
static int merge_rows(const char *path, sw_rows *rs, int *phases, char *err, size_t errlen)
{
    sw_rows mine = {0};
    int rc = sw_csv_read(path, &mine, err, errlen), ph = sw_rows_phases(&mine);
    if (!rc && (ph < 0 || (ph && *phases && ph != *phases))) {
        snprintf(err, errlen, "%s: rows at different refresh phases (refresh_phases) than the shards before", path);
        rc = -1;
    }
    *phases = ph > 0 ? ph : *phases;
    for (int k = 0; !rc && k < mine.n; k++)
        if (!sw_rows_find(rs, mine.v[k].kernel, mine.v[k].choice))
            *sw_rows_push(rs) = mine.v[k];
    free(mine.v);
    return rc;
}

/* The rows of shard directory dir (the i-th; the first says whether the
 * shards are --vary sweeps), and the graph and config names from its
 * sweep.json (json_names). */
static int merge_dir(const char *dir, int i, int *vary, int *phases, sw_rows *rs, sw_vrows *vrs, char *graph,
                     char *config, char *err, size_t errlen)
{
    char *path = isa_path_join(dir, "sweep.csv");
    char *text = isa_text_read(path, ISA_TEXT_MAX, err, errlen);
    if (text && !i)
        *vary = !strncmp(text, sw_vary_header, strlen(sw_vary_header));
    int rc = !text || (*vary ? sw_vary_csv_read(path, vrs, err, errlen) : merge_rows(path, rs, phases, err, errlen));
    free(text);
    free(path);
    if (rc)
        return -1;
    path = isa_path_join(dir, "sweep.json");
    rc = sw_json_names(path, graph, config, "as the shards before", err, errlen);
    free(path);
    return rc;
}

static int cmd_merge(int argc, char **argv)
{
    const char *out = "sweep-out";
    const char *dirs[256];
    int ndirs = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (argv[i][0] == '-')
            return sw_usage("merge: unexpected option");
        else if (ndirs == 256) /* not dropped unseen: a shard's rows would be missing */
            return sw_usage("merge takes at most 256 directories");
        else
            dirs[ndirs++] = argv[i];
    }
    if (!ndirs)
        return sw_usage("merge needs one or more shard directories");
    sw_rows rs = {0};
    sw_vrows vrs = {0};
    char err[1024];
    char graph[256] = "", config[256] = "";
    int vary = 0, phases = 0;
    for (int i = 0; i < ndirs; i++) {
        if (merge_dir(dirs[i], i, &vary, &phases, &rs, &vrs, graph, config, err, sizeof err)) {
            free(rs.v);
            free(vrs.v);
            fprintf(stderr, "spyre sweep merge: %s\n", err);
            return SW_USAGE;
        }
    }
    if (sw_make_dirs(out)) {
        free(rs.v);
        free(vrs.v);
        fprintf(stderr, "spyre sweep merge: %s: %s\n", out, strerror(errno));
        return SW_USAGE;
    }
    printf("merged %d rows from %d directories\n", vary ? vrs.n : rs.n, ndirs);
    int rc = vary ? sw_vary_finish(&vrs, out, graph, config) : sw_finish(&rs, out, graph, config);
    free(rs.v);
    free(vrs.v);
    return rc;
}

/* `spyre sweep`'s command line. */
typedef struct {
    const char *path, *config, *only, *out, *autotune;
    long jobs;
    int phases; /* --refresh-phases; 0: not given */
    int shard_i, shard_n, nax;
    sw_axis *ax; /* [VARY_MAX_KEYS] */
} sw_args;

/* --vary KEY=V1,V2,... at spec: one more axis, each key once. */
static int sweep_vary_arg(sw_args *a, char *spec)
{
    char err[1024];
    if (a->nax == VARY_MAX_KEYS) {
        fprintf(stderr, "spyre sweep: at most %d --vary keys\n", VARY_MAX_KEYS);
        return SW_USAGE;
    }
    if (sw_vary_parse(spec, &a->ax[a->nax], err, sizeof err)) {
        fprintf(stderr, "spyre sweep: %s\n", err);
        return SW_USAGE;
    }
    for (int k = 0; k < a->nax; k++)
        if (!strcmp(a->ax[k].key, a->ax[a->nax].key)) {
            fprintf(stderr, "spyre sweep: --vary %s given twice\n", a->ax[k].key);
            return SW_USAGE;
        }
    a->nax++;
    return SW_OK;
}

/* "I/N" with 0 <= I < N, in decimal.  Not sscanf's %d: an I past INT_MAX
 * (4294967297/2) wrapped into range and ran shard 1/2. */
static int shard_parse(const char *s, int *shard_i, int *shard_n)
{
    char *end;
    errno = 0;
    long i = strtol(s, &end, 10);
    if (errno || end == s || *end != '/' || !isdigit((unsigned char)s[0]))
        return -1;
    const char *ns = end + 1;
    long n = strtol(ns, &end, 10);
    if (errno || end == ns || *end || !isdigit((unsigned char)ns[0]) || n < 1 || n > INT_MAX || i >= n)
        return -1;
    *shard_i = (int)i;
    *shard_n = (int)n;
    return 0;
}

/* The command line into a: SW_OK, or SW_USAGE after saying why. */
static int sweep_parse(int argc, char **argv, sw_args *a)
{
    static sw_axis ax[VARY_MAX_KEYS];
    *a = (sw_args){.out = "sweep-out", .shard_n = 1, .ax = ax};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--vary") && i + 1 < argc) {
            if (sweep_vary_arg(a, argv[++i]))
                return SW_USAGE;
        } else if (!strcmp(argv[i], "--kernel") && i + 1 < argc)
            a->only = argv[++i];
        else if (!strcmp(argv[i], "--config") && i + 1 < argc)
            a->config = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            a->out = argv[++i];
        else if (!strcmp(argv[i], "--autotune") && i + 1 < argc)
            a->autotune = argv[++i];
        else if (!strcmp(argv[i], "--jobs") && i + 1 < argc) {
            char *end;
            a->jobs = strtol(argv[++i], &end, 10);
            if (*end || a->jobs < 1 || a->jobs > 1024)
                return sw_usage("--jobs takes a count from 1 to 1024");
        } else if (!strcmp(argv[i], "--refresh-phases") && i + 1 < argc) {
            char *end;
            long n = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end || n < 1 || n > SW_PHASES_MAX)
                return sw_usage("--refresh-phases takes a count from 1 to 64");
            a->phases = (int)n;
        } else if (!strcmp(argv[i], "--shard") && i + 1 < argc) {
            if (shard_parse(argv[++i], &a->shard_i, &a->shard_n)) {
                fprintf(stderr, "spyre sweep: --shard %s: expected I/N with 0 <= I < N\n", argv[i]);
                return SW_USAGE;
            }
        } else if (argv[i][0] == '-' || a->path)
            return sw_usage("unexpected argument");
        else
            a->path = argv[i];
    }
    if (!a->path)
        return sw_usage("needs GRAPH (a graph file or an export directory)");
    if (!a->jobs) {
        a->jobs = sysconf(_SC_NPROCESSORS_ONLN);
        if (a->jobs < 1)
            a->jobs = 1;
    }
    if (a->nax && (a->only || a->autotune || a->phases))
        return sw_usage("--vary takes neither --kernel, --autotune nor --refresh-phases");
    if (a->autotune && a->shard_n > 1) /* a shard's rows are a share of the variants */
        return sw_usage("--autotune takes every variant, not a shard's: merge the shards, then "
                        "`spyre sweep GRAPH --out MERGED --autotune FILE` (it resumes them all)");
    return SW_OK;
}

/* A sweep of work divisions under way: the chip, the graph, its default
 * compile (base), the candidates, the variants (rs) and an earlier run's
 * rows (prev), the journal OUT/sweep.csv. */
typedef struct {
    sw_args *a;
    chip_config cfg;
    gr_graph *g;
    cc_result *base;
    sw_rows rs, prev;
    sw_cand *cands;
    int ncand, cand_cap, nk;
    int *todo;
    char *csv;
    char gname[256];
    char err[1024];
} sw_sweep;

/* The extra choices of a kernel beyond every split, into extra[]: for a
 * matmul also B broadcast over the ring on every core, the grids over the
 * ring (GMxGNr, GN up to 8) and the default grid with K split; then the
 * default's other tilings, and the default without tensors kept in LX
 * across kernels. */
static int kernel_extras(const chip_config *cfg, int matmul, const char *def, const char *tiles, char (*extra)[64])
{
    int nextra = 0;
    int dm, dn, dk = 1, dl = 0;
    if (matmul) {
        snprintf(extra[nextra++], 64, "%dx1r", cfg->cores);
        for (int gn = 2; gn <= 8; gn++)
            if (cfg->cores % gn == 0 && cfg->cores / gn >= 2)
                snprintf(extra[nextra++], 64, "%dx%dr", cfg->cores / gn, gn);
        /* split-K: the default grid with K in 2, 4, ... parts */
        if (sscanf(def, "%dx%d%n", &dm, &dn, &dl) == 2 && def[dl] == 'x')
            sscanf(def + dl + 1, "%d", &dk);
        for (int gk = 2; dl && dm * dn * gk <= cfg->cores && nextra < 6; gk *= 2)
            if (gk != dk)
                snprintf(extra[nextra++], 64, "%dx%dx%d", dm, dn, gk);
        if (dk > 1) /* the default itself, with its K split */
            snprintf(extra[nextra++], 64, "%s", def);
    }
    nextra += sw_tile_variants(matmul, def, tiles, 4096, extra + nextra, 10);
    snprintf(extra[nextra++], 64, "%s+nokeep", def);
    return nextra;
}

/* One more candidate: kernel name with choice (def: the default's). */
static void add_candidate(sw_sweep *s, const char *name, const char *choice, const char *def)
{
    s->cands = sw_grow_rows(s->cands, s->ncand, &s->cand_cap, sizeof *s->cands);
    sw_cand *cd = &s->cands[s->ncand++];
    memset(cd, 0, sizeof *cd);
    snprintf(cd->kernel, sizeof cd->kernel, "%s", name);
    snprintf(cd->choice, sizeof cd->choice, "%s", choice);
    cd->is_default = !strcmp(cd->choice, def);
    cd->state = CAND_PENDING;
    cd->row = -1;
}

/* The candidates of kernel k: every split (matmul grids GM then GN
 * ascending; row kernels' core counts), then its extra choices. */
static int kernel_candidates(sw_sweep *s, int k)
{
    const char *name = cc_result_kernel_name(s->base, k);
    const int cores = s->cfg.cores;
    char def[16], tiles[1024];
    if (sw_default_choice(s->base, name, def, sizeof def, tiles, sizeof tiles)) {
        fprintf(stderr, "spyre sweep: kernel %s: no split in the compile report\n", name);
        return -1;
    }
    int matmul = cc_result_kernel_kind(s->base, k) == CC_KERNEL_MATMUL;
    char extra[26][64];
    int nextra = kernel_extras(&s->cfg, matmul, def, tiles, extra);
    int nsplit = matmul ? 0 : cores;
    for (int a = 1; matmul && a <= cores; a++)
        nsplit += cores / a;
    for (int i = 0, a = 1, b = 1; i < nsplit + nextra; i++) {
        char choice[64];
        if (i >= nsplit) {
            snprintf(choice, sizeof choice, "%s", extra[i - nsplit]);
        } else {
            if (matmul)
                snprintf(choice, sizeof choice, "%dx%d", a, b);
            else
                snprintf(choice, sizeof choice, "%d", a);
            if (!matmul || ++b > cores / a) {
                a++;
                b = 1;
            }
        }
        add_candidate(s, name, choice, def);
    }
    /* a default the splits above do not spell (a batch split, 1x1b4) is a candidate too */
    int has_def = 0;
    for (int i = s->ncand - (nsplit + nextra); i < s->ncand; i++)
        has_def |= s->cands[i].is_default;
    if (!has_def)
        add_candidate(s, name, def, def);
    return 0;
}

/* The chip, the graph and its default compile; the kernels to sweep (the
 * --kernel one must exist). SW_OK, SW_USAGE, or -1: a graph of no kernel
 * (said so; nothing to do). */
static int sweep_open(sw_sweep *s)
{
    const sw_args *a = s->a;
    char *cfgpath = chip_config_path(a->config ? a->config : "spyre");
    int bad = chip_config_load(cfgpath, &s->cfg, s->err, sizeof s->err);
    free(cfgpath);
    if (!bad)
        s->g = gr_graph_load(a->path, s->err, sizeof s->err);
    if (!bad && s->g)
        s->base = sw_compile_variant(s->g, &s->cfg, NULL, NULL, s->err, sizeof s->err);
    if (!s->base) {
        fprintf(stderr, "spyre sweep: %s\n", s->err);
        return SW_USAGE;
    }
    int nk = s->nk = cc_result_nkernels(s->base), found = !a->only;
    if (nk == 0) { /* every value is empty (a zero-size dimension): no work, no choice */
        printf("sweep %s: the graph compiles to no kernel: nothing to sweep\n", a->path);
        return -1;
    }
    for (int k = 0; k < nk; k++)
        found |= a->only && !strcmp(a->only, cc_result_kernel_name(s->base, k));
    if (!found) {
        fprintf(stderr, "spyre sweep: --kernel %s: no such kernel (the kernels are", a->only);
        for (int k = 0; k < nk; k++)
            fprintf(stderr, "%s %s", k ? "," : "", cc_result_kernel_name(s->base, k));
        fprintf(stderr, ")\n");
        return SW_USAGE;
    }
    return SW_OK;
}

/* OUT and its journal OUT/sweep.csv: rows already in it are not re-run
 * (resume); a new journal starts with the header, rows are appended as
 * they finish. */
static int sweep_journal(sw_sweep *s)
{
    const char *out = s->a->out;
    if (sw_make_dirs(out)) {
        fprintf(stderr, "spyre sweep: %s: %s\n", out, strerror(errno));
        return -1;
    }
    s->csv = isa_path_join(out, "sweep.csv");
    if (sw_csv_read(s->csv, &s->prev, s->err, sizeof s->err)) {
        fprintf(stderr, "spyre sweep: %s\n", s->err);
        return -1;
    }
    if (sw_out_ours(out, s->gname, s->cfg.name, s->err, sizeof s->err)) {
        fprintf(stderr, "spyre sweep: %s\n", s->err);
        return -1;
    }
    int had = sw_rows_phases(&s->prev);
    if (had && had != s->a->phases) { /* means over other phases do not compare with this run's */
        fprintf(stderr, "spyre sweep: %s holds rows at %s refresh phases, this run takes %d: another --out, or "
                        "--refresh-phases as they were\n", s->csv, had < 0 ? "mixed" : "other", s->a->phases);
        return -1;
    }
    FILE *f = access(s->csv, F_OK) ? fopen(s->csv, "w") : NULL;
    if (f && (fputs(sw_csv_header, f) < 0) + fclose(f)) {
        fprintf(stderr, "spyre sweep: %s: %s\n", s->csv, strerror(errno));
        return -1;
    }
    s->todo = malloc((size_t)(s->ncand ? s->ncand : 1) * sizeof *s->todo);
    if (!s->todo) {
        fprintf(stderr, "spyre sweep: out of memory\n");
        return -1;
    }
    for (int i = 0; i < s->ncand; i++) {
        s->todo[i] = i;
        s->cands[i].done_before = sw_rows_find(&s->prev, s->cands[i].kernel, s->cands[i].choice) != NULL;
    }
    return 0;
}

/* Every candidate through the worker pool; the counts said. -1 when the
 * journal cannot be appended to, else whether some failed. */
static int sweep_variants(sw_sweep *s)
{
    const sw_args *a = s->a;
    sw_variants vc = {s->g, &s->cfg, s->cands, s->ncand, 0, 0, &s->rs, &s->prev, a->shard_i, a->shard_n, 0, 0, 0,
                      fopen(s->csv, "a"), a->phases};
    if (!vc.csv) {
        fprintf(stderr, "spyre sweep: %s: %s\n", s->csv, strerror(errno));
        return -1;
    }
    double t0 = sw_now_s();
    const sw_job job = {sw_variant_work, sw_variant_ask, sw_variant_done, sw_variant_end};
    int failed = sw_run_pool(&vc, s->todo, s->ncand, (int)a->jobs, sizeof(sw_row), &job, "candidates");
    fclose(vc.csv);
    sw_number_candidates(&vc);
    printf("%d legal variants of %d candidates%s\n", s->rs.n, s->ncand,
           vc.lost ? " before the one lost (see above)" : "");
    if (vc.ndone)
        printf("resume: %d variants already done in %s\n", vc.ndone, s->csv);
    if (a->shard_n > 1)
        printf("shard %d/%d: %d variants\n", a->shard_i, a->shard_n, vc.inshard);
    printf("ran %d variants in %.2f s (with the compile of every candidate)%s\n", vc.nran, sw_now_s() - t0,
           failed ? " (some failed: see above)" : "");
    return failed ? 1 : 0;
}

/* The results: the tuning file first (finish's last line is
 * default_vs_best=), then sweep.json and the SVGs; only the measured rows
 * of this shard (and earlier runs) are written. */
static int sweep_report(sw_sweep *s)
{
    sw_rows keep = {0};
    for (int i = 0; i < s->rs.n; i++)
        if (s->rs.v[i].done)
            *sw_rows_push(&keep) = s->rs.v[i];
    int status =
        s->a->autotune ? sw_autotune_joint(s->g, &s->cfg, s->a->phases, &keep, s->gname, s->a->autotune) : SW_OK;
    if (status == SW_OK)
        status = sw_finish(&keep, s->a->out, s->gname, s->cfg.name);
    free(keep.v);
    return status;
}

/* The candidates, in a fixed order: kernels in program order, GM then GN
 * ascending.  Workers compile each once, and simulate the ones the
 * compiler accepts (the variants) that this run needs, with the program
 * they compiled. */
static int sweep_run(sw_sweep *s)
{
    const sw_args *a = s->a;
    int status = sweep_open(s);
    if (status)
        return status < 0 ? SW_OK : status;
    for (int k = 0; k < s->nk; k++)
        if (!(a->only && strcmp(a->only, cc_result_kernel_name(s->base, k))) && kernel_candidates(s, k))
            return SW_USAGE;
    if (!a->phases && (s->a->phases = sw_auto_phases(s->base, &s->cfg, s->err, sizeof s->err)) < 1) {
        fprintf(stderr, "spyre sweep: %s\n", s->err);
        return SW_USAGE;
    }
    sw_graph_name(a->path, s->gname, sizeof s->gname);
    printf("sweep %s on %s: %d kernel%s, %d candidates, compiled on %ld worker%s, each variant at %d refresh "
           "phase%s\n", s->gname, s->cfg.name, a->only ? 1 : s->nk, a->only || s->nk == 1 ? "" : "s", s->ncand,
           a->jobs, a->jobs == 1 ? "" : "s", a->phases, a->phases == 1 ? "" : "s");
    if (sweep_journal(s))
        return SW_USAGE;
    int failed = sweep_variants(s);
    if (failed < 0)
        return SW_USAGE;
    status = sweep_report(s);
    if (failed && status == SW_OK)
        status = 1;
    return status;
}

int cmd_sweep(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: spyre %s\n\n%s\n", sweep_usage, sweep_help);
            return SW_OK;
        }
    if (argc > 1 && !strcmp(argv[1], "merge"))
        return cmd_merge(argc, argv);
    sw_args a;
    int status = sweep_parse(argc, argv, &a);
    if (status)
        return status;
    if (a.nax)
        return cmd_vary(a.path, a.config, a.ax, a.nax, a.out, (int)a.jobs, a.shard_i, a.shard_n);
    sw_sweep s = {0};
    s.a = &a;
    status = sweep_run(&s);
    free(s.todo);
    free(s.cands);
    free(s.prev.v);
    free(s.rs.v);
    free(s.csv);
    cc_result_free(s.base);
    gr_graph_free(s.g);
    return status;
}

/* ---- usage ---- */

const char sweep_usage[] =
    "sweep GRAPH [--kernel NAME] [--config FILE] [--out DIR] [--jobs N] [--shard I/N] [--autotune FILE]\n"
    "               [--refresh-phases N]\n"
    "             | sweep GRAPH --vary KEY=V1,V2,... [--vary KEY=...] [--config FILE] [--out DIR] [--jobs N]\n"
    "               [--shard I/N]\n"
    "             | sweep merge DIR... [--out DIR]";
const char sweep_help[] =
    "Model the work-division choices of a graph's kernels (docs/sweep.md).  For each kernel (or only\n"
    "--kernel NAME) every split the compiler accepts (a matmul's grids GMxGN with GM*GN <= cores, uneven\n"
    "ones included; a row kernel's core counts) is compiled with that kernel forced and the others at\n"
    "the compiler's default, and simulated timing-only on the chip of --config (default spyre), in\n"
    "--jobs worker processes (default: every host core), once per refresh phase: N phases evenly spread\n"
    "over the DRAM's refresh interval (--refresh-phases N, 1 to 64; 1 is phase 0 alone; default 7, or for a\n"
    "graph shorter than the interval as many more, odd, as cover it 7 times over, at most 63), since\n"
    "a launch on hardware meets the refresh at any phase; cycles are the mean, rounded.  OUT (--out,\n"
    "default sweep-out) gets sweep.csv and sweep.json (one row per variant: kernel, choice, cycles,\n"
    "kernel_cycles, dram_bytes, mac_utilization, lx_peak, is_default, is_best, refresh_phases; per kernel\n"
    "the default, the best and their ratio) and KERNEL.svg per kernel.  Variants already in\n"
    "OUT/sweep.csv are not re-run (resume; at the same --refresh-phases).\n"
    "--shard I/N runs only the variants whose index % N == I; `sweep merge DIR... --out DIR` combines\n"
    "shard directories.  --autotune FILE writes the best choice per kernel as a tuning file for\n"
    "`spyre compile/run --tuning FILE`.  The last line is default_vs_best=RATIO: the default\n"
    "whole-graph cycles over the best among all variants.\n"
    "--vary KEY=V1,V2,... (repeatable) instead runs the graph, compiled with the compiler's defaults, on\n"
    "every configuration of the cross product of the values (keys of chip/configs/spyre.cfg, set on top\n"
    "of --config): sweep.csv/json rows per configuration (config, status, cycles, dram_bytes,\n"
    "mac_utilization, lx_peak, is_best, message; a configuration the graph does not compile on is\n"
    "status failed with the compiler's message), configs.svg, and the last line\n"
    "best_config=KEY=V;... cycles=N.  Resume and shards work the same way.\n"
    "Exit status: 0 ok, 1 some variants failed to run, 2 bad input or usage.";
