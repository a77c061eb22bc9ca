/* sweep_variant.c: one variant compiled and simulated in a worker, the variants numbered, autotune. */

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sweep.h"

/* The default split of each kernel, from the compile report's target
 * section ("NAME: grid GMxGN on ..." or "NAME: rows over C cores"). */
int sw_default_choice(const cc_result *r, const char *kernel, char *out, size_t len, char *tiles, size_t tlen)
{
    FILE *f = tmpfile();
    if (!f)
        return -1;
    cc_compile_report(r, f);
    rewind(f);
    char line[1024];
    size_t kl = strlen(kernel);
    int found = -1;
    int in_target = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "target ", 7))
            in_target = 1;
        if (!in_target || strncmp(line, kernel, kl) || line[kl] != ':')
            continue;
        int a, b, n = 0, gk = 1, n2 = 0;
        if (sscanf(line + kl, ": grid %dx%d%n", &a, &b, &n) == 2) {
            const char *rest = line + kl + n;
            if (rest[0] == 'x' && sscanf(rest, "x%d%n", &gk, &n2) == 1)
                rest += n2;
            int gb = 1;
            if (rest[0] == 'b') /* the batch in gb parts */
                sscanf(rest, "b%d", &gb);
            if (gk > 1)
                snprintf(out, len, "%dx%dx%d", a, b, gk);
            else if (gb > 1)
                snprintf(out, len, "%dx%db%d", a, b, gb);
            else
                snprintf(out, len, "%dx%d%s", a, b, rest[0] == 'r' ? "r" : "");
            found = 0;
        } else if (sscanf(line + kl, ": rows over %d", &a) == 1) {
            snprintf(out, len, "%d", a);
            found = 0;
        }
        if (!found) {
            /* the next line: "  tiles: ..." */
            tiles[0] = 0;
            if (fgets(line, sizeof line, f) && !strncmp(line, "  tiles: ", 9))
                snprintf(tiles, tlen, "%s", line + 9);
            break;
        }
    }
    fclose(f);
    return found;
}

/* Tiling variants of a kernel's default choice def (its report's tiles
 * line): other K chunks, half the block rows or sticks for a matmul;
 * other rows per chunk for a row kernel.  Appends "DEF/TILING" choices. */
int sw_tile_variants(int matmul, const char *def, const char *tiles, int64_t kmax, char (*out)[64], int max)
{
    int n = 0;
    if (matmul) {
        long mt, ns, mb, nbs, k, kc;
        if (sscanf(tiles, "core tile %ld rows x %ld sticks in blocks of %ld rows x %ld sticks", &mt, &ns, &mb, &nbs) != 4)
            return 0;
        const char *kp = strstr(tiles, "), k ");
        if (!kp || sscanf(kp, "), k %ld", &k) != 1)
            return 0;
        kc = k;
        const char *ch = strstr(kp, " in chunks of ");
        if (ch && ch < strchr(kp + 4, ','))
            sscanf(ch, " in chunks of %ld", &kc);
        long cand[8][3] = {{mb / 2, nbs, kc}, {mb, nbs / 2, kc}};
        int nc = 2;
        for (long c = 64; c < k && c <= kmax && nc < 7; c *= 2)
            cand[nc][0] = mb, cand[nc][1] = nbs, cand[nc++][2] = c;
        cand[nc][0] = mb, cand[nc][1] = nbs, cand[nc++][2] = k;
        for (int i = 0; i < nc && n < max; i++) {
            if (cand[i][0] < 1 || cand[i][1] < 1 || (cand[i][0] == mb && cand[i][1] == nbs && cand[i][2] == kc))
                continue;
            snprintf(out[n++], 64, "%s/%ldx%ldx%ld", def, cand[i][0], cand[i][1], cand[i][2]);
        }
    } else {
        long part, rows;
        if (sscanf(tiles, "core part %ld rows in chunks of %ld rows", &part, &rows) != 2)
            return 0;
        const long cand[3] = {rows / 4, rows / 2, rows * 2};
        for (int i = 0; i < 3 && n < max; i++)
            if (cand[i] >= 1 && cand[i] <= part && cand[i] != rows)
                snprintf(out[n++], 64, "%s/%ld", def, cand[i]);
    }
    return n;
}

