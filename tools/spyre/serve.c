/* serve.c: `spyre serve REQUESTS.jsonl --model DIR`: serve a request file
 * with Spyre's vLLM plugin policy (serve_sched.c), each step's cost
 * simulated from the model's step graphs (serve_cost.c), and write the
 * reports (serve_out.c); docs/serving.md, "serve". */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"
#include "tp.h"

enum { SV_OK = 0, SV_USAGE = 2, SV_FAULT = 3 };

const char serve_usage[] = "serve REQUESTS.jsonl --model DIR [--tp N] [--max-seqs B] [--chunk 512] [--kv-blocks K] "
                           "[--config FILE] [--system NAME] [--out PREFIX] [--cost-cache FILE] [--check-buckets DIR2]";
const char serve_help[] =
    "Simulate serving the requests of REQUESTS.jsonl (one JSON object a line: arrival seconds, prompt and\n"
    "output tokens, optionally prefix_group and prefix) with a whole model of DIR (model.txt and step\n"
    "graphs: traces/models/llama_serve.py grid) on the chip of --config (default spyre), as Spyre's vLLM\n"
    "plugin serves: chunked prefill of --chunk tokens (the model's compiled chunk; default 512)\n"
    "alternating with decode steps of up to --max-seqs sequences (default 16, or the model's largest\n"
    "decode batch when smaller), the KV cache in blocks of 64 tokens (--kv-blocks, default what the DRAM\n"
    "holds beside the weights), preemption when blocks run out, prefix caching of whole chunks.  Each\n"
    "step's cost is simulated from the model's step graph at its shape (interpolated between grid shapes,\n"
    "each simulated once and kept in --cost-cache FILE, default DIR/costs-CONFIG.txt).\n"
    "Writes PREFIX.csv, PREFIX.json, PREFIX_latency.svg and PREFIX_timeline.svg (--out, default serve)\n"
    "and prints the percentiles, tokens/s and serve_sim_speed (simulated seconds per host second) last.\n"
    "--check-buckets DIR2 compares the cost of each decode_bB_cC step graph of DIR2 (with its ends_bB)\n"
    "simulated directly against the interpolated one and prints the worst error (REQUESTS optional).\n"
    "--tp N: the model split for N cards of --system (default spyre-x8; docs/multicard.md), each step\n"
    "graph simulated split N ways (the slowest card's cycles), the KV cache what one card's DRAM holds\n"
    "beside its shard of the weights; the costs kept in DIR/costs-CONFIG-tpN.txt.\n"
    "Exit status: 0 ok, 2 bad arguments or files (a bad request names its line), 3 a step faulted.";

typedef struct {
    const char *requests, *model, *config, *out, *check, *cache, *system;
    long tp, max_seqs, chunk, kv_blocks;
} sv_args;

static int bad(const char *fmt, const char *a)
{
    fprintf(stderr, "spyre serve: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    return SV_USAGE;
}

static int count_arg(const char *o, const char *v, long *out)
{
    char *end;
    errno = 0;
    *out = strtol(v, &end, 10);
    if (end == v || *end || errno || *out < 1 || *out > 1 << 24) {
        fprintf(stderr, "spyre serve: %s '%s' is not a count from 1 to %d\n", o, v, 1 << 24);
        return SV_USAGE;
    }
    return 0;
}

static int parse_args(int argc, char **argv, sv_args *a)
{
    memset(a, 0, sizeof *a);
    a->tp = 1, a->max_seqs = 0, a->out = "serve", a->config = "spyre", a->system = "spyre-x8";
    static const char *valued[] = {"--model",  "--tp",  "--max-seqs",      "--chunk",      "--kv-blocks",
                                   "--config", "--out", "--check-buckets", "--cost-cache", "--system"};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int k = -1;
        for (int j = 0; j < 10; j++)
            k = strcmp(o, valued[j]) ? k : j;
        if (k >= 0 && i + 1 >= argc)
            return bad("%s needs a value", o);
        const char *v = k >= 0 ? argv[++i] : NULL;
        long *counts[] = {NULL, &a->tp, &a->max_seqs, &a->chunk, &a->kv_blocks};
        if (k >= 1 && k <= 4 && count_arg(o, v, counts[k]))
            return SV_USAGE;
        if (k == 0 || k >= 5)
            *(k == 0 ? &a->model : k == 5 ? &a->config : k == 6 ? &a->out : k == 7 ? &a->check : k == 8 ? &a->cache
                                                                                         : &a->system) = v;
        if (k < 0 && (o[0] == '-' || a->requests))
            return bad("unexpected argument '%s' (usage: spyre serve REQUESTS.jsonl --model DIR ...)", o);
        if (k < 0)
            a->requests = o;
    }
    if (!a->model || (!a->requests && !a->check))
        return bad("needs REQUESTS.jsonl and --model DIR (usage: spyre %s)", serve_usage);
    return 0;
}

