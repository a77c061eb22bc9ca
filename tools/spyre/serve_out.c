/* serve_out.c: spyre serve's reports under PREFIX: PREFIX.csv (one row a
 * request), PREFIX.json (percentiles, throughput, KV use over time),
 * PREFIX_latency.svg (TTFT and TPOT CDFs) and PREFIX_timeline.svg
 * (throughput and KV occupancy over time); docs/serving.md, "Reports". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

enum { SV_BINS = 100 };

/* The reports' files, prefix followed by each (serve.c checks them all
 * before a run): in this order, indexed by the enum. */
const char *const sv_report_suffixes[] = {".csv", ".json", "_latency.svg", "_timeline.svg", NULL};
enum { REPORT_CSV, REPORT_JSON, REPORT_LATENCY, REPORT_TIMELINE };

/* prefix followed by report r's suffix into path. */
static void report_path(char *path, size_t len, const char *prefix, int r)
{
    snprintf(path, len, "%s%s", prefix, sv_report_suffixes[r]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double sv_percentile(const double *v, int n, double p)
{
    if (n <= 0)
        return NAN; /* none: no TPOT when no request has two tokens */
    double *s = malloc((size_t)n * sizeof *s);
    if (!s)
        return 0;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double pos = p / 100 * (n - 1), lo = s[(int)pos], hi = s[(int)pos + ((int)pos + 1 < n)];
    double r = lo + (pos - (int)pos) * (hi - lo);
    free(s);
    return r;
}

static int write_csv(const char *path, const sv_request *req, int n, const sv_run *r)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "line,arrival_s,prompt,output,ttft_s,tpot_s,e2e_s,preemptions\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "%ld,%.9g,%d,%d,%.9g,%.9g,%.9g,%d\n", req[i].line, req[i].arrival, req[i].prompt, req[i].output,
                r->res[i].ttft, r->res[i].tpot, r->res[i].e2e, r->res[i].preemptions);
    return fclose(f);
}

/* Output tokens per second in SV_BINS equal windows of the run (x: window ends). */
static void throughput(const sv_run *r, double *x, double *y)
{
    double w = r->makespan / SV_BINS;
    for (int b = 0; b < SV_BINS; b++)
        x[b] = (b + 1) * w, y[b] = 0;
    for (long s = 0; s < r->nsteps; s++) {
        int b = w > 0 ? (int)(r->steps[s].t / w) : 0;
        y[b < SV_BINS ? b : SV_BINS - 1] += r->steps[s].tokens / w;
    }
}

/* KV blocks in use at the end of each window (the last step before it). */
static void kv_use(const sv_run *r, int kv_blocks, double *x, double *y)
{
    long s = 0;
    for (int b = 0; b < SV_BINS; b++) {
        x[b] = (b + 1) * r->makespan / SV_BINS;
        while (s + 1 < r->nsteps && r->steps[s + 1].t <= x[b])
            s++;
        y[b] = r->nsteps ? 100.0 * r->steps[s].kv_used / kv_blocks : 0;
    }
}

static double mean(const double *v, int n)
{
    double t = 0;
    for (int i = 0; i < n; i++)
        t += v[i];
    return n ? t / n : 0;
}

static void percentiles(FILE *f, const char *key, const double *v, int n)
{
    if (!n) { /* JSON has no NaN */
        fprintf(f, "  \"%s\": {\"p50\": null, \"p90\": null, \"p99\": null, \"mean\": null, \"count\": 0},\n", key);
        return;
    }
    fprintf(f, "  \"%s\": {\"p50\": %.9g, \"p90\": %.9g, \"p99\": %.9g, \"mean\": %.9g, \"count\": %d},\n", key,
            sv_percentile(v, n, 50), sv_percentile(v, n, 90), sv_percentile(v, n, 99), mean(v, n), n);
}

/* ttft[0..n) and tpot of the requests with more than one output token. */
static int latencies(const sv_request *req, int n, const sv_run *r, double *ttft, double *tpot)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        ttft[i] = r->res[i].ttft;
        if (req[i].output > 1)
            tpot[m++] = r->res[i].tpot;
    }
    return m;
}