cc_result *sw_compile_variant(const gr_graph *g, const chip_config *cfg, const char *kernel, const char *choice,
                              char *err, size_t errlen)
{
    char wd[128];
    const char *wds[1] = {wd};
    cc_compile_opts o = {0};
    o.target = cfg;
    o.no_fallback = 1; /* a sweep explores the device: what it cannot run is a failed variant */
    if (kernel) {
        snprintf(wd, sizeof wd, "%s=%s", kernel, choice);
        o.work_div = wds;
        o.nwork_div = 1;
    }
    return cc_compile(g, &o, err, errlen);
}

/* A device of its own for cfg, timing-only, with p (taken: freed here)
 * loaded on it; NULL with err. */
static rt_program *load_timing(isa_program *p, const chip_config *cfg, char *err, size_t errlen)
{
    rt_device *dev = rt_open_config(cfg, err, errlen);
    if (!dev) {
        isa_program_free(p);
        return NULL;
    }
    sim_options opt = {.values = 0, .detect_races = 0, .trace = SIM_TRACE_OFF};
    sim_set_options(rt_sim(dev), &opt);
    rt_program *prog = rt_load_program(dev, p, err, errlen);
    if (!prog)
        rt_close(dev);
    return prog;
}

static void unload_timing(rt_program *prog)
{
    rt_device *dev = rt_program_device(prog);
    rt_unload(prog);
    rt_close(dev);
}

/* Simulate p (taken) timing-only at the launch's refresh phase 0 (the
 * device's as load_timing opens it), into *res.  0 on success, -1 with
 * err. */
static int simulate_program(isa_program *p, const chip_config *cfg, rt_run_result *res, char *err, size_t errlen)
{
    rt_program *prog = load_timing(p, cfg, err, errlen);
    if (!prog)
        return -1;
    int rc = rt_launch(prog, res);
    if (rc)
        rt_run_format(res, err, errlen);
    unload_timing(prog);
    return rc;
}

/* Simulate p (taken) timing-only once per refresh phase (rt_launch_phases)
 * into r: the whole graph's mean cycles, rounded; the mean span of kernel
 * r->kernel ("" for none), its DMA bytes and MAC utilization; the run's LX
 * peak.  0 on success, -1 with err. */
static int measure_phases(isa_program *p, const chip_config *cfg, int phases, sw_row *r, char *err, size_t errlen)
{
    rt_run_result *res = malloc(sizeof *res);
    rt_program *prog = res ? load_timing(p, cfg, err, errlen) : NULL;
    if (!res) {
        isa_program_free(p);
        snprintf(err, errlen, "out of memory");
    }
    rt_phase_means m = {0};
    int rc = prog ? rt_launch_phases(prog, phases, res, &m) : -1;
    if (prog && rc)
        rt_run_format(res, err, errlen);
    if (!rc) {
        const sim_stats *st = &res->stats;
        const sim_kernel_stats *ks = sim_stats_kernel(st, r->kernel);
        const double peak = (double)cfg->cores * cfg->corelets * cfg->pt_rows * cfg->pt_cols * cfg->pt_lanes;
        r->cycles = round(m.cycles);
        r->kernel_cycles = ks ? m.span[ks - st->kernels] : 0;
        r->dram_bytes = ks ? ks->dram_bytes : 0;
        r->mac_util = ks && r->kernel_cycles > 0 ? (double)ks->macs / peak / r->kernel_cycles : 0;
        r->lx_peak = 0;
        for (int c = 0; c < cfg->cores && c < SIM_MAX_CORES; c++)
            r->lx_peak = st->lx_peak[c] > r->lx_peak ? st->lx_peak[c] : r->lx_peak;
        r->phases = phases;
        r->done = 1;
    }
    rt_phase_means_free(&m);
    if (prog)
        unload_timing(prog);
    free(res);
    return rc;
}

