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

#include <errno.h>
#include <inttypes.h>
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

enum { SW_OK = 0, SW_USAGE = 2 };

/* One variant: a kernel with one forced split, and what the run measured. */
typedef struct {
    int index;            /* position in the enumeration (shards take index % N == I) */
    char kernel[64];
    char choice[64];      /* a work_div SPEC: "GMxGN", "CORES", with tiling or +nokeep */
    double cycles;        /* whole graph */
    double kernel_cycles; /* the kernel's span: end - start */
    uint64_t dram_bytes;  /* the kernel's DMA bytes */
    double mac_util;      /* the kernel's MACs / (span x the chip's peak MACs per cycle) */
    uint64_t lx_peak;     /* highest LX byte touched + 1, busiest core, whole run */
    int is_default, is_best;
    int done;             /* measured (now or in an earlier run) */
} sw_row;

typedef struct {
    sw_row *v;
    int n, cap;
} sw_rows;

/* Room for one more element of `elem` bytes in the array v of n elements
 * and capacity *cap (both row tables grow this way). */
static void *grow_rows(void *v, int n, int *cap, size_t elem)
{
    if (n < *cap)
        return v;
    int ncap = *cap ? 2 * *cap : 64;
    void *nv = realloc(v, (size_t)ncap * elem);
    if (!nv) {
        fprintf(stderr, "spyre sweep: out of memory\n");
        exit(SW_USAGE);
    }
    *cap = ncap;
    return nv;
}

static sw_row *rows_push(sw_rows *rs)
{
    rs->v = grow_rows(rs->v, rs->n, &rs->cap, sizeof *rs->v);
    sw_row *r = &rs->v[rs->n++];
    memset(r, 0, sizeof *r);
    return r;
}

static sw_row *rows_find(const sw_rows *rs, const char *kernel, const char *choice)
{
    for (int i = 0; i < rs->n; i++)
        if (!strcmp(rs->v[i].kernel, kernel) && !strcmp(rs->v[i].choice, choice))
            return &rs->v[i];
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* mkdir -p */
static int make_dirs(const char *path)
{
    char *buf = isa_path_join(NULL, path);
    int rc = 0;
    for (char *p = buf + 1; !rc; p++) {
        if (*p == '/' || !*p) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0777) && errno != EEXIST)
                rc = -1;
            *p = c;
            if (!c)
                break;
        }
    }
    int e = errno;
    free(buf);
    errno = e;
    return rc;
}

/* The last path component of a graph path, without a trailing slash or,
 * for a graph file, the directory holding it ("traces/mlp/graph.txt" and
 * "traces/mlp/" are both "mlp"). */
static void graph_name(const char *path, char *out, size_t len)
{
    char *buf = isa_path_join(NULL, path);
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = 0;
    if (n > 4 && !strcmp(buf + n - 4, ".txt")) {
        char *slash = strrchr(buf, '/');
        if (slash)
            *slash = 0;
        else
            strcpy(buf, ".");
    }
    const char *base = strrchr(buf, '/');
    snprintf(out, len, "%s", base ? base + 1 : buf);
    free(buf);
}

/* The text of a sweep file that may not exist yet: NULL with err[0] == 0
 * when there is none, NULL with err when it cannot be read (isa_text_read:
 * not a regular file, a NUL byte, ...). */
static char *read_if_present(const char *path, char *err, size_t errlen)
{
    err[0] = 0;
    return access(path, F_OK) ? NULL : isa_text_read(path, ISA_TEXT_MAX, err, errlen);
}

/* Is line (without its '\n') the header line hdr (with it)? */
static int is_header(const char *line, const char *hdr)
{
    size_t n = strlen(hdr) - 1;
    return !strncmp(line, hdr, n) && !line[n];
}

/* ---- CSV ---- */

static const char csv_header[] =
    "index,kernel,choice,cycles,kernel_cycles,dram_bytes,mac_utilization,lx_peak,is_default,is_best\n";

static void csv_write_row(FILE *f, const sw_row *r)
{
    fprintf(f, "%d,%s,%s,%.12g,%.12g,%" PRIu64 ",%.6f,%" PRIu64 ",%d,%d\n", r->index, r->kernel, r->choice, r->cycles,
            r->kernel_cycles, r->dram_bytes, r->mac_util, r->lx_peak, r->is_default, r->is_best);
}

/* Append the rows of a sweep.csv to rs (skipping ones already there);
 * 0 when the file does not exist, -1 with err on a malformed file. */
static int csv_read(const char *path, sw_rows *rs, char *err, size_t errlen)
{
    char *text = read_if_present(path, err, errlen), *cur = text, *line;
    if (!text)
        return err[0] ? -1 : 0;
    int lineno = 0;
    while ((line = isa_text_line(&cur))) {
        lineno++;
        if (lineno == 1 && !strncmp(line, "index,", 6))
            continue;
        if (!line[0])
            continue;
        sw_row r = {0};
        unsigned long long dram, lx;
        /* kernel names and choices have no commas */
        if (sscanf(line, "%d,%63[^,],%63[^,],%lf,%lf,%llu,%lf,%llu,%d,%d", &r.index, r.kernel, r.choice, &r.cycles,
                   &r.kernel_cycles, &dram, &r.mac_util, &lx, &r.is_default, &r.is_best) != 10) {
            snprintf(err, errlen, "%s:%d: not a sweep row: %.60s", path, lineno, line);
            free(text);
            return -1;
        }
        r.dram_bytes = dram;
        r.lx_peak = lx;
        r.done = 1;
        if (!rows_find(rs, r.kernel, r.choice))
            *rows_push(rs) = r;
    }
    free(text);
    return 0;
}

static int cmp_index(const void *a, const void *b)
{
    const sw_row *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* ---- results: best per kernel, csv, json, svg ---- */

typedef struct {
    char name[64];
    int def, best; /* row indices into rs, -1 when none */
    int n;
} sw_kernel;

static int kernels_of(const sw_rows *rs, sw_kernel *ks, int max)
{
    int nk = 0;
    for (int i = 0; i < rs->n; i++) {
        const sw_row *r = &rs->v[i];
        int k = 0;
        while (k < nk && strcmp(ks[k].name, r->kernel))
            k++;
        if (k == nk) {
            if (nk == max)
                continue;
            snprintf(ks[nk].name, sizeof ks[nk].name, "%s", r->kernel);
            ks[nk].def = ks[nk].best = -1;
            ks[nk].n = 0;
            nk++;
        }
        ks[k].n++;
        if (r->is_default && ks[k].def < 0)
            ks[k].def = i;
        /* best: fewest whole-graph cycles, then fewest kernel cycles */
        int b = ks[k].best;
        if (b < 0 || r->cycles < rs->v[b].cycles ||
            (r->cycles == rs->v[b].cycles && r->kernel_cycles < rs->v[b].kernel_cycles))
            ks[k].best = i;
    }
    return nk;
}

static void svg_text(FILE *f, double x, double y, const char *anchor, int size, const char *s)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\">%s</text>\n", x, y, anchor, size, s);
}

/* Bars of the kernel's cycles per variant (default blue, best green) and a
 * scatter of the kernel's cycles against its DRAM bytes. */
