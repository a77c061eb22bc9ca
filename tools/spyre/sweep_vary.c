/* sweep_vary.c: spyre sweep --vary: the graph on every configuration of a cross product of keys. */

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#define _XOPEN_SOURCE 700 /* realpath */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sweep.h"

/* A worker's context: the graph, each row's loaded configuration, the
 * rows and the CSV they are appended to. */
typedef struct {
    const gr_graph *g;
    const chip_config *cfgs;
    sw_vrows *rs;
    FILE *csv;
} sw_vary;

static int vary_work(void *ctx, int item, void *buf, sw_chan *ch)
{
    (void)ch;
    sw_vary *c = ctx;
    sw_vrow *r = buf;
    const chip_config *cfg = &c->cfgs[item];
    *r = c->rs->v[item];
    rt_run_result *res = malloc(sizeof *res);
    char err[1024] = "";
    int no_compile = 0;
    if (!res || sw_simulate(c->g, cfg, NULL, NULL, res, &no_compile, err, sizeof err)) {
        free(res);
        if (no_compile) { /* a result: this chip cannot hold the graph */
            r->failed = 1;
            snprintf(r->message, sizeof r->message, "%.500s", err);
            for (char *m = r->message; *m; m++)
                if (*m == '\n' || *m == '\r')
                    *m = ' ';
            r->done = 1;
            return 0;
        }
        fprintf(stderr, "%sspyre sweep: %s: %s\n", isatty(2) ? "\n" : "", r->config, res ? err : "out of memory");
        return -1;
    }
    const sim_stats *st = &res->stats;
    /* whole cycles, as `spyre run` and its --stats-json print them (%.0f) */
    r->cycles = rint(st->cycles);
    r->dram_bytes = st->dram_bytes_read + st->dram_bytes_written;
    r->mac_util = sim_stats_mac_utilization(st, cfg);
    for (int k = 0; k < cfg->cores && k < SIM_MAX_CORES; k++)
        if (st->lx_peak[k] > r->lx_peak)
            r->lx_peak = st->lx_peak[k];
    r->done = 1;
    free(res);
    return 0;
}

static void vary_done(void *ctx, int item, const void *buf)
{
    sw_vary *c = ctx;
    sw_vrow *dst = &c->rs->v[item];
    memcpy(dst, buf, sizeof *dst);
    sw_vary_write_row(c->csv, dst);
    fflush(c->csv);
}

/* Parse "KEY=V1,V2,..." into a (values point into spec, which is
 * modified).  -1 with err. */
int sw_vary_parse(char *spec, sw_axis *a, char *err, size_t errlen)
{
    char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1]) {
        snprintf(err, errlen, "--vary %s: expected KEY=V1,V2,...", spec);
        return -1;
    }
    *eq = 0;
    if ((size_t)(eq - spec) >= sizeof a->key || strspn(spec, "abcdefghijklmnopqrstuvwxyz0123456789_") != (size_t)(eq - spec) ||
        !strcmp(spec, "name") || !strcmp(spec, "include")) {
        snprintf(err, errlen, "--vary %s: not a configuration key (see chip/configs/spyre.cfg)", spec);
        return -1;
    }
    snprintf(a->key, sizeof a->key, "%s", spec);
    a->n = 0;
    for (char *v = eq + 1;;) {
        char *comma = strchr(v, ',');
        if (comma)
            *comma = 0;
        if (!*v || strpbrk(v, " \t#;=\"\n")) {
            snprintf(err, errlen, "--vary %s: bad value '%s'", a->key, v);
            return -1;
        }
        if (a->n == VARY_MAX_VALUES) {
            snprintf(err, errlen, "--vary %s: more than %d values", a->key, VARY_MAX_VALUES);
            return -1;
        }
        a->vals[a->n++] = v;
        if (!comma)
            break;
        v = comma + 1;
    }
    return 0;
}

/* Load the configuration base + "KEY = V" lines through a temporary file
 * that includes base (an absolute path), so the normal loader checks every
 * value.  -1 with err. */