/* Compile g for cfg with the work divisions wd[0..n) ("KERNEL=SPEC"),
 * the program or NULL with err and *no_compile set when the compiler
 * refused the graph. */
static isa_program *compile_wd(const gr_graph *g, const chip_config *cfg, const char *const *wd, int n,
                               int *no_compile, char *err, size_t errlen)
{
    cc_compile_opts o = {0};
    o.target = cfg;
    o.no_fallback = 1;
    o.work_div = wd;
    o.nwork_div = n;
    cc_result *cr = cc_compile(g, &o, err, errlen);
    *no_compile = !cr;
    if (!cr)
        return NULL;
    isa_program *p = cc_result_take_program(cr);
    cc_result_free(cr);
    return p;
}

/* The default refresh phases for the graph whose default compile is base
 * (sweep_open's, on cfg; its program is taken, to run: the kernels'
 * names and report stay) (docs/sweep.md, "Refresh phases"):
 * SW_PHASES_DEFAULT, or for a graph whose default program runs shorter
 * than tREFI at phase 0, the least odd count whose runs together span
 * SW_PHASES_DEFAULT tREFI (at most SW_PHASES_MAX - 1): seven phases of a
 * 1.2 us graph sample where its last stores meet a refresh too coarsely
 * (serve_tiny's ends_prefill: its embedding on 8 cores 1,826 cycles at 7
 * phases, 1,804 at 31; on 6, 1,751 and 1,803).  -1 with err when the
 * program does not run. */
int sw_auto_phases(cc_result *base, const chip_config *cfg, char *err, size_t errlen)
{
    sw_row r = {.kernel = ""};
    isa_program *p = cc_result_take_program(base);
    if (!p) {
        snprintf(err, errlen, "the default compile has no program to run");
        return -1;
    }
    if (measure_phases(p, cfg, 1, &r, err, errlen))
        return -1;
    const double trefi = cfg->dram_trefi_ns * cfg->clock_ghz;
    if (r.cycles <= 0 || r.cycles >= trefi)
        return SW_PHASES_DEFAULT;
    const double want = ceil(SW_PHASES_DEFAULT * trefi / r.cycles);
    int n = want < SW_PHASES_MAX ? (int)want : SW_PHASES_MAX - 1;
    return n % 2 ? n : n + 1;
}

/* The graph compiled with at most one kernel forced to choice, simulated
 * timing-only at refresh phase 0 into *res.  0 on success; -1 with err,
 * and *no_compile set when the compiler refused the graph. */
int sw_simulate(const gr_graph *g, const chip_config *cfg, const char *kernel, const char *choice,
                rt_run_result *res, int *no_compile, char *err, size_t errlen)
{
    char wd[128];
    const char *wds[1] = {wd};
    if (kernel)
        snprintf(wd, sizeof wd, "%s=%s", kernel, choice);
    isa_program *p = compile_wd(g, cfg, wds, kernel ? 1 : 0, no_compile, err, errlen);
    return p ? simulate_program(p, cfg, res, err, errlen) : -1;
}

/* --autotune: the best choice of each kernel that beat its default, then
 * checked together: while the graph with all of them is slower than with
 * none, the one that gained least alone is dropped, so the tuning file never
 * makes the whole graph slower.  Rewrites the file with what is kept. */
#define JOINT_TRY 3

/* An autotune under way: the kernels, the choices kept (spec[0..n), as
 * work_div strings wd, largest gain first), the whole graph's cycles
 * with none of them and with them all, the graphs simulated. */