static void write_svg(FILE *f, const sw_rows *rs, const sw_kernel *k)
{
    const double W = 1000, H = 420, top = 50, bot = 330, bl = 60, br = 560, sl = 640, sr = 960;
    double ymax = 0, xmax = 0;
    for (int i = 0; i < rs->n; i++)
        if (!strcmp(rs->v[i].kernel, k->name)) {
            if (rs->v[i].kernel_cycles > ymax)
                ymax = rs->v[i].kernel_cycles;
            if ((double)rs->v[i].dram_bytes > xmax)
                xmax = (double)rs->v[i].dram_bytes;
        }
    if (ymax <= 0)
        ymax = 1;
    if (xmax <= 0)
        xmax = 1;
    char t[512];
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\">\n",
            W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    snprintf(t, sizeof t, "%.63s: kernel cycles per work division (blue: default %.23s, green: best %.23s)", k->name,
             k->def >= 0 ? rs->v[k->def].choice : "?", k->best >= 0 ? rs->v[k->best].choice : "?");
    svg_text(f, 20, 25, "start", 14, t);
    /* axes */
    fprintf(f, "<path d=\"M%.0f %.0f V%.0f H%.0f\" stroke=\"black\" fill=\"none\"/>\n", bl, top, bot, br);
    fprintf(f, "<path d=\"M%.0f %.0f V%.0f H%.0f\" stroke=\"black\" fill=\"none\"/>\n", sl, top, bot, sr);
    snprintf(t, sizeof t, "%.0f", ymax);
    svg_text(f, bl - 4, top + 4, "end", 10, t);
    svg_text(f, sl - 4, top + 4, "end", 10, t);
    svg_text(f, bl - 4, bot, "end", 10, "0");
    svg_text(f, sl - 4, bot, "end", 10, "0");
    snprintf(t, sizeof t, "%.0f", xmax);
    svg_text(f, sr, bot + 14, "end", 10, t);
    svg_text(f, (sl + sr) / 2, bot + 30, "middle", 11, "kernel DRAM bytes");
    svg_text(f, (bl + br) / 2, H - 10, "middle", 11, "variant (work division)");
    fprintf(f, "<text x=\"14\" y=\"%.0f\" font-size=\"11\" transform=\"rotate(-90 14 %.0f)\" "
               "text-anchor=\"middle\">kernel cycles</text>\n", (top + bot) / 2, (top + bot) / 2);
    double bw = (br - bl) / (k->n ? k->n : 1);
    int j = 0;
    for (int i = 0; i < rs->n; i++) {
        const sw_row *r = &rs->v[i];
        if (strcmp(r->kernel, k->name))
            continue;
        const char *col = i == k->best ? "#2a2" : i == k->def ? "#36c" : "#999";
        double h = (bot - top) * r->kernel_cycles / ymax, x = bl + j * bw;
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>%s: %.0f cycles"
                   "</title></rect>\n", x + 0.1 * bw, bot - h, 0.8 * bw, h, col, r->choice, r->kernel_cycles);
        if (k->n <= 48)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"end\" "
                       "transform=\"rotate(-60 %.1f %.1f)\">%s</text>\n", x + bw / 2, bot + 10, x + bw / 2, bot + 10,
                    r->choice);
        double px = sl + (sr - sl) * (double)r->dram_bytes / xmax, py = bot - h;
        fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%d\" fill=\"%s\"><title>%s: %.0f cycles, %" PRIu64
                   " bytes</title></circle>\n", px, py, i == k->best || i == k->def ? 5 : 3, col, r->choice,
                r->kernel_cycles, r->dram_bytes);
        j++;
    }
    fprintf(f, "</svg>\n");
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputc('"', f);
}

/* Start writing DIR/NAME (isa_out_open: a temporary renamed into place by
 * out_close); NULL (message printed) on failure. */
static FILE *out_open(isa_outfile *o, const char *dir, const char *name)
{
    char err[1024], *path = isa_path_join(dir, name);
    int rc = isa_out_open(o, path, err, sizeof err);
    if (rc)
        fprintf(stderr, "spyre sweep: %s\n", err);
    free(path);
    return rc ? NULL : o->f;
}

/* Finish a file of out_open: 0, or -1 (message printed). */
static int out_close(isa_outfile *o)
{
    char err[1024];
    if (!isa_out_close(o, 1, err, sizeof err))
        return 0;
    fprintf(stderr, "spyre sweep: %s\n", err);
    return -1;
}

/* DIR/sweep.json, opened with its first keys (graph, config) written. */
static FILE *json_open(isa_outfile *o, const char *dir, const char *graph, const char *config)
{
    FILE *f = out_open(o, dir, "sweep.json");
    if (!f)
        return NULL;
    fprintf(f, "{\n  \"graph\": ");
    json_str(f, graph ? graph : "");
    fprintf(f, ",\n  \"config\": ");
    json_str(f, config ? config : "");
    return f;
}

/* Mark defaults and bests, rewrite sweep.csv, write sweep.json and the
 * SVGs, print the per-kernel summary and the last line.  Returns the exit
 * status. */
static int finish(sw_rows *rs, const char *out, const char *graph, const char *config)
{
    qsort(rs->v, (size_t)rs->n, sizeof *rs->v, cmp_index);
    static sw_kernel ks[SIM_MAX_KERNELS];
    for (int i = 0; i < rs->n; i++)
        rs->v[i].is_best = 0;
    int nk = kernels_of(rs, ks, SIM_MAX_KERNELS);
    for (int k = 0; k < nk; k++)
        rs->v[ks[k].best].is_best = 1;
    double def = -1, best = -1;
    for (int i = 0; i < rs->n; i++) {
        if (rs->v[i].is_default && def < 0)
            def = rs->v[i].cycles;
        if (best < 0 || rs->v[i].cycles < best)
            best = rs->v[i].cycles;
    }
    isa_outfile o;
    FILE *f = out_open(&o, out, "sweep.csv");
    if (!f)
        return SW_USAGE;
    fputs(csv_header, f);
    for (int i = 0; i < rs->n; i++)
        csv_write_row(f, &rs->v[i]);
    if (out_close(&o))
        return SW_USAGE;

    f = json_open(&o, out, graph, config);
    if (!f)
        return SW_USAGE;
    fprintf(f, ",\n  \"variants\": %d,\n  \"default_cycles\": %.12g,\n  \"best_cycles\": %.12g,\n"
               "  \"default_vs_best\": %.6f,\n  \"kernels\": [", rs->n, def, best, def > 0 && best > 0 ? def / best : 0.0);
    for (int k = 0; k < nk; k++) {
        const sw_row *d = ks[k].def >= 0 ? &rs->v[ks[k].def] : NULL, *b = &rs->v[ks[k].best];
        fprintf(f, "%s\n    {\"kernel\": ", k ? "," : "");
        json_str(f, ks[k].name);
        fprintf(f, ", \"variants\": %d, \"default\": ", ks[k].n);
        json_str(f, d ? d->choice : "");
        fprintf(f, ", \"best\": ");
        json_str(f, b->choice);
        fprintf(f, ", \"default_cycles\": %.12g, \"best_cycles\": %.12g, \"default_vs_best\": %.6f, "
                   "\"default_kernel_cycles\": %.12g, \"best_kernel_cycles\": %.12g}", d ? d->cycles : -1, b->cycles,
                d && b->cycles > 0 ? d->cycles / b->cycles : 0.0, d ? d->kernel_cycles : -1, b->kernel_cycles);
    }
    fprintf(f, "\n  ],\n  \"rows\": [");
    for (int i = 0; i < rs->n; i++) {
        const sw_row *r = &rs->v[i];
        fprintf(f, "%s\n    {\"index\": %d, \"kernel\": ", i ? "," : "", r->index);
        json_str(f, r->kernel);
        fprintf(f, ", \"choice\": ");
        json_str(f, r->choice);
        fprintf(f, ", \"cycles\": %.12g, \"kernel_cycles\": %.12g, \"dram_bytes\": %" PRIu64
                   ", \"mac_utilization\": %.6f, \"lx_peak\": %" PRIu64 ", \"is_default\": %s, \"is_best\": %s}",
                r->cycles, r->kernel_cycles, r->dram_bytes, r->mac_util, r->lx_peak,
                r->is_default ? "true" : "false", r->is_best ? "true" : "false");
    }
    fprintf(f, "\n  ]\n}\n");
    if (out_close(&o))
        return SW_USAGE;

    for (int k = 0; k < nk; k++) {
        char name[80];
        snprintf(name, sizeof name, "%.63s.svg", ks[k].name);
        if ((f = out_open(&o, out, name))) { /* a plot that fails is reported, the sweep goes on */
            write_svg(f, rs, &ks[k]);
            out_close(&o);
        }
    }
    for (int k = 0; k < nk; k++) {
        const sw_row *d = ks[k].def >= 0 ? &rs->v[ks[k].def] : NULL, *b = &rs->v[ks[k].best];
        printf("%-36s %4d variants  default %-6s cycles=%-10.0f best %-6s cycles=%-10.0f default/best=%.4f\n",
               ks[k].name, ks[k].n, d ? d->choice : "?", d ? d->cycles : 0, b->choice, b->cycles,
               d && b->cycles > 0 ? d->cycles / b->cycles : 0.0);
    }
    printf("wrote %s/sweep.csv, %s/sweep.json and %d SVG plots\n", out, out, nk);
    if (def <= 0 || best <= 0) {
        fprintf(stderr, "spyre sweep: no default variant among the rows: cannot compare\n");
        printf("default_vs_best=nan\n");
        return SW_USAGE;
    }
    printf("default_vs_best=%.4f\n", def / best);
    return SW_OK;
}

/* ---- compiling and running one variant ---- */

/* The default split of each kernel, from the compile report's target
 * section ("NAME: grid GMxGN on ..." or "NAME: rows over C cores"). */
static int default_choice(const cc_result *r, const char *kernel, char *out, size_t len, char *tiles, size_t tlen)
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
            if (gk > 1)
                snprintf(out, len, "%dx%dx%d", a, b, gk);
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
static int tile_variants(int matmul, const char *def, const char *tiles, int64_t kmax, char (*out)[64], int max)
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