static int vary_load(const char *base, const sw_axis *ax, int nax, const int *pick, chip_config *cfg, char *err,
                     size_t errlen)
{
    const char *dir = getenv("TMPDIR");
    char *tmp = isa_path_join(dir && *dir ? dir : "/tmp", "spyre-vary-XXXXXX");
    int fd = mkstemp(tmp);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        isa_errf(err, errlen, "%s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(tmp);
        return -1;
    }
    fprintf(f, "include = %s\n", base);
    for (int k = 0; k < nax; k++)
        fprintf(f, "%s = %s\n", ax[k].key, ax[k].vals[pick[k]]);
    fclose(f);
    char e[1024];
    int rc = chip_config_load(tmp, cfg, e, sizeof e);
    remove(tmp);
    free(tmp);
    if (rc) {
        char desc[512] = "";
        for (int k = 0; k < nax; k++)
            isa_errf(desc + strlen(desc), sizeof desc - strlen(desc), "%s%s=%s", k ? ";" : "", ax[k].key,
                     ax[k].vals[pick[k]]);
        isa_errf(err, errlen, "configuration %s on %s: %s", desc, base, e);
    }
    return rc;
}

/* A --vary sweep under way: the command line's parts, the base
 * configuration (cfg; base: its absolute path), the cross product's total
 * configurations (cfgs) and rows, the items to run, the journal. */
typedef struct {
    const char *path, *out;
    const sw_axis *ax;
    int nax, jobs, shard_i, shard_n;
    chip_config cfg;
    char *base;
    long total;
    sw_vrows rs;
    chip_config *cfgs;
    int *todo, ntodo;
    gr_graph *g;
    char *csv;
    char gname[256];
    char err[1024];
} sw_vsweep;

/* The base configuration and its absolute path, which the temporary
 * configurations include. */
static int vary_base(sw_vsweep *v, const char *config)
{
    char *cfgpath = chip_config_path(config ? config : "spyre");
    int bad = chip_config_load(cfgpath, &v->cfg, v->err, sizeof v->err);
    v->base = bad ? NULL : realpath(cfgpath, NULL);
    if (!bad && !v->base)
        snprintf(v->err, sizeof v->err, "%s: %s", cfgpath, strerror(errno));
    free(cfgpath);
    if (!v->base) {
        fprintf(stderr, "spyre sweep: %s\n", v->err);
        return -1;
    }
    v->total = 1;
    for (int k = 0; k < v->nax; k++)
        v->total *= v->ax[k].n;
    return 0;
}

/* The graph, and the cross product, the first --vary slowest; every one
 * loaded now so a bad key or value stops the sweep before anything
 * runs. */
static int vary_configs(sw_vsweep *v)
{
    if (v->total > VARY_MAX_CONFIGS) {
        fprintf(stderr, "spyre sweep: --vary: %ld configurations, at most %d\n", v->total, VARY_MAX_CONFIGS);
        return -1;
    }
    v->g = gr_graph_load(v->path, v->err, sizeof v->err);
    if (!v->g) {
        fprintf(stderr, "spyre sweep: %s\n", v->err);
        return -1;
    }
    v->cfgs = calloc((size_t)v->total, sizeof *v->cfgs);
    v->todo = calloc((size_t)v->total, sizeof *v->todo);
    if (!v->cfgs || !v->todo) {
        fprintf(stderr, "spyre sweep: out of memory\n");
        return -1;
    }
    for (int i = 0; i < v->total; i++) {
        int pick[VARY_MAX_KEYS];
        long rest = i;
        for (int k = v->nax - 1; k >= 0; k--) {
            pick[k] = (int)(rest % v->ax[k].n);
            rest /= v->ax[k].n;
        }
        if (vary_load(v->base, v->ax, v->nax, pick, &v->cfgs[i], v->err, sizeof v->err)) {
            fprintf(stderr, "spyre sweep: %s\n", v->err);
            return -1;
        }
        sw_vrow *r = sw_vrows_push(&v->rs);
        r->index = i;
        for (int k = 0; k < v->nax; k++)
            snprintf(r->config + strlen(r->config), sizeof r->config - strlen(r->config), "%s%s=%s", k ? ";" : "",
                     v->ax[k].key, v->ax[k].vals[pick[k]]);
    }
    return 0;
}

/* Resume: configurations already in OUT/sweep.csv (a --vary sweep's) are
 * not re-run; returns how many, or -1. */