typedef struct {
    const gr_graph *g;
    const chip_config *cfg;
    int phases; /* refresh phases each graph's cycles are the mean over */
    const sw_rows *rs;
    sw_kernel ks[SW_TUNE_MAX];
    int nk, n, nc, evals;
    char spec[SW_TUNE_MAX][128];
    const char *wd[SW_TUNE_MAX];
    double none, all;
    double cycles; /* each simulation's (tune_sim) */
    char err[1024];
} sw_tune;

/* The graph with the first n choices, its mean cycles over the refresh
 * phases into t->cycles: 0, or -1 with t->err (t->nc set when the
 * compiler refused it). */
static int tune_sim(sw_tune *t, int n)
{
    isa_program *p = compile_wd(t->g, t->cfg, t->wd, n, &t->nc, t->err, sizeof t->err);
    sw_row r = {.kernel = ""};
    if (!p || measure_phases(p, t->cfg, t->phases, &r, t->err, sizeof t->err))
        return -1;
    t->cycles = r.cycles;
    return 0;
}

/* Each kernel's best choice that beats its default, by gain, largest
 * first. */
static void tune_gains(sw_tune *t)
{
    const sw_rows *rs = t->rs;
    double gain[SW_TUNE_MAX];
    for (int k = 0; k < t->nk; k++) {
        const sw_kernel *K = &t->ks[k];
        if (K->def < 0 || K->best == K->def || rs->v[K->best].cycles >= rs->v[K->def].cycles)
            continue;
        int j = t->n++; /* insertion by gain, largest first */
        double gk = rs->v[K->def].cycles - rs->v[K->best].cycles;
        while (j > 0 && gain[j - 1] < gk) {
            gain[j] = gain[j - 1];
            memcpy(t->spec[j], t->spec[j - 1], sizeof t->spec[j]);
            j--;
        }
        gain[j] = gk;
        snprintf(t->spec[j], sizeof t->spec[j], "%.63s=%.63s", K->name, rs->v[K->best].choice);
    }
    for (int i = 0; i < t->n; i++)
        t->wd[i] = t->spec[i];
}

/* The graph with none of the choices, then with all of them, dropping
 * the smallest gain while together they are slower (or refused). */
static int tune_together(sw_tune *t)
{
    if (tune_sim(t, 0)) {
        fprintf(stderr, "spyre sweep: autotune: %s\n", t->err);
        return -1;
    }
    t->none = t->all = t->cycles;
    while (t->n > 0) {
        if (tune_sim(t, t->n) == 0 && (t->all = t->cycles) <= t->none)
            break;
        t->n--; /* slower together (or refused): drop the smallest gain */
        t->all = t->none;
    }
    return 0;
}

/* Kernel k's choice for attempt at: the next fastest not tried yet
 * (-1: none), the last its default. */
static int tune_pick(const sw_tune *t, int k, const int *tried, int ntried, int at)
{
    if (at == JOINT_TRY)
        return t->ks[k].def;
    int pick = -1;
    for (int r = 0; r < t->rs->n; r++) {
        const sw_row *row = &t->rs->v[r];
        int seen = 0;
        for (int i = 0; i < ntried; i++)
            seen |= tried[i] == r;
        if (!seen && !strcmp(row->kernel, t->ks[k].name) && row->cycles > 0 &&
            (pick < 0 || row->cycles < t->rs->v[pick].cycles))
            pick = r;
    }
    return pick;
}

/* Kernel k's JOINT_TRY fastest choices alone (and its default), each
 * tried with the others' current choices; the whole graph's cycles
 * decide. */
