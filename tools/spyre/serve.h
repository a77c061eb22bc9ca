/* serve.h: `spyre serve` (docs/serving.md, "serve"): a discrete-event
 * serving loop with the policy of Spyre's vLLM plugin (serve_sched.c), the
 * request file (serve_req.c), step costs from simulated step graphs
 * (serve_cost.c) and the reports (serve_out.c, serve_svg.c). */
#ifndef SPYRE_SERVE_H
#define SPYRE_SERVE_H

#include <stdio.h>

extern const char serve_usage[];
extern const char serve_help[];
int cmd_serve(int argc, char **argv);

enum { SV_BLOCK_TOKENS = 64 }; /* the plugin's KV block */

/* The KV blocks that hold `tokens` positions (whole blocks, rounded up). */
int sv_blocks_for(int tokens);

/* One request of the file: tokens of prompt and output, and the first
 * `prefix` tokens of the prompt shared by every request of prefix_group
 * (-1: none). */
typedef struct {
    long line;
    double arrival;
    int prompt, output;
    int prefix_group, prefix;
} sv_request;

/* Read a JSON-lines request file; the requests (sorted by arrival) and
 * their count, or NULL with one line naming the file and line in err.
 * context: the model's positions (a request needs prompt + output - 1). */
sv_request *sv_read_requests(const char *path, int context, int *n, char *err, size_t errlen);

typedef struct {
    int max_seqs;  /* sequences running (prefill or decode) at once */
    int chunk;     /* tokens per prefill step, a multiple of the block */
    int kv_blocks; /* 64-token blocks of KV cache */
    int context;   /* positions per sequence */
} sv_policy;

/* Seconds of one step: prefill (a chunk of one sequence at `context`
 * cached positions) or decode (`batch` sequences, the longest with
 * `context` cached positions).  < 0: failed (message printed). */
typedef double (*sv_cost_fn)(void *ctx, int prefill, int batch, int context);

typedef struct {
    double ttft, tpot, e2e, first, done;
    int preemptions;
} sv_result;

/* The state after each step: its end (from the first arrival), blocks in
 * use, tokens produced. */
typedef struct {
    double t;
    int kv_used, tokens, prefill;
} sv_sample;

typedef struct {
    sv_result *res; /* one per request, in the requests' order */
    sv_sample *steps;
    long nsteps, prefill_steps, decode_steps, cached_chunks, preemptions;
    double makespan; /* from the first arrival to the last token */
    long out_tokens;
} sv_run;

/* Serve the requests (in arrival order, as sv_read_requests gives them);
 * 0, -1 (a step's cost failed) or -2 (a request that can never fit:
 * message printed); out is set either way (sv_run_free).  progress(ctx,
 * done, n) after steps. */
int sv_simulate(const sv_policy *p, const sv_request *req, int n, sv_cost_fn cost, void *ctx, sv_run *out,
                void (*progress)(void *, int, int));
void sv_run_free(sv_run *r);

/* The step-cost model of a model directory (serve_cost.c). */
typedef struct sv_costs sv_costs;
/* tp cards of `system` (tp.c splits each step graph); cache: the file of
 * known costs (NULL: DIR/costs-CONFIG.txt, at tp > 1 DIR/costs-CONFIG-tpN.txt). */
sv_costs *sv_costs_open(const char *dir, const char *config, const char *system, int tp, const char *cache, char *err,
                        size_t errlen);
int sv_costs_layers(const sv_costs *c), sv_costs_context(const sv_costs *c), sv_costs_chunk(const sv_costs *c);
/* The largest batch and context of the grid's decode step graphs. */
int sv_costs_max_batch(const sv_costs *c), sv_costs_max_context(const sv_costs *c);
/* KV blocks that fit in one card's DRAM beside its weights (*weight_bytes: one card's). */
long sv_costs_capacity_blocks(sv_costs *c, double *weight_bytes);
double sv_costs_step(void *c, int prefill, int batch, int context);
/* Simulations run and their host seconds, grid points read from the cache file. */
void sv_costs_counts(const sv_costs *c, long *sims, double *host_s, long *cached);
/* Every decode_bB_cC graph in dir: its grid-interpolated cost against a
 * direct simulation; prints one line each and the worst error.  0, -1 (a
 * step failed) or -2 (dir cannot be opened or has no such graph). */
int sv_costs_check(sv_costs *c, const char *dir, double *worst);
void sv_costs_close(sv_costs *c);

/* Reports (serve_out.c): CSV, JSON, SVG plots under prefix. */
/* The files they are: prefix followed by each suffix, NULL-ended. */
extern const char *const sv_report_suffixes[];
int sv_write_reports(const char *prefix, const sv_request *req, int n, const sv_run *r, int kv_blocks,
                     char *err, size_t errlen);
/* p-th percentile (0..100) of v[0..n), linear between order statistics. */
double sv_percentile(const double *v, int n, double p); /* NaN when n is 0 */

/* An SVG line plot panel (serve_svg.c). */
typedef struct {
    const double *x, *y;
    int n;
    const char *name, *color;
} sv_series;
void sv_svg_begin(FILE *f, int width, int height);
void sv_svg_panel(FILE *f, int x0, int y0, int w, int h, const char *title, const char *xlabel, const char *ylabel,
                  const sv_series *s, int ns);
void sv_svg_end(FILE *f);

#endif