static int write_json(const char *path, int n, const sv_run *r, int kv_blocks,
                      const double *ttft, const double *tpot, int ntpot, const double *kx, const double *ky)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"requests\": %d,\n  \"makespan_s\": %.9g,\n  \"output_tokens\": %ld,\n", n, r->makespan,
            r->out_tokens);
    fprintf(f, "  \"tokens_per_s\": %.3f,\n", r->makespan > 0 ? r->out_tokens / r->makespan : 0);
    percentiles(f, "ttft_s", ttft, n);
    percentiles(f, "tpot_s", tpot, ntpot);
    fprintf(f, "  \"prefill_steps\": %ld,\n  \"decode_steps\": %ld,\n  \"cached_chunks\": %ld,\n", r->prefill_steps,
            r->decode_steps, r->cached_chunks);
    fprintf(f, "  \"preemptions\": %ld,\n  \"kv_blocks\": %d,\n  \"kv_use_over_time\": [", r->preemptions, kv_blocks);
    for (int b = 0; b < SV_BINS; b++)
        fprintf(f, "%s{\"t_s\": %.6g, \"used_pct\": %.2f}", b ? ", " : "", kx[b], ky[b]);
    fprintf(f, "]\n}\n");
    return fclose(f);
}

/* The empirical CDF of v as a step line: x the sorted values, y the percent at or below. */
static int cdf(const double *v, int n, double *x, double *y)
{
    memcpy(x, v, (size_t)n * sizeof *x);
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    for (int i = 0; i < n; i++)
        y[i] = 100.0 * (i + 1) / n;
    return n;
}

static int write_svgs(const char *prefix, const double *ttft, int n, const double *tpot, int ntpot,
                      const double *tx, const double *ty, const double *kx, const double *ky)
{
    char path[4200];
    double *buf = malloc((size_t)(4 * n + 4) * sizeof *buf);
    if (!buf)
        return -1;
    double *ax = buf, *ay = buf + n, *bx = buf + 2 * n, *by = buf + 3 * n;
    report_path(path, sizeof path, prefix, REPORT_LATENCY);
    FILE *f = fopen(path, "w");
    int rc = f ? 0 : -1;
    if (f) {
        sv_series a = {ax, ay, cdf(ttft, n, ax, ay), "time to first token", "#1f77b4"};
        sv_series b = {bx, by, cdf(tpot, ntpot, bx, by), "time per output token", "#d62728"};
        sv_svg_begin(f, 1000, 400);
        sv_svg_panel(f, 0, 0, 500, 400, "TTFT CDF", "time to first token (s)", "requests at or below (%)", &a, 1);
        sv_svg_panel(f, 500, 0, 500, 400, "TPOT CDF", "time per output token (s)", "requests at or below (%)", &b, 1);
        sv_svg_end(f);
        rc = fclose(f);
    }
    report_path(path, sizeof path, prefix, REPORT_TIMELINE);
    f = rc ? NULL : fopen(path, "w");
    rc = f ? 0 : -1;
    if (f) {
        sv_series t = {tx, ty, SV_BINS, "output tokens/s", "#2ca02c"}, k = {kx, ky, SV_BINS, "KV blocks in use", "#9467bd"};
        sv_svg_begin(f, 1000, 400);
        sv_svg_panel(f, 0, 0, 500, 400, "Throughput", "simulated time (s)", "output tokens per second", &t, 1);
        sv_svg_panel(f, 500, 0, 500, 400, "KV cache occupancy", "simulated time (s)", "KV blocks in use (%)", &k, 1);
        sv_svg_end(f);
        rc = fclose(f);
    }
    free(buf);
    return rc;
}

int sv_write_reports(const char *prefix, const sv_request *req, int n, const sv_run *r, int kv_blocks, char *err,
                     size_t errlen)
{
    double *ttft = malloc((size_t)n * sizeof *ttft), *tpot = malloc((size_t)n * sizeof *tpot);
    double tx[SV_BINS], ty[SV_BINS], kx[SV_BINS], ky[SV_BINS];
    char path[4200];
    int rc = ttft && tpot ? 0 : -1;
    if (!rc) {
        int ntpot = latencies(req, n, r, ttft, tpot);
        throughput(r, tx, ty);
        kv_use(r, kv_blocks, kx, ky);
        report_path(path, sizeof path, prefix, REPORT_CSV);
        rc = write_csv(path, req, n, r);
        if (!rc) {
            report_path(path, sizeof path, prefix, REPORT_JSON);
            rc = write_json(path, n, r, kv_blocks, ttft, tpot, ntpot, kx, ky);
        }
        if (!rc)
            rc = write_svgs(prefix, ttft, n, tpot, ntpot, tx, ty, kx, ky);
    }
    if (rc)
        snprintf(err, errlen, "cannot write the reports %s.csv, .json, _latency.svg, _timeline.svg", prefix);
    free(ttft);
    free(tpot);
    return rc;
}