static void tune_kernel(sw_tune *t, int k)
{
    const char *name = t->ks[k].name;
    int cur = -1; /* its spec, or -1: the default */
    size_t kl = strlen(name);
    for (int i = 0; i < t->n; i++)
        if (!strncmp(t->spec[i], name, kl) && t->spec[i][kl] == '=')
            cur = i;
    int tried[JOINT_TRY + 1], ntried = 0;
    for (int at = 0; at <= JOINT_TRY; at++) {
        int pick = tune_pick(t, k, tried, ntried, at);
        if (pick < 0)
            continue;
        tried[ntried++] = pick;
        const char *choice = t->rs->v[pick].choice;
        if (cur >= 0 ? !strcmp(strchr(t->spec[cur], '=') + 1, choice) : pick == t->ks[k].def)
            continue; /* what it has now */
        char save[128];
        int slot = cur >= 0 ? cur : t->n;
        if (slot == SW_TUNE_MAX)
            continue;
        memcpy(save, t->spec[slot], sizeof save);
        snprintf(t->spec[slot], sizeof t->spec[slot], "%.63s=%.63s", name, choice);
        t->wd[slot] = t->spec[slot];
        int m = cur >= 0 ? t->n : t->n + 1;
        t->evals++;
        if (tune_sim(t, m) == 0 && t->cycles < t->all) {
            t->all = t->cycles;
            cur = slot;
            t->n = m;
        } else {
            memcpy(t->spec[slot], save, sizeof save);
        }
    }
}

/* The tuning file: a line per kept choice. */
static int tune_write(sw_tune *t, const char *graph, const char *file)
{
    isa_outfile o;
    if (isa_out_open(&o, file, t->err, sizeof t->err)) {
        fprintf(stderr, "spyre sweep: %s\n", t->err);
        return SW_USAGE;
    }
    FILE *f = o.f;
    fprintf(f, "# spyre sweep --autotune: work divisions that beat the defaults, checked together\n"
               "# (docs/sweep.md): tune GRAPH CONFIG KERNEL SPEC\n");
    for (int i = 0; i < t->n; i++) {
        const char *eq = strchr(t->spec[i], '=');
        fprintf(f, "tune %s %s %.*s %s\n", graph ? graph : "-", t->cfg->name, (int)(eq - t->spec[i]), t->spec[i],
                eq + 1);
    }
    if (isa_out_close(&o, 1, t->err, sizeof t->err)) {
        fprintf(stderr, "spyre sweep: %s\n", t->err);
        return SW_USAGE;
    }
    printf("autotune: %d choice%s in %s: whole graph %.0f cycles with them, %.0f without\n", t->n,
           t->n == 1 ? "" : "s", file, t->all, t->none);
    return SW_OK;
}

/* Gains, then together, then one pass of coordinate descent over the
 * kernels, then the file. */
int sw_autotune_joint(const gr_graph *g, const chip_config *cfg, int phases, const sw_rows *rs, const char *graph,
                      const char *file)
{
    sw_tune *t = calloc(1, sizeof *t);
    if (!t) {
        fprintf(stderr, "spyre sweep: autotune: out of memory\n");
        return SW_USAGE;
    }
    t->g = g;
    t->cfg = cfg;
    t->phases = phases;
    t->rs = rs;
    t->nk = sw_kernels_of(rs, t->ks, SW_TUNE_MAX);
    tune_gains(t);
    int status = SW_USAGE;
    if (!tune_together(t)) {
        double before = t->all;
        for (int k = 0; k < t->nk; k++)
            tune_kernel(t, k);
        printf("joint search: %d graph%s simulated, the tuned graph %.0f -> %.0f cycles\n", t->evals,
               t->evals == 1 ? "" : "s", before, t->all);
        status = tune_write(t, graph, file);
    }
    free(t);
    return status;
}

/* ---- the sweep ---- */

/* A measured variant: into its row, and appended to the CSV. */
static void variant_record(sw_variants *c, const sw_cand *cd, const sw_row *m)
{
    sw_row *dst = &c->rs->v[cd->row];
    int index = dst->index, is_default = dst->is_default;
    *dst = *m;
    dst->index = index;
    dst->is_default = is_default;
    sw_csv_write_row(c->csv, dst);
    fflush(c->csv);
    c->nran++;
}

/* Number every candidate that can be: a variant's index is the count of
 * legal candidates before it.  Without shards whether to run a variant
 * does not depend on its number and was decided when it compiled. */
