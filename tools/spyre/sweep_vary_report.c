/* sweep_vary_report.c: --vary's rows, their CSV journal, configs.svg and the best configuration. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

sw_vrow *sw_vrows_push(sw_vrows *rs)
{
    rs->v = sw_grow_rows(rs->v, rs->n, &rs->cap, sizeof *rs->v);
    sw_vrow *r = &rs->v[rs->n++];
    memset(r, 0, sizeof *r);
    return r;
}

sw_vrow *sw_vrows_find(const sw_vrows *rs, const char *config)
{
    for (int i = 0; i < rs->n; i++)
        if (!strcmp(rs->v[i].config, config))
            return &rs->v[i];
    return NULL;
}

const char sw_vary_header[] = "index,config,status,cycles,dram_bytes,mac_utilization,lx_peak,is_best,message\n";

/* The message is the last column, quoted, with quotes doubled. */
void sw_vary_write_row(FILE *f, const sw_vrow *r)
{
    fprintf(f, "%d,%s,%s,%.12g,%" PRIu64 ",%.6f,%" PRIu64 ",%d,\"", r->index, r->config, r->failed ? "failed" : "ok",
            r->cycles, r->dram_bytes, r->mac_util, r->lx_peak, r->is_best);
    for (const char *m = r->message; *m; m++)
        fprintf(f, *m == '"' ? "\"\"" : "%c", *m);
    fprintf(f, "\"\n");
}

static int vary_header(const char *line)
{
    return sw_is_header(line, sw_vary_header);
}

static int vary_row(const char *line, void *ctx)
{
    sw_vrows *rs = ctx;
    sw_vrow r = {0};
    char status[8];
    unsigned long long dram, lx;
    int at = -1;
    if (sscanf(line, "%d,%255[^,],%7[^,],%lf,%llu,%lf,%llu,%d,%n", &r.index, r.config, status, &r.cycles, &dram,
               &r.mac_util, &lx, &r.is_best, &at) != 8 || at < 0 || line[at] != '"' ||
        (strcmp(status, "ok") && strcmp(status, "failed")))
        return -1;
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
    if (!sw_vrows_find(rs, r.config))
        *sw_vrows_push(rs) = r;
    return 0;
}

/* Append the rows of a --vary sweep.csv to rs (skipping configurations
 * already there); 0 when the file does not exist, -1 with err on a
 * malformed file. */
int sw_vary_csv_read(const char *path, sw_vrows *rs, char *err, size_t errlen)
{
    return sw_csv_each(path, vary_header, vary_row, rs, "--vary sweep row", err, errlen);
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
    snprintf(t, sizeof t, "whole-graph cycles per configuration (green: best %.200s; red: does not compile)",
             best >= 0 ? rs->v[best].config : "none");
    sw_svg_open(f, W, H, t);
    fprintf(f, "<path d=\"M%.0f %.0f V%.0f H%.0f\" stroke=\"black\" fill=\"none\"/>\n", l, top, bot, r);
    snprintf(t, sizeof t, "%.0f", ymax);
    sw_svg_text(f, l - 4, top + 4, "end", 10, t);
    sw_svg_text(f, l - 4, bot, "end", 10, "0");
    sw_svg_text(f, (l + r) / 2, H - 10, "middle", 11, "configuration");
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

static void vary_row_at(FILE *f, const void *rows, int i)
{
    sw_vary_write_row(f, (const sw_vrow *)rows + i);
}

/* Mark the best configuration, rewrite sweep.csv, write sweep.json and
 * configs.svg, print a line per configuration and, last,
 * best_config=VALUES cycles=N.  Returns the exit status. */
int sw_vary_finish(sw_vrows *rs, const char *out, const char *graph, const char *config)
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
    FILE *f = sw_csv_then_json(&o, out, sw_vary_header, vary_row_at, rs->v, rs->n, graph, config);
    if (!f)
        return SW_USAGE;
    fprintf(f, ",\n  \"configurations\": %d,\n  \"failed\": %d,\n  \"best_config\": ", rs->n, nfailed);
    sw_json_str(f, best >= 0 ? rs->v[best].config : "");
    fprintf(f, ",\n  \"best_cycles\": %.12g,\n  \"rows\": [", best >= 0 ? rs->v[best].cycles : -1.0);
    for (int i = 0; i < rs->n; i++) {
        const sw_vrow *r = &rs->v[i];
        fprintf(f, "%s\n    {\"index\": %d, \"config\": ", i ? "," : "", r->index);
        sw_json_str(f, r->config);
        fprintf(f, ", \"status\": \"%s\", \"cycles\": %.12g, \"dram_bytes\": %" PRIu64 ", \"mac_utilization\": %.6f, "
                   "\"lx_peak\": %" PRIu64 ", \"is_best\": %s, \"message\": ", r->failed ? "failed" : "ok", r->cycles,
                r->dram_bytes, r->mac_util, r->lx_peak, r->is_best ? "true" : "false");
        sw_json_str(f, r->message);
        fputc('}', f);
    }
    fprintf(f, "\n  ]\n}\n");
    if (sw_out_close(&o))
        return SW_USAGE;

    if ((f = sw_out_open(&o, out, "configs.svg"))) { /* reported, the sweep goes on */
        vary_svg(f, rs, best);
        sw_out_close(&o);
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
