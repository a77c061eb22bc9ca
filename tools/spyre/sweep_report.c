/* sweep_report.c: the report writer: best per kernel, sweep.json and an SVG per kernel. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

int sw_kernels_of(const sw_rows *rs, sw_kernel *ks, int max)
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

/* An SVG's opening: W x H on white, the title top left. */
void sw_svg_open(FILE *f, double W, double H, const char *title)
{
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\">\n",
            W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    sw_svg_text(f, 20, 25, "start", 14, title);
}

void sw_svg_text(FILE *f, double x, double y, const char *anchor, int size, const char *s)
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
    snprintf(t, sizeof t, "%.63s: kernel cycles per work division (blue: default %.23s, green: best %.23s)", k->name,
             k->def >= 0 ? rs->v[k->def].choice : "?", k->best >= 0 ? rs->v[k->best].choice : "?");
    sw_svg_open(f, W, H, t);
    /* axes */
    fprintf(f, "<path d=\"M%.0f %.0f V%.0f H%.0f\" stroke=\"black\" fill=\"none\"/>\n", bl, top, bot, br);
    fprintf(f, "<path d=\"M%.0f %.0f V%.0f H%.0f\" stroke=\"black\" fill=\"none\"/>\n", sl, top, bot, sr);
    snprintf(t, sizeof t, "%.0f", ymax);
    sw_svg_text(f, bl - 4, top + 4, "end", 10, t);
    sw_svg_text(f, sl - 4, top + 4, "end", 10, t);
    sw_svg_text(f, bl - 4, bot, "end", 10, "0");
    sw_svg_text(f, sl - 4, bot, "end", 10, "0");
    snprintf(t, sizeof t, "%.0f", xmax);
    sw_svg_text(f, sr, bot + 14, "end", 10, t);
    sw_svg_text(f, (sl + sr) / 2, bot + 30, "middle", 11, "kernel DRAM bytes");
    sw_svg_text(f, (bl + br) / 2, H - 10, "middle", 11, "variant (work division)");
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

void sw_json_str(FILE *f, const char *s)
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
FILE *sw_out_open(isa_outfile *o, const char *dir, const char *name)
{
    char err[1024], *path = isa_path_join(dir, name);
    int rc = isa_out_open(o, path, err, sizeof err);
    if (rc)
        fprintf(stderr, "spyre sweep: %s\n", err);
    free(path);
    return rc ? NULL : o->f;
}

/* Finish a file of out_open: 0, or -1 (message printed). */
int sw_out_close(isa_outfile *o)
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
    FILE *f = sw_out_open(o, dir, "sweep.json");
    if (!f)
        return NULL;
    fprintf(f, "{\n  \"graph\": ");
    sw_json_str(f, graph ? graph : "");
    fprintf(f, ",\n  \"config\": ");
    sw_json_str(f, config ? config : "");
    return f;
}

/* Rewrite DIR/sweep.csv (hdr, then row(f, rows, i) for i < n), then open
 * DIR/sweep.json as json_open does: that file, or NULL (message
 * printed). */
FILE *sw_csv_then_json(isa_outfile *o, const char *dir, const char *hdr, void (*row)(FILE *f, const void *rows, int i),
                       const void *rows, int n, const char *graph, const char *config)
{
    FILE *f = sw_out_open(o, dir, "sweep.csv");
    if (!f)
        return NULL;
    fputs(hdr, f);
    for (int i = 0; i < n; i++)
        row(f, rows, i);
    if (sw_out_close(o))
        return NULL;
    return json_open(o, dir, graph, config);
}

static void csv_row_at(FILE *f, const void *rows, int i)
{
    sw_csv_write_row(f, (const sw_row *)rows + i);
}

/* Mark defaults and bests, rewrite sweep.csv, write sweep.json and the
 * SVGs, print the per-kernel summary and the last line.  Returns the exit
 * status. */
int sw_finish(sw_rows *rs, const char *out, const char *graph, const char *config)
{
    qsort(rs->v, (size_t)rs->n, sizeof *rs->v, sw_cmp_index);
    static sw_kernel ks[SIM_MAX_KERNELS];
    for (int i = 0; i < rs->n; i++)
        rs->v[i].is_best = 0;
    int nk = sw_kernels_of(rs, ks, SIM_MAX_KERNELS);
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
    FILE *f = sw_csv_then_json(&o, out, sw_csv_header, csv_row_at, rs->v, rs->n, graph, config);
    if (!f)
        return SW_USAGE;
    fprintf(f, ",\n  \"variants\": %d,\n  \"refresh_phases\": %d,\n  \"default_cycles\": %.12g,\n"
               "  \"best_cycles\": %.12g,\n  \"default_vs_best\": %.6f,\n  \"kernels\": [",
            rs->n, sw_rows_phases(rs), def, best, def > 0 && best > 0 ? def / best : 0.0);
    for (int k = 0; k < nk; k++) {
        const sw_row *d = ks[k].def >= 0 ? &rs->v[ks[k].def] : NULL, *b = &rs->v[ks[k].best];
        fprintf(f, "%s\n    {\"kernel\": ", k ? "," : "");
        sw_json_str(f, ks[k].name);
        fprintf(f, ", \"variants\": %d, \"default\": ", ks[k].n);
        sw_json_str(f, d ? d->choice : "");
        fprintf(f, ", \"best\": ");
        sw_json_str(f, b->choice);
        fprintf(f, ", \"default_cycles\": %.12g, \"best_cycles\": %.12g, \"default_vs_best\": %.6f, "
                   "\"default_kernel_cycles\": %.12g, \"best_kernel_cycles\": %.12g}", d ? d->cycles : -1, b->cycles,
                d && b->cycles > 0 ? d->cycles / b->cycles : 0.0, d ? d->kernel_cycles : -1, b->kernel_cycles);
    }
    fprintf(f, "\n  ],\n  \"rows\": [");
    for (int i = 0; i < rs->n; i++) {
        const sw_row *r = &rs->v[i];
        fprintf(f, "%s\n    {\"index\": %d, \"kernel\": ", i ? "," : "", r->index);
        sw_json_str(f, r->kernel);
        fprintf(f, ", \"choice\": ");
        sw_json_str(f, r->choice);
        fprintf(f, ", \"cycles\": %.12g, \"kernel_cycles\": %.12g, \"dram_bytes\": %" PRIu64
                   ", \"mac_utilization\": %.6f, \"lx_peak\": %" PRIu64 ", \"is_default\": %s, \"is_best\": %s"
                   ", \"refresh_phases\": %d}",
                r->cycles, r->kernel_cycles, r->dram_bytes, r->mac_util, r->lx_peak,
                r->is_default ? "true" : "false", r->is_best ? "true" : "false", r->phases);
    }
    fprintf(f, "\n  ]\n}\n");
    if (sw_out_close(&o))
        return SW_USAGE;

    for (int k = 0; k < nk; k++) {
        char name[80];
        snprintf(name, sizeof name, "%.63s.svg", ks[k].name);
        if ((f = sw_out_open(&o, out, name))) { /* a plot that fails is reported, the sweep goes on */
            write_svg(f, rs, &ks[k]);
            sw_out_close(&o);
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