void sw_number_candidates(sw_variants *c)
{
    while (!c->lost && c->numbered < c->ncand && c->cands[c->numbered].state != CAND_PENDING) {
        sw_cand *cd = &c->cands[c->numbered++];
        if (cd->state == CAND_LOST)
            c->lost = 1;
        if (cd->state != CAND_LEGAL)
            continue;
        sw_row *r = sw_rows_push(c->rs);
        r->index = c->rs->n - 1;
        cd->row = r->index;
        snprintf(r->kernel, sizeof r->kernel, "%s", cd->kernel);
        snprintf(r->choice, sizeof r->choice, "%s", cd->choice);
        r->is_default = cd->is_default;
        if (cd->done_before) { /* kept, with this run's numbering */
            *r = *sw_rows_find(c->prev, cd->kernel, cd->choice);
            r->index = cd->row;
            r->is_default = cd->is_default;
            c->ndone++;
        }
        if (r->index % c->shard_n != c->shard_i && !cd->is_default) /* every shard has the defaults */
            continue;
        c->inshard++;
        cd->run = !cd->done_before;
        if (cd->have) {
            cd->have = 0;
            variant_record(c, cd, &cd->res);
        }
    }
}

/* In a worker: compile the candidate; if the compiler accepts it, ask the
 * parent whether to run it and simulate it with the program just compiled.
 * A refused candidate is sent back with done = 0. */
int sw_variant_work(void *ctx, int item, void *buf, sw_chan *ch)
{
    sw_variants *c = ctx;
    const sw_cand *cd = &c->cands[item];
    sw_row *r = buf;
    snprintf(r->kernel, sizeof r->kernel, "%s", cd->kernel);
    snprintf(r->choice, sizeof r->choice, "%s", cd->choice);
    char err[1024] = "";
    cc_result *cr = sw_compile_variant(c->g, c->cfg, cd->kernel, cd->choice, err, sizeof err);
    if (!cr)
        return 0; /* the back half does not take this split: not a variant */
    isa_program *p = cc_result_take_program(cr);
    cc_result_free(cr);
    int run = sw_ask(ch);
    if (run != 1) {
        isa_program_free(p);
        return run == 0 ? 1 : -1;
    }
    if (!measure_phases(p, c->cfg, c->phases, r, err, sizeof err))
        return 0;
    fprintf(stderr, "%sspyre sweep: %s=%s: %s\n", isatty(2) ? "\n" : "", r->kernel, r->choice, err);
    return -1;
}

/* The candidate compiled: run it?  With shards, once it is numbered. */
int sw_variant_ask(void *ctx, int item)
{
    sw_variants *c = ctx;
    sw_cand *cd = &c->cands[item];
    if (cd->state == CAND_PENDING)
        cd->state = CAND_LEGAL;
    sw_number_candidates(c);
    if (c->shard_n == 1)
        return !cd->done_before;
    if (item >= c->numbered)
        return c->lost ? 0 : -1; /* after a lost candidate nothing can be numbered */
    return cd->run;
}

void sw_variant_done(void *ctx, int item, const void *buf)
{
    sw_variants *c = ctx;
    const sw_row *r = buf;
    sw_cand *cd = &c->cands[item];
    if (!r->done) {
        cd->state = CAND_ILLEGAL;
        sw_number_candidates(c);
    } else if (cd->row >= 0) {
        variant_record(c, cd, r);
    } else { /* an earlier candidate is still compiling */
        cd->res = *r;
        cd->have = 1;
    }
}

void sw_variant_end(void *ctx, int item, int ok)
{
    sw_variants *c = ctx;
    sw_cand *cd = &c->cands[item];
    (void)ok;
    if (cd->state != CAND_PENDING)
        return;
    fprintf(stderr, "%sspyre sweep: %s=%s: the worker ended before the compile did; the variants after it are not "
                    "numbered or written\n", isatty(2) ? "\n" : "", cd->kernel, cd->choice);
    cd->state = CAND_LOST;
    sw_number_candidates(c);
}