static double host_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void progress_bar(void *ctx, int done, int n)
{
    (void)ctx;
    int w = 40, k = n ? done * w / n : w;
    printf("\r[%.*s%*s] %d/%d requests", k, "########################################", w - k, "", done, n);
    fflush(stdout);
}

/* Seconds with the digits of the CSV and JSON reports (%.9g): a long
 * run's makespan keeps its microseconds. */
static void print_summary(const sv_request *req, int n, const sv_run *r)
{
    double *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return;
    printf("requests=%d\nmakespan_s=%.9g\noutput_tokens=%ld\n", n, r->makespan, r->out_tokens);
    printf("prefill_steps=%ld\ndecode_steps=%ld\ncached_chunks=%ld\npreemptions=%ld\n", r->prefill_steps,
           r->decode_steps, r->cached_chunks, r->preemptions);
    for (int k = 0; k < 2; k++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (!k || req[i].output > 1)
                v[m++] = k ? r->res[i].tpot : r->res[i].ttft;
        const char *key = k ? "tpot" : "ttft";
        printf("%s_p50_s=%.9g\n%s_p90_s=%.9g\n%s_p99_s=%.9g\n", key, sv_percentile(v, m, 50), key,
               sv_percentile(v, m, 90), key, sv_percentile(v, m, 99));
    }
    printf("tokens_per_s=%.2f\n", r->makespan > 0 ? r->out_tokens / r->makespan : 0);
    free(v);
}

/* The policy from the arguments and the model. */
static int policy(const sv_args *a, sv_costs *c, sv_policy *p)
{
    double weights;
    int most = sv_costs_max_batch(c); /* a larger decode step is outside the grid: fail now, not mid-run */
    if (a->max_seqs > most) {
        fprintf(stderr, "spyre serve: --max-seqs %ld: the model of %s has decode step graphs up to batch %d\n",
                a->max_seqs, a->model, most);
        return SV_USAGE;
    }
    p->max_seqs = a->max_seqs ? (int)a->max_seqs : most < 16 ? most : 16;
    p->chunk = sv_costs_chunk(c);
    p->context = sv_costs_context(c);
    if (a->chunk && a->chunk != p->chunk) {
        fprintf(stderr, "spyre serve: --chunk %ld: the model of %s is compiled for chunks of %d\n", a->chunk, a->model,
                p->chunk);
        return SV_USAGE;
    }
    long cap = sv_costs_capacity_blocks(c, &weights);
    if (cap < 1) {
        fprintf(stderr, "spyre serve: the model's weights (%.0f bytes) leave no room for a KV block\n", weights);
        return SV_USAGE;
    }
    if (a->kv_blocks > cap) {
        fprintf(stderr, "spyre serve: --kv-blocks %ld: the DRAM holds %ld beside the weights\n", a->kv_blocks, cap);
        return SV_USAGE;
    }
    p->kv_blocks = (int)(a->kv_blocks ? a->kv_blocks : cap > 1 << 30 ? 1 << 30 : cap);
    printf("tp=%ld\nmax_seqs=%d\nweight_bytes=%.0f\nkv_blocks=%d (%s)\n", a->tp, p->max_seqs, weights, p->kv_blocks,
           a->kv_blocks ? "--kv-blocks" : a->tp > 1 ? "one card's DRAM minus its weights" : "DRAM minus weights");
    return 0;
}

/* Does every request's last decode step lie in the grid?  Its k-th decode
 * step reads prompt + k - 1 cached positions, charged in whole blocks
 * (serve_sched.c); a grid whose contexts stop short of the model's would
 * otherwise fail at that step, after the run so far. */