static cc_result *compile_variant(const cc_graph *g, const sim_config *cfg, const char *kernel, const char *choice,
                                  char *err, size_t errlen)
{
    char wd[128];
    const char *wds[1] = {wd};
    cc_compile_opts o = {0};
    o.target = cfg;
    if (kernel) {
        snprintf(wd, sizeof wd, "%s=%s", kernel, choice);
        o.work_div = wds;
        o.nwork_div = 1;
    }
    return cc_compile(g, &o, err, errlen);
}

/* Simulate p (taken: freed here) timing-only on a device of its own for
 * cfg, into *res.  0 on success, -1 with err. */
static int simulate_program(isa_program *p, const sim_config *cfg, rt_run_result *res, char *err, size_t errlen)
{
    rt_device *dev = rt_open_config(cfg, err, errlen);
    if (!dev) {
        isa_program_free(p);
        return -1;
    }
    sim_options opt = {.values = 0, .detect_races = 0, .trace = SIM_TRACE_OFF};
    sim_set_options(rt_sim(dev), &opt);
    rt_program *prog = rt_load_program(dev, p, err, errlen);
    int rc = -1;
    if (prog && !rt_launch(prog, res))
        rc = 0;
    else if (prog)
        rt_run_format(res, err, errlen);
    if (prog)
        rt_unload(prog);
    rt_close(dev);
    return rc;
}

/* Compile g for cfg with the work divisions wd[0..n) ("KERNEL=SPEC") and
 * simulate it timing-only into *res.  0 on success; -1 with err, and
 * *no_compile set when the compiler refused the graph. */
static int simulate_wd(const cc_graph *g, const sim_config *cfg, const char *const *wd, int n, rt_run_result *res,
                       int *no_compile, char *err, size_t errlen)
{
    cc_compile_opts o = {0};
    o.target = cfg;
    o.work_div = wd;
    o.nwork_div = n;
    cc_result *cr = cc_compile(g, &o, err, errlen);
    *no_compile = !cr;
    if (!cr)
        return -1;
    isa_program *p = cc_result_take_program(cr);
    cc_result_free(cr);
    return simulate_program(p, cfg, res, err, errlen);
}

/* The same with at most one kernel forced to choice. */
static int simulate(const cc_graph *g, const sim_config *cfg, const char *kernel, const char *choice,
                    rt_run_result *res, int *no_compile, char *err, size_t errlen)
{
    char wd[128];
    const char *wds[1] = {wd};
    if (kernel)
        snprintf(wd, sizeof wd, "%s=%s", kernel, choice);
    return simulate_wd(g, cfg, wds, kernel ? 1 : 0, res, no_compile, err, errlen);
}

/* --autotune: the best choice of each kernel that beat its default, then
 * checked together: while the graph with all of them is slower than with
 * none, the one that gained least alone is dropped, so the tuning file never
 * makes the whole graph slower.  Rewrites the file with what is kept. */
#define JOINT_TRY 3

static int autotune_joint(const cc_graph *g, const sim_config *cfg, const sw_rows *rs, const char *graph,
                          const char *file)
{
    sw_kernel ks[256];
    int nk = kernels_of(rs, ks, 256);
    char spec[256][128];
    const char *wd[256];
    double gain[256];
    int n = 0;
    for (int k = 0; k < nk; k++) {
        if (ks[k].def < 0 || ks[k].best == ks[k].def || rs->v[ks[k].best].cycles >= rs->v[ks[k].def].cycles)
            continue;
        int j = n++; /* insertion by gain, largest first */
        double gk = rs->v[ks[k].def].cycles - rs->v[ks[k].best].cycles;
        while (j > 0 && gain[j - 1] < gk) {
            gain[j] = gain[j - 1];
            memcpy(spec[j], spec[j - 1], sizeof spec[j]);
            j--;
        }
        gain[j] = gk;
        snprintf(spec[j], sizeof spec[j], "%.63s=%.63s", ks[k].name, rs->v[ks[k].best].choice);
    }
    for (int i = 0; i < n; i++)
        wd[i] = spec[i];
    rt_run_result *res = malloc(sizeof *res);
    char err[1024];
    int nc;
    if (!res || simulate_wd(g, cfg, wd, 0, res, &nc, err, sizeof err)) {
        fprintf(stderr, "spyre sweep: autotune: %s\n", res ? err : "out of memory");
        free(res);
        return SW_USAGE;
    }
    double none = res->stats.cycles, all = none;
    while (n > 0) {
        if (simulate_wd(g, cfg, wd, n, res, &nc, err, sizeof err) == 0 && (all = res->stats.cycles) <= none)
            break;
        n--; /* slower together (or refused): drop the smallest gain */
        all = none;
    }
    /* Joint search, one pass of coordinate descent: kernel by kernel, its
     * JOINT_TRY fastest choices alone (and its default), each tried with
     * the others' current choices; the whole graph's cycles decide. */
    double before = all;
    int evals = 0;
    for (int k = 0; k < nk; k++) {
        int cur = -1; /* its spec, or -1: the default */
        size_t kl = strlen(ks[k].name);
        for (int i = 0; i < n; i++)
            if (!strncmp(spec[i], ks[k].name, kl) && spec[i][kl] == '=')
                cur = i;
        int tried[JOINT_TRY + 1], ntried = 0;
        for (int t = 0; t <= JOINT_TRY; t++) { /* the next fastest not tried yet; last the default */
            int pick = -1;
            for (int r = 0; r < rs->n && t < JOINT_TRY; r++) {
                const sw_row *row = &rs->v[r];
                int seen = 0;
                for (int i = 0; i < ntried; i++)
                    seen |= tried[i] == r;
                if (!seen && !strcmp(row->kernel, ks[k].name) && row->cycles > 0 &&
                    (pick < 0 || row->cycles < rs->v[pick].cycles))
                    pick = r;
            }
            if (t == JOINT_TRY)
                pick = ks[k].def;
            if (pick < 0)
                continue;
            tried[ntried++] = pick;
            const char *choice = rs->v[pick].choice;
            if (cur >= 0 ? !strcmp(strchr(spec[cur], '=') + 1, choice) : pick == ks[k].def)
                continue; /* what it has now */
            char save[128];
            int slot = cur >= 0 ? cur : n;
            if (slot == 256)
                continue;
            memcpy(save, spec[slot], sizeof save);
            snprintf(spec[slot], sizeof spec[slot], "%.63s=%.63s", ks[k].name, choice);
            wd[slot] = spec[slot];
            int m = cur >= 0 ? n : n + 1;
            evals++;
            if (simulate_wd(g, cfg, wd, m, res, &nc, err, sizeof err) == 0 && res->stats.cycles < all) {
                all = res->stats.cycles;
                cur = slot;
                n = m;
            } else {
                memcpy(spec[slot], save, sizeof save);
            }
        }
    }
    free(res);
    printf("joint search: %d graph%s simulated, the tuned graph %.0f -> %.0f cycles\n", evals, evals == 1 ? "" : "s",
           before, all);
    isa_outfile o;
    if (isa_out_open(&o, file, err, sizeof err)) {
        fprintf(stderr, "spyre sweep: %s\n", err);
        return SW_USAGE;
    }
    FILE *f = o.f;
    fprintf(f, "# spyre sweep --autotune: work divisions that beat the defaults, checked together\n"
               "# (docs/sweep.md): tune GRAPH CONFIG KERNEL SPEC\n");
    for (int i = 0; i < n; i++) {
        const char *eq = strchr(spec[i], '=');
        fprintf(f, "tune %s %s %.*s %s\n", graph ? graph : "-", cfg->name, (int)(eq - spec[i]), spec[i], eq + 1);
    }
    if (isa_out_close(&o, 1, err, sizeof err)) {
        fprintf(stderr, "spyre sweep: %s\n", err);
        return SW_USAGE;
    }
    printf("autotune: %d choice%s in %s: whole graph %.0f cycles with them, %.0f without\n", n, n == 1 ? "" : "s",
           file, all, none);
    return SW_OK;
}

/* Simulate r's compiled program p (taken) timing-only; fills r's
 * measurements.  0 on success, -1 with err. */