static int vary_resume(sw_vsweep *v)
{
    v->csv = isa_path_join(v->out, "sweep.csv");
    char *old = sw_read_if_present(v->csv, v->err, sizeof v->err);
    int foreign = old && strncmp(old, sw_vary_header, strlen(sw_vary_header));
    free(old);
    if (v->err[0]) {
        fprintf(stderr, "spyre sweep: %s\n", v->err);
        return -1;
    }
    if (foreign) {
        fprintf(stderr, "spyre sweep: %s is not the CSV of a --vary sweep: use another --out\n", v->csv);
        return -1;
    }
    if (sw_out_ours(v->out, v->gname, v->cfg.name, v->err, sizeof v->err)) {
        fprintf(stderr, "spyre sweep: %s\n", v->err);
        return -1;
    }
    sw_vrows prev = {0};
    if (sw_vary_csv_read(v->csv, &prev, v->err, sizeof v->err)) {
        fprintf(stderr, "spyre sweep: %s\n", v->err);
        free(prev.v);
        return -1;
    }
    int ndone = 0;
    for (int i = 0; i < prev.n; i++) {
        sw_vrow *r = sw_vrows_find(&v->rs, prev.v[i].config);
        if (r && !r->done) {
            int index = r->index;
            *r = prev.v[i];
            r->index = index;
            ndone++;
        }
    }
    free(prev.v);
    return ndone;
}

/* The configurations of this shard not done yet, through the worker pool
 * (rows appended to the journal); then the report. An exit status. */
static int vary_run(sw_vsweep *v)
{
    sw_vary c = {v->g, v->cfgs, &v->rs, fopen(v->csv, "a")};
    if (!c.csv) {
        fprintf(stderr, "spyre sweep: %s: %s\n", v->csv, strerror(errno));
        return SW_USAGE;
    }
    if (!ftell(c.csv))
        fputs(sw_vary_header, c.csv);
    double t0 = sw_now_s();
    printf("running %d configurations on %d worker%s\n", v->ntodo, v->jobs, v->jobs == 1 ? "" : "s");
    const sw_job job = {vary_work, NULL, vary_done, NULL};
    int failed = sw_run_pool(&c, v->todo, v->ntodo, v->jobs, sizeof(sw_vrow), &job, "configurations");
    fclose(c.csv);
    printf("ran %d configurations in %.2f s%s\n", v->ntodo - failed, sw_now_s() - t0,
           failed ? " (some failed to run: see above)" : "");
    sw_vrows keep = {0};
    for (int i = 0; i < v->rs.n; i++)
        if (v->rs.v[i].done)
            *sw_vrows_push(&keep) = v->rs.v[i];
    int status = sw_vary_finish(&keep, v->out, v->gname, v->cfg.name);
    free(keep.v);
    if (failed && status == SW_OK)
        status = 1;
    return status;
}

/* The configurations, OUT and its journal (resume), this shard's to do,
 * the run. An exit status. */
static int vary_sweep(sw_vsweep *v)
{
    if (vary_configs(v))
        return SW_USAGE;
    sw_graph_name(v->path, v->gname, sizeof v->gname);
    printf("sweep %s on %s: %d configurations\n", v->gname, v->cfg.name, v->rs.n);
    if (sw_make_dirs(v->out)) {
        fprintf(stderr, "spyre sweep: %s: %s\n", v->out, strerror(errno));
        return SW_USAGE;
    }
    int ndone = vary_resume(v);
    if (ndone < 0)
        return SW_USAGE;
    int inshard = 0;
    for (int i = 0; i < v->rs.n; i++) {
        if (v->rs.v[i].index % v->shard_n != v->shard_i)
            continue;
        inshard++;
        if (!v->rs.v[i].done)
            v->todo[v->ntodo++] = i;
    }
    if (ndone)
        printf("resume: %d configurations already done in %s\n", ndone, v->csv);
    if (v->shard_n > 1)
        printf("shard %d/%d: %d configurations\n", v->shard_i, v->shard_n, inshard);
    return vary_run(v);
}

/* spyre sweep GRAPH --vary ...: the graph compiled with the compiler's
 * defaults on every configuration of the cross product. */
int cmd_vary(const char *path, const char *config, sw_axis *ax, int nax, const char *out, int jobs, int shard_i,
             int shard_n)
{
    sw_vsweep v = {.path = path, .out = out, .ax = ax, .nax = nax, .jobs = jobs, .shard_i = shard_i,
                   .shard_n = shard_n};
    int status = vary_base(&v, config) ? SW_USAGE : vary_sweep(&v);
    free(v.todo);
    free(v.cfgs);
    free(v.rs.v);
    free(v.base);
    free(v.csv);
    gr_graph_free(v.g);
    return status;
}
