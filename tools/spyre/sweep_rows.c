/* sweep_rows.c: the sweep's tables of rows, its CSV journal and the small file helpers. */

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sweep.h"

/* Room for one more element of `elem` bytes in the array v of n elements
 * and capacity *cap (both row tables grow this way). */
void *sw_grow_rows(void *v, int n, int *cap, size_t elem)
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

sw_row *sw_rows_push(sw_rows *rs)
{
    rs->v = sw_grow_rows(rs->v, rs->n, &rs->cap, sizeof *rs->v);
    sw_row *r = &rs->v[rs->n++];
    memset(r, 0, sizeof *r);
    return r;
}

sw_row *sw_rows_find(const sw_rows *rs, const char *kernel, const char *choice)
{
    for (int i = 0; i < rs->n; i++)
        if (!strcmp(rs->v[i].kernel, kernel) && !strcmp(rs->v[i].choice, choice))
            return &rs->v[i];
    return NULL;
}

double sw_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* mkdir -p */
int sw_make_dirs(const char *path)
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
void sw_graph_name(const char *path, char *out, size_t len)
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
char *sw_read_if_present(const char *path, char *err, size_t errlen)
{
    err[0] = 0;
    return access(path, F_OK) ? NULL : isa_text_read(path, ISA_TEXT_MAX, err, errlen);
}

/* The graph and config names of the sweep.json at path (a shard's or an
 * --out's; none when it has none) into graph and config if not known yet,
 * else the same names (256 bytes each; as says whose): rows are not
 * tagged with either, so another graph's or chip's would mix silently. */
int sw_json_names(const char *path, char *graph, char *config, const char *as, char *err, size_t errlen)
{
    char *json = sw_read_if_present(path, err, errlen), *cur = json, *line;
    char g[256] = "", c[256] = "";
    while (json && (line = isa_text_line(&cur)) && !(g[0] && c[0])) {
        sscanf(line, " \"graph\": \"%255[^\"]\"", g);
        sscanf(line, " \"config\": \"%255[^\"]\"", c);
    }
    free(json);
    if ((g[0] && graph[0] && strcmp(g, graph)) || (c[0] && config[0] && strcmp(c, config))) {
        snprintf(err, errlen, "%s: a sweep of %s on %s, not of %s on %s %s", path, g, c, graph, config, as);
        return -1;
    }
    if (!graph[0])
        snprintf(graph, 256, "%s", g);
    if (!config[0])
        snprintf(config, 256, "%s", c);
    return err[0] ? -1 : 0;
}

/* Whether the --out directory out holds no sweep of another graph or chip
 * than gname on cname (its sweep.json, if any): 0, or -1 with err. */
int sw_out_ours(const char *out, const char *gname, const char *cname, char *err, size_t errlen)
{
    char *json = isa_path_join(out, "sweep.json"), graph[256], config[256];
    snprintf(graph, sizeof graph, "%s", gname);
    snprintf(config, sizeof config, "%s", cname);
    int rc = sw_json_names(json, graph, config, "as this run: another --out", err, errlen);
    free(json);
    return rc;
}

/* Is line (without its '\n') the header line hdr (with it)? */
int sw_is_header(const char *line, const char *hdr)
{
    size_t n = strlen(hdr) - 1;
    return !strncmp(line, hdr, n) && !line[n];
}

/* ---- CSV ---- */

const char sw_csv_header[] = "index,kernel,choice,cycles,kernel_cycles,dram_bytes,mac_utilization,lx_peak,is_default,"
                             "is_best,refresh_phases\n";

void sw_csv_write_row(FILE *f, const sw_row *r)
{
    fprintf(f, "%d,%s,%s,%.12g,%.12g,%" PRIu64 ",%.6f,%" PRIu64 ",%d,%d,%d\n", r->index, r->kernel, r->choice,
            r->cycles, r->kernel_cycles, r->dram_bytes, r->mac_util, r->lx_peak, r->is_default, r->is_best, r->phases);
}

/* Each data line of the CSV file at path (not its header, not blank
 * lines) to row(line, ctx), which returns -1 for a line that is not a
 * row of the kind what names.  0 (also when the file does not exist), or
 * -1 with err. */
int sw_csv_each(const char *path, int (*is_header)(const char *line), int (*row)(const char *line, void *ctx),
                void *ctx, const char *what, char *err, size_t errlen)
{
    char *text = sw_read_if_present(path, err, errlen), *cur = text, *line;
    if (!text)
        return err[0] ? -1 : 0;
    int lineno = 0;
    while ((line = isa_text_line(&cur))) {
        lineno++;
        if ((lineno == 1 && is_header(line)) || !line[0])
            continue;
        if (row(line, ctx)) {
            snprintf(err, errlen, "%s:%d: not a %s: %.60s", path, lineno, what, line);
            free(text);
            return -1;
        }
    }
    free(text);
    return 0;
}

static int csv_header(const char *line)
{
    return !strncmp(line, "index,", 6);
}

static int csv_row(const char *line, void *ctx)
{
    sw_rows *rs = ctx;
    sw_row r = {0};
    unsigned long long dram, lx;
    int n = 0, m = 0;
    /* kernel names and choices have no commas; a row written before the
     * refresh_phases column was simulated at phase 0 only */
    r.phases = 1;
    if (sscanf(line, "%d,%63[^,],%63[^,],%lf,%lf,%llu,%lf,%llu,%d,%d%n", &r.index, r.kernel, r.choice, &r.cycles,
               &r.kernel_cycles, &dram, &r.mac_util, &lx, &r.is_default, &r.is_best, &n) != 10 ||
        (line[n] && (sscanf(line + n, ",%d%n", &r.phases, &m) != 1 || line[n + m] || r.phases < 1)))
        return -1;
    r.dram_bytes = dram;
    r.lx_peak = lx;
    r.done = 1;
    if (!sw_rows_find(rs, r.kernel, r.choice))
        *sw_rows_push(rs) = r;
    return 0;
}

/* Append the rows of a sweep.csv to rs (skipping ones already there);
 * 0 when the file does not exist, -1 with err on a malformed file. */
int sw_csv_read(const char *path, sw_rows *rs, char *err, size_t errlen)
{
    return sw_csv_each(path, csv_header, csv_row, rs, "sweep row", err, errlen);
}

/* The refresh phases every row of rs was measured at: 0 when rs has no
 * row, -1 when the rows disagree (their cycles are not comparable). */
int sw_rows_phases(const sw_rows *rs)
{
    int phases = 0;
    for (int i = 0; i < rs->n; i++) {
        if (phases && rs->v[i].phases != phases)
            return -1;
        phases = rs->v[i].phases;
    }
    return phases;
}

int sw_cmp_index(const void *a, const void *b)
{
    const sw_row *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}