static int run_variant(isa_program *p, const sim_config *cfg, sw_row *r, char *err, size_t errlen)
{
    rt_run_result *res = malloc(sizeof *res);
    if (!res) {
        isa_program_free(p);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = simulate_program(p, cfg, res, err, errlen);
    if (!rc) {
        const sim_stats *st = &res->stats;
        const sim_kernel_stats *ks = sim_stats_kernel(st, r->kernel);
        double peak = (double)cfg->cores * cfg->corelets * cfg->pt_rows * cfg->pt_cols * cfg->pt_lanes;
        r->cycles = st->cycles;
        r->kernel_cycles = ks ? ks->end - ks->start : 0;
        r->dram_bytes = ks ? ks->dram_bytes : 0;
        r->mac_util = ks && r->kernel_cycles > 0 ? (double)ks->macs / (r->kernel_cycles * peak) : 0;
        r->lx_peak = 0;
        for (int c = 0; c < cfg->cores && c < SIM_MAX_CORES; c++)
            if (st->lx_peak[c] > r->lx_peak)
                r->lx_peak = st->lx_peak[c];
        r->done = 1;
    }
    free(res);
    return rc;
}

/* ---- the worker pool ---- */

/* A worker's line to the parent: it sends results and questions, the
 * parent sends answers. */
typedef struct {
    int to_parent, from_parent;
} sw_chan;

/* In a forked worker: measure item into buf (size bytes), asking the
 * parent with sw_ask when it must.  0 sends buf back; 1 ends the item
 * with nothing to send; -1 is a failure (the worker has said why on
 * stderr). */
typedef int (*sw_work_fn)(void *ctx, int item, void *buf, sw_chan *ch);
/* In the parent: the answer (0..255) to item's question, or -1 when it
 * cannot be given yet (asked again after the next event). */
typedef int (*sw_ask_fn)(void *ctx, int item);
/* In the parent: item's buf arrived. */
typedef void (*sw_done_fn)(void *ctx, int item, const void *buf);
/* In the parent: item's worker is gone (ok: it exited with status 0). */
typedef void (*sw_end_fn)(void *ctx, int item, int ok);

typedef struct {
    sw_work_fn work;
    sw_ask_fn ask;   /* NULL when the work never asks */
    sw_done_fn done;
    sw_end_fn end;   /* may be NULL */
} sw_job;

/* In a worker: ask the parent about this item and wait for the answer
 * (0..255); -1 when the parent is gone. */
static int sw_ask(sw_chan *ch)
{
    char q = 'q';
    unsigned char a;
    if (write(ch->to_parent, &q, 1) != 1 || read(ch->from_parent, &a, 1) != 1)
        return -1;
    return a;
}

enum { MSG_HEAD = sizeof(max_align_t) }; /* a result's tag and padding */

typedef struct {
    pid_t pid;
    int rfd, wfd; /* from the worker (results, questions); to it (answers) */
    int item;
    int asking;   /* a question waits for its answer */
} sw_worker;

static int read_full(int fd, void *buf, size_t size)
{
    for (size_t got = 0; got < size;) {
        ssize_t k = read(fd, (char *)buf + got, size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

/* Run job for items todo[0..ntodo) in up to jobs forked workers, in
 * order, calling done in the parent as each result arrives and answering
 * questions as they can be; on a terminal, a progress line counting
 * `what`.  Returns the number of items whose worker failed (or that could
 * not start). */
static int run_pool(void *ctx, const int *todo, int ntodo, int jobs, size_t size, const sw_job *job, const char *what)
{
    sw_worker *w = calloc((size_t)jobs, sizeof *w);
    struct pollfd *pf = calloc((size_t)jobs, sizeof *pf);
    int *slot = calloc((size_t)jobs, sizeof *slot);
    /* a message from a worker: a tag ('r' result, 'q' question) and, for
     * a result, size bytes at MSG_HEAD (aligned) */
    char *msg = malloc(MSG_HEAD + size);
    int next = 0, running = 0, finished = 0, failed = 0;
    int tty = isatty(2);
    double t0 = now_s();
    if (!w || !pf || !slot || !msg) {
        fprintf(stderr, "spyre sweep: out of memory\n");
        free(w);
        free(pf);
        free(slot);
        free(msg);
        return ntodo;
    }
    void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN); /* a worker that died does not take the parent */
    fflush(NULL);
    while (finished < ntodo) {
        while (running < jobs && next < ntodo) {
            int res[2], ctl[2];
            if (pipe(res)) {
                perror("spyre sweep: pipe");
                break;
            }
            if (pipe(ctl)) {
                perror("spyre sweep: pipe");
                close(res[0]);
                close(res[1]);
                break;
            }
            pid_t pid = fork();
            if (pid < 0) {
                perror("spyre sweep: fork");
                close(res[0]);
                close(res[1]);
                close(ctl[0]);
                close(ctl[1]);
                break;
            }
            if (pid == 0) {
                signal(SIGPIPE, old_pipe);
                for (int s = 0; s < jobs; s++)
                    if (w[s].pid) {
                        close(w[s].rfd);
                        close(w[s].wfd);
                    }
                close(res[0]);
                close(ctl[1]);
                sw_chan ch = {res[1], ctl[0]};
                memset(msg, 0, MSG_HEAD + size);
                msg[0] = 'r';
                int rc = job->work(ctx, todo[next], msg + MSG_HEAD, &ch);
                if (!rc && write(res[1], msg, MSG_HEAD + size) != (ssize_t)(MSG_HEAD + size))
                    rc = -1;
                _exit(rc < 0 ? 1 : 0);
            }
            close(res[1]);
            close(ctl[0]);
            int s = 0;
            while (w[s].pid)
                s++;
            w[s] = (sw_worker){pid, res[0], ctl[1], todo[next], 0};
            next++;
            running++;
        }
        if (!running)
            break; /* could not start a worker */
        int np = 0;
        for (int s = 0; s < jobs; s++) {
            if (!w[s].pid)
                continue;
            if (w[s].asking) {
                int a = job->ask(ctx, w[s].item);
                if (a >= 0) {
                    unsigned char b = (unsigned char)a;
                    if (write(w[s].wfd, &b, 1) != 1) { /* gone: its end is seen below */
                    }
                    w[s].asking = 0;
                }
            }
            pf[np] = (struct pollfd){w[s].rfd, POLLIN, 0};
            slot[np++] = s;
        }
        if (poll(pf, (nfds_t)np, -1) < 0) {
            if (errno == EINTR)
                continue;
            perror("spyre sweep: poll");
            break;
        }
        for (int i = 0; i < np; i++) {
            if (!pf[i].revents)
                continue;
            sw_worker *k = &w[slot[i]];
            ssize_t got = read(k->rfd, msg, 1);
            if (got < 0 && errno == EINTR)
                continue;
            if (got == 1 && msg[0] == 'q' && job->ask) {
                k->asking = 1;
                continue;
            }
            if (got == 1 && msg[0] == 'r' && !read_full(k->rfd, msg + 1, MSG_HEAD - 1 + size)) {
                job->done(ctx, k->item, msg + MSG_HEAD);
                continue;
            }
            /* the end of the worker (or a message it should not send) */
            if (got != 0)
                kill(k->pid, SIGKILL);
            int status = 0;
            while (waitpid(k->pid, &status, 0) < 0 && errno == EINTR)
                ;
            int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == 0;
            failed += !ok;
            if (job->end)
                job->end(ctx, k->item, ok);
            close(k->rfd);
            close(k->wfd);
            k->pid = 0;
            running--;
            finished++;
            if (tty) {
                double el = now_s() - t0;
                fprintf(stderr, "\rsweep: %d/%d %s, %d running, %.1f s, about %.0f s left   ", finished, ntodo, what,
                        running, el, el / finished * (ntodo - finished));
            }
        }
    }
    if (tty)
        fprintf(stderr, "\n");
    signal(SIGPIPE, old_pipe);
    free(msg);
    free(slot);
    free(pf);
    free(w);
    return failed + (ntodo - finished);
}

/* ---- the sweep ---- */

/* One candidate: a kernel and a split to force on it, and what is known.
 * Each is compiled once, in a worker, which then simulates it with the
 * program it compiled if the compiler accepted it and this run needs it.
 * The accepted ones (variants) are numbered in candidate order as soon as
 * every earlier candidate is known, so the numbering is the same however
 * the workers interleave; a result that arrives before its number waits
 * here. */
enum { CAND_PENDING, CAND_LEGAL, CAND_ILLEGAL, CAND_LOST };
typedef struct {
    char kernel[64];
    char choice[64];
    int is_default;
    int done_before; /* measured by an earlier run (a row of the CSV resumed from) */
    int state;       /* CAND_* */
    int row;         /* its row in rs once numbered, else -1 */
    int run;         /* 1 to simulate it in this run: legal, not done before, in this shard */
    int have;        /* res holds its measurement, not yet numbered */
    sw_row res;
} sw_cand;

typedef struct {
    const cc_graph *g;
    const sim_config *cfg;
    sw_cand *cands;
    int ncand;
    int numbered;        /* candidates [0, numbered) are known and numbered */
    int lost;            /* a worker died before saying whether its candidate compiles */
    sw_rows *rs;         /* the variants, in index order */
    const sw_rows *prev; /* rows of an earlier run (resume) */
    int shard_i, shard_n;
    int ndone, inshard, nran;
    FILE *csv;
} sw_variants;

/* A measured variant: into its row, and appended to the CSV. */
static void variant_record(sw_variants *c, const sw_cand *cd, const sw_row *m)
{
    sw_row *dst = &c->rs->v[cd->row];
    int index = dst->index, is_default = dst->is_default;
    *dst = *m;
    dst->index = index;
    dst->is_default = is_default;
    csv_write_row(c->csv, dst);
    fflush(c->csv);
    c->nran++;
}

/* Number every candidate that can be: a variant's index is the count of
 * legal candidates before it.  Without shards whether to run a variant
 * does not depend on its number and was decided when it compiled. */
static void number_candidates(sw_variants *c)
{
    while (!c->lost && c->numbered < c->ncand && c->cands[c->numbered].state != CAND_PENDING) {
        sw_cand *cd = &c->cands[c->numbered++];
        if (cd->state == CAND_LOST)
            c->lost = 1;
        if (cd->state != CAND_LEGAL)
            continue;
        sw_row *r = rows_push(c->rs);
        r->index = c->rs->n - 1;
        cd->row = r->index;
        snprintf(r->kernel, sizeof r->kernel, "%s", cd->kernel);
        snprintf(r->choice, sizeof r->choice, "%s", cd->choice);
        r->is_default = cd->is_default;
        if (cd->done_before) { /* kept, with this run's numbering */
            *r = *rows_find(c->prev, cd->kernel, cd->choice);
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
static int variant_work(void *ctx, int item, void *buf, sw_chan *ch)
{
    sw_variants *c = ctx;
    const sw_cand *cd = &c->cands[item];
    sw_row *r = buf;
    snprintf(r->kernel, sizeof r->kernel, "%s", cd->kernel);
    snprintf(r->choice, sizeof r->choice, "%s", cd->choice);
    char err[1024] = "";
    cc_result *cr = compile_variant(c->g, c->cfg, cd->kernel, cd->choice, err, sizeof err);
    if (!cr)
        return 0; /* the back half does not take this split: not a variant */
    isa_program *p = cc_result_take_program(cr);
    cc_result_free(cr);
    int run = sw_ask(ch);
    if (run != 1) {
        isa_program_free(p);
        return run == 0 ? 1 : -1;
    }
    if (!run_variant(p, c->cfg, r, err, sizeof err))
        return 0;
    fprintf(stderr, "%sspyre sweep: %s=%s: %s\n", isatty(2) ? "\n" : "", r->kernel, r->choice, err);
    return -1;
}

/* The candidate compiled: run it?  With shards, once it is numbered. */
static int variant_ask(void *ctx, int item)
{
    sw_variants *c = ctx;
    sw_cand *cd = &c->cands[item];
    if (cd->state == CAND_PENDING)
        cd->state = CAND_LEGAL;
    number_candidates(c);
    if (c->shard_n == 1)
        return !cd->done_before;
    if (item >= c->numbered)
        return c->lost ? 0 : -1; /* after a lost candidate nothing can be numbered */
    return cd->run;
}

static void variant_done(void *ctx, int item, const void *buf)
{
    sw_variants *c = ctx;
    const sw_row *r = buf;
    sw_cand *cd = &c->cands[item];
    if (!r->done) {
        cd->state = CAND_ILLEGAL;
        number_candidates(c);
    } else if (cd->row >= 0) {
        variant_record(c, cd, r);
    } else { /* an earlier candidate is still compiling */
        cd->res = *r;
        cd->have = 1;
    }
}

static void variant_end(void *ctx, int item, int ok)
{
    sw_variants *c = ctx;
    sw_cand *cd = &c->cands[item];
    (void)ok;
    if (cd->state != CAND_PENDING)
        return;
    fprintf(stderr, "%sspyre sweep: %s=%s: the worker ended before the compile did; the variants after it are not "
                    "numbered or written\n", isatty(2) ? "\n" : "", cd->kernel, cd->choice);
    cd->state = CAND_LOST;
    number_candidates(c);
}

/* ---- --vary: the same graph on several chip configurations ---- */

enum { VARY_MAX_KEYS = 8, VARY_MAX_VALUES = 64, VARY_MAX_CONFIGS = 4096 };

/* One configuration: the base --config with some keys set, and what the
 * run measured (whole graph). */
typedef struct {
    int index;          /* position in the cross product (shards take index % N == I) */
    char config[256];   /* "KEY=V;KEY=V", keys in --vary order */
    int failed;         /* the graph does not compile on it; message says why */
    char message[512];
    double cycles;
    uint64_t dram_bytes; /* read + written, whole run */
    double mac_util;     /* sim_stats_mac_utilization */
    uint64_t lx_peak;    /* highest LX byte touched + 1, busiest core */
    int is_best;
    int done;
} sw_vrow;

typedef struct {
    sw_vrow *v;
    int n, cap;
} sw_vrows;

static sw_vrow *vrows_push(sw_vrows *rs)
{
    rs->v = grow_rows(rs->v, rs->n, &rs->cap, sizeof *rs->v);
    sw_vrow *r = &rs->v[rs->n++];
    memset(r, 0, sizeof *r);
    return r;
}

static sw_vrow *vrows_find(const sw_vrows *rs, const char *config)
{
    for (int i = 0; i < rs->n; i++)
        if (!strcmp(rs->v[i].config, config))
            return &rs->v[i];
    return NULL;
}

static const char vary_header[] = "index,config,status,cycles,dram_bytes,mac_utilization,lx_peak,is_best,message\n";

/* The message is the last column, quoted, with quotes doubled. */
static void vary_write_row(FILE *f, const sw_vrow *r)
{
    fprintf(f, "%d,%s,%s,%.12g,%" PRIu64 ",%.6f,%" PRIu64 ",%d,\"", r->index, r->config, r->failed ? "failed" : "ok",
            r->cycles, r->dram_bytes, r->mac_util, r->lx_peak, r->is_best);
    for (const char *m = r->message; *m; m++)
        fprintf(f, *m == '"' ? "\"\"" : "%c", *m);
    fprintf(f, "\"\n");
}

/* Append the rows of a --vary sweep.csv to rs (skipping configurations
 * already there); 0 when the file does not exist, -1 with err on a
 * malformed file. */
static int vary_csv_read(const char *path, sw_vrows *rs, char *err, size_t errlen)
{
    char *text = read_if_present(path, err, errlen), *cur = text, *line;
    if (!text)
        return err[0] ? -1 : 0;
    int lineno = 0;
    while ((line = isa_text_line(&cur))) {
        lineno++;
        if (lineno == 1 && is_header(line, vary_header))
            continue;
        if (!line[0])
            continue;
        sw_vrow r = {0};
        char status[8];
        unsigned long long dram, lx;
        int at = -1;
        if (sscanf(line, "%d,%255[^,],%7[^,],%lf,%llu,%lf,%llu,%d,%n", &r.index, r.config, status, &r.cycles, &dram,
                   &r.mac_util, &lx, &r.is_best, &at) != 8 || at < 0 || line[at] != '"' ||
            (strcmp(status, "ok") && strcmp(status, "failed"))) {
            snprintf(err, errlen, "%s:%d: not a --vary sweep row: %.60s", path, lineno, line);
            free(text);
            return -1;
        }
        size_t n = 0;
        for (const char *m = line + at + 1; *m && n + 1 < sizeof r.message; m++) {
            if (*m == '"' && m[1] != '"')
                break;
            if (*m == '"')
                m++;
            r.message[n++] = *m;
        }
        r.message[n] = 0;
        r.failed = !strcmp(status, "failed");
        r.dram_bytes = dram;
        r.lx_peak = lx;
        r.done = 1;
        if (!vrows_find(rs, r.config))
            *vrows_push(rs) = r;
    }
    free(text);
    return 0;
}

static int cmp_vindex(const void *a, const void *b)
{
    const sw_vrow *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* A bar of whole-graph cycles per configuration (green the best, a red
 * mark for a configuration the graph does not compile on). */
static void vary_svg(FILE *f, const sw_vrows *rs, int best)
{
    const double W = 1000, H = 420, top = 50, bot = 300, l = 70, r = 980;
    double ymax = 0;
    for (int i = 0; i < rs->n; i++)
        if (!rs->v[i].failed && rs->v[i].cycles > ymax)
            ymax = rs->v[i].cycles;
    if (ymax <= 0)
        ymax = 1;
    char t[512];
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\">\n",
            W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    snprintf(t, sizeof t, "whole-graph cycles per configuration (green: best %.200s; red: does not compile)",
             best >= 0 ? rs->v[best].config : "none");
    svg_text(f, 20, 25, "start", 14, t);
    fprintf(f, "<path d=\"M%.0f %.0f V%.0f H%.0f\" stroke=\"black\" fill=\"none\"/>\n", l, top, bot, r);
    snprintf(t, sizeof t, "%.0f", ymax);
    svg_text(f, l - 4, top + 4, "end", 10, t);
    svg_text(f, l - 4, bot, "end", 10, "0");
    svg_text(f, (l + r) / 2, H - 10, "middle", 11, "configuration");
    fprintf(f, "<text x=\"14\" y=\"%.0f\" font-size=\"11\" transform=\"rotate(-90 14 %.0f)\" "
               "text-anchor=\"middle\">cycles</text>\n", (top + bot) / 2, (top + bot) / 2);
    double bw = (r - l) / (rs->n ? rs->n : 1);
    for (int i = 0; i < rs->n; i++) {
        const sw_vrow *v = &rs->v[i];
        double x = l + i * bw;
        if (v->failed)
            fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"4\" fill=\"#c33\"><title>%s: failed"
                       "</title></rect>\n", x + 0.1 * bw, bot - 4, 0.8 * bw, v->config);
        else {
            double h = (bot - top) * v->cycles / ymax;
            fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>%s: %.0f cycles, "
                       "%" PRIu64 " DRAM bytes, MAC utilization %.4f</title></rect>\n", x + 0.1 * bw, bot - h,
                    0.8 * bw, h, i == best ? "#2a2" : "#999", v->config, v->cycles, v->dram_bytes, v->mac_util);
        }
        if (rs->n <= 48)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"end\" "
                       "transform=\"rotate(-60 %.1f %.1f)\">%s</text>\n", x + bw / 2, bot + 10, x + bw / 2, bot + 10,
                    v->config);
    }
    fprintf(f, "</svg>\n");
}

/* Mark the best configuration, rewrite sweep.csv, write sweep.json and
 * configs.svg, print a line per configuration and, last,
 * best_config=VALUES cycles=N.  Returns the exit status. */
static int vary_finish(sw_vrows *rs, const char *out, const char *graph, const char *config)
{
    qsort(rs->v, (size_t)rs->n, sizeof *rs->v, cmp_vindex);
    int best = -1, nfailed = 0;
    for (int i = 0; i < rs->n; i++) {
        rs->v[i].is_best = 0;
        nfailed += rs->v[i].failed;
        if (!rs->v[i].failed && (best < 0 || rs->v[i].cycles < rs->v[best].cycles))
            best = i;
    }
    if (best >= 0)
        rs->v[best].is_best = 1;
    isa_outfile o;
    FILE *f = out_open(&o, out, "sweep.csv");
    if (!f)
        return SW_USAGE;
    fputs(vary_header, f);
    for (int i = 0; i < rs->n; i++)
        vary_write_row(f, &rs->v[i]);
    if (out_close(&o))
        return SW_USAGE;

    f = json_open(&o, out, graph, config);
    if (!f)
        return SW_USAGE;
    fprintf(f, ",\n  \"configurations\": %d,\n  \"failed\": %d,\n  \"best_config\": ", rs->n, nfailed);
    json_str(f, best >= 0 ? rs->v[best].config : "");
    fprintf(f, ",\n  \"best_cycles\": %.12g,\n  \"rows\": [", best >= 0 ? rs->v[best].cycles : -1.0);
    for (int i = 0; i < rs->n; i++) {
        const sw_vrow *r = &rs->v[i];
        fprintf(f, "%s\n    {\"index\": %d, \"config\": ", i ? "," : "", r->index);
        json_str(f, r->config);
        fprintf(f, ", \"status\": \"%s\", \"cycles\": %.12g, \"dram_bytes\": %" PRIu64 ", \"mac_utilization\": %.6f, "
                   "\"lx_peak\": %" PRIu64 ", \"is_best\": %s, \"message\": ", r->failed ? "failed" : "ok", r->cycles,
                r->dram_bytes, r->mac_util, r->lx_peak, r->is_best ? "true" : "false");
        json_str(f, r->message);
        fputc('}', f);
    }
    fprintf(f, "\n  ]\n}\n");
    if (out_close(&o))
        return SW_USAGE;

    if ((f = out_open(&o, out, "configs.svg"))) { /* reported, the sweep goes on */
        vary_svg(f, rs, best);
        out_close(&o);
    }
    for (int i = 0; i < rs->n; i++) {
        const sw_vrow *r = &rs->v[i];
        if (r->failed)
            printf("%-40s failed: %s\n", r->config, r->message);
        else
            printf("%-40s cycles=%-10.0f dram_bytes=%-10" PRIu64 " mac_utilization=%.4f%s\n", r->config, r->cycles,
                   r->dram_bytes, r->mac_util, r->is_best ? "  (best)" : "");
    }
    printf("wrote %s/sweep.csv, %s/sweep.json and %s/configs.svg\n", out, out, out);
    if (best < 0) {
        fprintf(stderr, "spyre sweep: the graph compiles on none of the configurations\n");
        printf("best_config=none cycles=nan\n");
        return 1;
    }
    printf("best_config=%s cycles=%.0f\n", rs->v[best].config, rs->v[best].cycles);
    return SW_OK;
}

/* A worker's context: the graph, each row's loaded configuration, the
 * rows and the CSV they are appended to. */
typedef struct {
    const cc_graph *g;
    const sim_config *cfgs;
    sw_vrows *rs;
    FILE *csv;
} sw_vary;

static int vary_work(void *ctx, int item, void *buf, sw_chan *ch)
{
    (void)ch;
    sw_vary *c = ctx;
    sw_vrow *r = buf;
    const sim_config *cfg = &c->cfgs[item];
    *r = c->rs->v[item];
    rt_run_result *res = malloc(sizeof *res);
    char err[1024] = "";
    int no_compile = 0;
    if (!res || simulate(c->g, cfg, NULL, NULL, res, &no_compile, err, sizeof err)) {
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
    r->cycles = st->cycles;
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
    vary_write_row(c->csv, dst);
    fflush(c->csv);
}

/* The values of one --vary KEY=V1,V2,... */
typedef struct {
    char key[64];
    char *vals[VARY_MAX_VALUES];
    int n;
} sw_axis;

/* Parse "KEY=V1,V2,..." into a (values point into spec, which is
 * modified).  -1 with err. */
static int vary_parse(char *spec, sw_axis *a, char *err, size_t errlen)
{
    char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1]) {
        snprintf(err, errlen, "--vary %s: expected KEY=V1,V2,...", spec);
        return -1;
    }
    *eq = 0;
    if ((size_t)(eq - spec) >= sizeof a->key || strspn(spec, "abcdefghijklmnopqrstuvwxyz0123456789_") != (size_t)(eq - spec) ||
        !strcmp(spec, "name") || !strcmp(spec, "include")) {
        snprintf(err, errlen, "--vary %s: not a configuration key (see sim/configs/spyre.cfg)", spec);
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

/* snprintf without the compiler's truncation warning: a message cut at the
 * buffer's end is fine here. */
static void msgf(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void msgf(char *dst, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, len, fmt, ap);
    va_end(ap);
}

/* Load the configuration base + "KEY = V" lines through a temporary file
 * that includes base (an absolute path), so the normal loader checks every
 * value.  -1 with err. */
static int vary_load(const char *base, const sw_axis *ax, int nax, const int *pick, sim_config *cfg, char *err,
                     size_t errlen)
{
    const char *dir = getenv("TMPDIR");
    char *tmp = isa_path_join(dir && *dir ? dir : "/tmp", "spyre-vary-XXXXXX");
    int fd = mkstemp(tmp);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        msgf(err, errlen, "%s: %s", tmp, strerror(errno));
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
    int rc = sim_config_load(tmp, cfg, e, sizeof e);
    remove(tmp);
    free(tmp);
    if (rc) {
        char desc[512] = "";
        for (int k = 0; k < nax; k++)
            msgf(desc + strlen(desc), sizeof desc - strlen(desc), "%s%s=%s", k ? ";" : "", ax[k].key,
                 ax[k].vals[pick[k]]);
        msgf(err, errlen, "configuration %s on %s: %s", desc, base, e);
    }
    return rc;
}

static int sw_usage(const char *what);

/* spyre sweep GRAPH --vary ...: the graph compiled with the compiler's
 * defaults on every configuration of the cross product. */
static int cmd_vary(const char *path, const char *config, sw_axis *ax, int nax, const char *out, int jobs, int shard_i,
                    int shard_n)
{
    char err[1024];
    char *cfgpath = sim_config_path(config ? config : "spyre");
    sim_config cfg;
    int bad = sim_config_load(cfgpath, &cfg, err, sizeof err);
    /* the temporary configurations include it by absolute path */
    char *base = bad ? NULL : realpath(cfgpath, NULL);
    if (!bad && !base)
        snprintf(err, sizeof err, "%s: %s", cfgpath, strerror(errno));
    free(cfgpath);
    if (!base) {
        fprintf(stderr, "spyre sweep: %s\n", err);
        return SW_USAGE;
    }
    long total = 1;
    for (int k = 0; k < nax; k++)
        total *= ax[k].n;
    int status = SW_USAGE;
    sw_vrows rs = {0};
    sim_config *cfgs = NULL;
    int *todo = NULL;
    cc_graph *g = NULL;
    char *csv = NULL;
    if (total > VARY_MAX_CONFIGS) {
        fprintf(stderr, "spyre sweep: --vary: %ld configurations, at most %d\n", total, VARY_MAX_CONFIGS);
        goto out;
    }
    g = cc_graph_load(path, err, sizeof err);
    if (!g) {
        fprintf(stderr, "spyre sweep: %s\n", err);
        goto out;
    }
    cfgs = calloc((size_t)total, sizeof *cfgs);
    todo = calloc((size_t)total, sizeof *todo);
    if (!cfgs || !todo) {
        fprintf(stderr, "spyre sweep: out of memory\n");
        goto out;
    }
    /* The cross product, the first --vary slowest; every one loaded now so
     * a bad key or value stops the sweep before anything runs. */
    for (int i = 0; i < total; i++) {
        int pick[VARY_MAX_KEYS];
        long rest = i;
        for (int k = nax - 1; k >= 0; k--) {
            pick[k] = (int)(rest % ax[k].n);
            rest /= ax[k].n;
        }
        if (vary_load(base, ax, nax, pick, &cfgs[i], err, sizeof err)) {
            fprintf(stderr, "spyre sweep: %s\n", err);
            goto out;
        }
        sw_vrow *r = vrows_push(&rs);
        r->index = i;
        for (int k = 0; k < nax; k++)
            snprintf(r->config + strlen(r->config), sizeof r->config - strlen(r->config), "%s%s=%s", k ? ";" : "",
                     ax[k].key, ax[k].vals[pick[k]]);
    }
    char gname[256];
    graph_name(path, gname, sizeof gname);
    printf("sweep %s on %s: %d configurations\n", gname, cfg.name, rs.n);
    if (make_dirs(out)) {
        fprintf(stderr, "spyre sweep: %s: %s\n", out, strerror(errno));
        goto out;
    }
    /* Resume: configurations already in OUT/sweep.csv are not re-run. */
    csv = isa_path_join(out, "sweep.csv");
    char *old = read_if_present(csv, err, sizeof err);
    int foreign = old && strncmp(old, vary_header, strlen(vary_header));
    free(old);
    if (err[0]) {
        fprintf(stderr, "spyre sweep: %s\n", err);
        goto out;
    }
    if (foreign) {
        fprintf(stderr, "spyre sweep: %s is not the CSV of a --vary sweep: use another --out\n", csv);
        goto out;
    }
    sw_vrows prev = {0};
    if (vary_csv_read(csv, &prev, err, sizeof err)) {
        fprintf(stderr, "spyre sweep: %s\n", err);
        free(prev.v);
        goto out;
    }
    int ndone = 0;
    for (int i = 0; i < prev.n; i++) {
        sw_vrow *r = vrows_find(&rs, prev.v[i].config);
        if (r && !r->done) {
            int index = r->index;
            *r = prev.v[i];
            r->index = index;
            ndone++;
        }
    }
    free(prev.v);
    int ntodo = 0, inshard = 0;
    for (int i = 0; i < rs.n; i++) {
        if (rs.v[i].index % shard_n != shard_i)
            continue;
        inshard++;
        if (!rs.v[i].done)
            todo[ntodo++] = i;
    }
    if (ndone)
        printf("resume: %d configurations already done in %s\n", ndone, csv);
    if (shard_n > 1)
        printf("shard %d/%d: %d configurations\n", shard_i, shard_n, inshard);
    sw_vary c = {g, cfgs, &rs, fopen(csv, "a")};
    if (!c.csv) {
        fprintf(stderr, "spyre sweep: %s: %s\n", csv, strerror(errno));
        goto out;
    }
    if (!ftell(c.csv))
        fputs(vary_header, c.csv);
    double t0 = now_s();
    printf("running %d configurations on %d worker%s\n", ntodo, jobs, jobs == 1 ? "" : "s");
    const sw_job job = {vary_work, NULL, vary_done, NULL};
    int failed = run_pool(&c, todo, ntodo, jobs, sizeof(sw_vrow), &job, "configurations");
    fclose(c.csv);
    printf("ran %d configurations in %.2f s%s\n", ntodo - failed, now_s() - t0,
           failed ? " (some failed to run: see above)" : "");
    sw_vrows keep = {0};
    for (int i = 0; i < rs.n; i++)
        if (rs.v[i].done)
            *vrows_push(&keep) = rs.v[i];
    status = vary_finish(&keep, out, gname, cfg.name);
    free(keep.v);
    if (failed && status == SW_OK)
        status = 1;
out:
    free(todo);
    free(cfgs);
    free(rs.v);
    free(base);
    free(csv);
    cc_graph_free(g);
    return status;
}

static int sw_usage(const char *what)
{
    fprintf(stderr, "spyre sweep: %s\nusage: spyre %s\n", what, sweep_usage);
    return SW_USAGE;
}

/* The rows of shard directory dir (the i-th; the first says whether the
 * shards are --vary sweeps), and the graph and config names from its
 * sweep.json if not known yet (graph and config: 256 bytes each). */
static int merge_dir(const char *dir, int i, int *vary, sw_rows *rs, sw_vrows *vrs, char *graph, char *config,
                     char *err, size_t errlen)
{
    char *path = isa_path_join(dir, "sweep.csv");
    char *text = isa_text_read(path, ISA_TEXT_MAX, err, errlen);
    if (text && !i)
        *vary = !strncmp(text, vary_header, strlen(vary_header));
    int rc = !text || (*vary ? vary_csv_read(path, vrs, err, errlen) : csv_read(path, rs, err, errlen));
    free(text);
    free(path);
    if (rc)
        return -1;
    path = isa_path_join(dir, "sweep.json");
    char *json = read_if_present(path, err, errlen), *cur = json, *line;
    free(path);
    while (json && (line = isa_text_line(&cur))) {
        if (!graph[0])
            sscanf(line, " \"graph\": \"%255[^\"]\"", graph);
        if (!config[0])
            sscanf(line, " \"config\": \"%255[^\"]\"", config);
    }
    free(json);
    return err[0] ? -1 : 0;
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
        else if (ndirs < 256)
            dirs[ndirs++] = argv[i];
    }
    if (!ndirs)
        return sw_usage("merge needs one or more shard directories");
    sw_rows rs = {0};
    sw_vrows vrs = {0};
    char err[1024];
    char graph[256] = "", config[256] = "";
    int vary = 0;
    for (int i = 0; i < ndirs; i++) {
        if (merge_dir(dirs[i], i, &vary, &rs, &vrs, graph, config, err, sizeof err)) {
            free(rs.v);
            free(vrs.v);
            fprintf(stderr, "spyre sweep merge: %s\n", err);
            return SW_USAGE;
        }
    }
    if (make_dirs(out)) {
        free(rs.v);
        free(vrs.v);
        fprintf(stderr, "spyre sweep merge: %s: %s\n", out, strerror(errno));
        return SW_USAGE;
    }
    printf("merged %d rows from %d directories\n", vary ? vrs.n : rs.n, ndirs);
    int rc = vary ? vary_finish(&vrs, out, graph, config) : finish(&rs, out, graph, config);
    free(rs.v);
    free(vrs.v);
    return rc;
}

/* `spyre sweep`'s command line. */
typedef struct {
    const char *path, *config, *only, *out, *autotune;
    long jobs;
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
    if (vary_parse(spec, &a->ax[a->nax], err, sizeof err)) {
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
        } else if (!strcmp(argv[i], "--shard") && i + 1 < argc) {
            char tail;
            if (sscanf(argv[++i], "%d/%d%c", &a->shard_i, &a->shard_n, &tail) != 2 || a->shard_n < 1 ||
                a->shard_i < 0 || a->shard_i >= a->shard_n) {
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
    if (a->nax && (a->only || a->autotune))
        return sw_usage("--vary takes neither --kernel nor --autotune");
    return SW_OK;
}

/* A sweep of work divisions under way: the chip, the graph, its default
 * compile (base), the candidates, the variants (rs) and an earlier run's
 * rows (prev), the journal OUT/sweep.csv. */
typedef struct {
    const sw_args *a;
    sim_config cfg;
    cc_graph *g;
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
static int kernel_extras(const sim_config *cfg, int matmul, const char *def, const char *tiles, char (*extra)[64])
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
    nextra += tile_variants(matmul, def, tiles, 4096, extra + nextra, 10);
    snprintf(extra[nextra++], 64, "%s+nokeep", def);
    return nextra;
}

/* One more candidate: kernel name with choice (def: the default's). */
static void add_candidate(sw_sweep *s, const char *name, const char *choice, const char *def)
{
    s->cands = grow_rows(s->cands, s->ncand, &s->cand_cap, sizeof *s->cands);
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
    if (default_choice(s->base, name, def, sizeof def, tiles, sizeof tiles)) {
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
    return 0;
}

/* The chip, the graph and its default compile; the kernels to sweep (the
 * --kernel one must exist). SW_OK, SW_USAGE, or -1: a graph of no kernel
 * (said so; nothing to do). */
static int sweep_open(sw_sweep *s)
{
    const sw_args *a = s->a;
    char *cfgpath = sim_config_path(a->config ? a->config : "spyre");
    int bad = sim_config_load(cfgpath, &s->cfg, s->err, sizeof s->err);
    free(cfgpath);
    if (!bad)
        s->g = cc_graph_load(a->path, s->err, sizeof s->err);
    if (!bad && s->g)
        s->base = compile_variant(s->g, &s->cfg, NULL, NULL, s->err, sizeof s->err);
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
    if (make_dirs(out)) {
        fprintf(stderr, "spyre sweep: %s: %s\n", out, strerror(errno));
        return -1;
    }
    s->csv = isa_path_join(out, "sweep.csv");
    if (csv_read(s->csv, &s->prev, s->err, sizeof s->err)) {
        fprintf(stderr, "spyre sweep: %s\n", s->err);
        return -1;
    }
    FILE *f = access(s->csv, F_OK) ? fopen(s->csv, "w") : NULL;
    if (f && (fputs(csv_header, f) < 0) + fclose(f)) {
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
        s->cands[i].done_before = rows_find(&s->prev, s->cands[i].kernel, s->cands[i].choice) != NULL;
    }
    return 0;
}

/* Every candidate through the worker pool; the counts said. -1 when the
 * journal cannot be appended to, else whether some failed. */
static int sweep_variants(sw_sweep *s)
{
    const sw_args *a = s->a;
    sw_variants vc = {s->g, &s->cfg, s->cands, s->ncand, 0, 0, &s->rs, &s->prev, a->shard_i, a->shard_n, 0, 0, 0,
                      fopen(s->csv, "a")};
    if (!vc.csv) {
        fprintf(stderr, "spyre sweep: %s: %s\n", s->csv, strerror(errno));
        return -1;
    }
    double t0 = now_s();
    const sw_job job = {variant_work, variant_ask, variant_done, variant_end};
    int failed = run_pool(&vc, s->todo, s->ncand, (int)a->jobs, sizeof(sw_row), &job, "candidates");
    fclose(vc.csv);
    number_candidates(&vc);
    printf("%d legal variants of %d candidates%s\n", s->rs.n, s->ncand,
           vc.lost ? " before the one lost (see above)" : "");
    if (vc.ndone)
        printf("resume: %d variants already done in %s\n", vc.ndone, s->csv);
    if (a->shard_n > 1)
        printf("shard %d/%d: %d variants\n", a->shard_i, a->shard_n, vc.inshard);
    printf("ran %d variants in %.2f s (with the compile of every candidate)%s\n", vc.nran, now_s() - t0,
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
            *rows_push(&keep) = s->rs.v[i];
    int status = s->a->autotune ? autotune_joint(s->g, &s->cfg, &keep, s->gname, s->a->autotune) : SW_OK;
    if (status == SW_OK)
        status = finish(&keep, s->a->out, s->gname, s->cfg.name);
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
    graph_name(a->path, s->gname, sizeof s->gname);
    printf("sweep %s on %s: %d kernel%s, %d candidates, compiled on %ld worker%s\n", s->gname, s->cfg.name,
           a->only ? 1 : s->nk, a->only || s->nk == 1 ? "" : "s", s->ncand, a->jobs, a->jobs == 1 ? "" : "s");
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
    cc_graph_free(s.g);
    return status;
}

/* ---- usage ---- */

const char sweep_usage[] =
    "sweep GRAPH [--kernel NAME] [--config FILE] [--out DIR] [--jobs N] [--shard I/N] [--autotune FILE]\n"
    "             | sweep GRAPH --vary KEY=V1,V2,... [--vary KEY=...] [--config FILE] [--out DIR] [--jobs N]\n"
    "               [--shard I/N]\n"
    "             | sweep merge DIR... [--out DIR]";
const char sweep_help[] =
    "Model the work-division choices of a graph's kernels (docs/sweep.md).  For each kernel (or only\n"
    "--kernel NAME) every split the compiler accepts (a matmul's grids GMxGN with GM*GN <= cores, uneven\n"
    "ones included; a row kernel's core counts) is compiled with that kernel forced and the others at\n"
    "the compiler's default, and simulated timing-only on the chip of --config (default spyre), in\n"
    "--jobs worker processes (default: every host core).  OUT (--out, default sweep-out) gets\n"
    "sweep.csv and sweep.json (one row per variant: kernel, choice, cycles, kernel_cycles, dram_bytes,\n"
    "mac_utilization, lx_peak, is_default, is_best; per kernel the default, the best and their ratio)\n"
    "and KERNEL.svg per kernel.  Variants already in OUT/sweep.csv are not re-run (resume).\n"
    "--shard I/N runs only the variants whose index % N == I; `sweep merge DIR... --out DIR` combines\n"
    "shard directories.  --autotune FILE writes the best choice per kernel as a tuning file for\n"
    "`spyre compile/run --tuning FILE`.  The last line is default_vs_best=RATIO: the default\n"
    "whole-graph cycles over the best among all variants.\n"
    "--vary KEY=V1,V2,... (repeatable) instead runs the graph, compiled with the compiler's defaults, on\n"
    "every configuration of the cross product of the values (keys of sim/configs/spyre.cfg, set on top\n"
    "of --config): sweep.csv/json rows per configuration (config, status, cycles, dram_bytes,\n"
    "mac_utilization, lx_peak, is_best, message; a configuration the graph does not compile on is\n"
    "status failed with the compiler's message), configs.svg, and the last line\n"
    "best_config=KEY=V;... cycles=N.  Resume and shards work the same way.\n"
    "Exit status: 0 ok, 1 some variants failed to run, 2 bad input or usage.";

/* ---- tuning files ---- */

int sweep_tuning_load(const char *path, const char *graph_path, const cc_graph *g, const sim_config *cfg,
                      const char **work_div, int *n, int max, char *err, size_t errlen)
{
    char *text = isa_text_read(path, ISA_TEXT_MAX, err, errlen);
    if (!text)
        return -1;
    char gname[256], *cur = text, *line;
    graph_name(graph_path, gname, sizeof gname);
    int lineno = 0, rc = 0;
    cc_result *kernels = NULL;
    const cc_graph *graph = g;
    while ((line = isa_text_line(&cur))) {
        lineno++;
        char gk[256], c[256], k[128], s[64], extra;
        if (line[0] == '#' || line[strspn(line, " \t\r")] == 0)
            continue;
        /* exactly four words, each within its field */
        if (sscanf(line, "tune %255s %255s %127s %63s %c", gk, c, k, s, &extra) != 4 || strlen(gk) == 255 ||
            strlen(c) == 255 || strlen(k) == 127 || strlen(s) == 63) {
            snprintf(err, errlen, "%s:%d: expected `tune GRAPH CONFIG KERNEL SPEC`", path, lineno);
            rc = -1;
            break;
        }
        if (strcmp(gk, gname) || strcmp(c, cfg->name))
            continue; /* another graph or chip: ignored */
        if (!kernels) {
            char e[1024];
            kernels = compile_variant(graph, cfg, NULL, NULL, e, sizeof e);
            if (!kernels)
                continue; /* the graph does not compile: cc_compile will say why */
        }
        int known = 0;
        for (int i = 0; i < cc_result_nkernels(kernels); i++)
            known |= !strcmp(k, cc_result_kernel_name(kernels, i));
        if (!known)
            continue; /* a kernel the graph no longer has: ignored */
        if (*n == max) {
            snprintf(err, errlen, "%s:%d: too many work divisions", path, lineno);
            rc = -1;
            break;
        }
        size_t len = strlen(k) + strlen(s) + 2;
        char *wd = malloc(len);
        if (!wd) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        snprintf(wd, len, "%s=%s", k, s);
        work_div[(*n)++] = wd;
    }
    free(text);
    cc_result_free(kernels);
    return rc;
}