static int reaches_grid(const sv_args *a, const sv_costs *c, const sv_request *req, int n)
{
    int most = sv_costs_max_context(c);
    for (int i = 0; i < n; i++) {
        int last = req[i].prompt + req[i].output - 2;
        int charged = sv_blocks_for(last) * SV_BLOCK_TOKENS;
        if (req[i].output > 1 && charged > most) {
            fprintf(stderr, "spyre serve: %s:%ld: its last decode step reads %d cached positions (%d in whole "
                            "blocks), beyond the decode graphs of %s (contexts to %d)\n",
                    a->requests, req[i].line, last, charged, a->model, most);
            return SV_USAGE;
        }
    }
    return 0;
}

/* Can PREFIX followed by suffix be written?  Asked before the run, not
 * after it (a long one: the 8B model's took minutes). */
static int report_writable(const char *prefix, const char *suffix)
{
    char path[4200];
    snprintf(path, sizeof path, "%s%s", prefix, suffix);
    const int existed = access(path, F_OK) == 0;
    FILE *f = fopen(path, "a"); /* a previous run's report stays until this one's is written */
    if (!f) {
        fprintf(stderr, "spyre serve: --out %s: cannot write %s: %s\n", prefix, path, strerror(errno));
        return SV_USAGE;
    }
    fclose(f);
    if (!existed) /* a run refused later (exit 2) or failing leaves no empty report behind */
        remove(path);
    return 0;
}

/* Can every report file of the run (PREFIX.csv, .json, the SVGs) be written? */
static int reports_writable(const char *prefix)
{
    for (int i = 0; sv_report_suffixes[i]; i++)
        if (report_writable(prefix, sv_report_suffixes[i]))
            return SV_USAGE;
    return 0;
}

/* The exit status of a -2 (bad input: usage) / -1 (a step failed) / 0 result. */
static int status_of(int rc) { return rc == -2 ? SV_USAGE : rc ? SV_FAULT : 0; }

static int serve(const sv_args *a, sv_costs *c)
{
    sv_policy p;
    char err[4200];
    int n;
    sv_request *req = sv_read_requests(a->requests, sv_costs_context(c), &n, err, sizeof err);
    if (!req)
        return bad("%s", err);
    int rc = reaches_grid(a, c, req, n);
    if (!rc)
        rc = reports_writable(a->out);
    if (!rc)
        rc = policy(a, c, &p);
    if (rc) {
        free(req);
        return rc;
    }
    double t0 = host_now();
    sv_run r;
    int tty = isatty(STDOUT_FILENO);
    rc = status_of(sv_simulate(&p, req, n, sv_costs_step, c, &r, tty ? progress_bar : NULL));
    double host_s = host_now() - t0;
    if (tty && !rc)
        progress_bar(NULL, n, n); /* the bar is drawn every 256 steps: show the end */
    if (tty)
        printf("\n");
    if (!rc && sv_write_reports(a->out, req, n, &r, p.kv_blocks, err, sizeof err))
        rc = bad("%s", err);
    if (!rc) {
        long sims, cached;
        double sim_s;
        sv_costs_counts(c, &sims, &sim_s, &cached);
        print_summary(req, n, &r);
        printf("step_graphs_simulated=%ld (%.1f host s)\nstep_costs_from_cache_file=%ld\n", sims, sim_s, cached);
        printf("reports=%s.csv %s.json %s_latency.svg %s_timeline.svg\n", a->out, a->out, a->out, a->out);
        printf("host_s=%.3f\nserve_sim_speed=%.3f\n", host_s, r.makespan / host_s);
    }
    sv_run_free(&r);
    free(req);
    return rc;
}

int cmd_serve(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: spyre %s\n\n%s\n", serve_usage, serve_help);
            return SV_OK;
        }
    if (tp_refuse_mpirun("serve", "--tp N simulates the cards in one process; run it without mpirun"))
        return SV_USAGE;
    sv_args a;
    char err[4200];
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    sv_costs *c = sv_costs_open(a.model, a.config, a.system, (int)a.tp, a.cache, err, sizeof err);
    if (!c)
        return bad("%s", err);
    if (a.check) {
        double worst;
        rc = status_of(sv_costs_check(c, a.check, &worst));
        if (!rc)
            printf("bucket_worst_error=%.4f\n", worst);
    }
    if (!rc && a.requests)
        rc = serve(&a, c);
    sv_costs_close(c);
    return rc;
}
