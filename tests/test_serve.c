/* test_serve.c: spyre serve's policy (serve_sched.c) on small
 * configurations with a synthetic step cost (prefill chunk 1 s, decode step
 * 0.1 s), each expected time worked out by hand from the policy's rules in
 * docs/serving.md: admission up to max_seqs, prefill chunks alternating
 * with decode steps, preemption of the latest admitted sequence when KV
 * blocks run out (recompute), whole-chunk prefix caching; the request
 * file's errors (one line naming the line, exit 2); and spyre serve end
 * to end on traces/serve_tiny (reports written; a step's cost equal to
 * its graphs simulated by spyre run). */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve.h"
#include "testutil.h"

/* Times below are sums of a few steps of 1 s and 0.1 s: exact to well
 * under a microsecond in doubles. */
#define EPS 1e-9

static double flat_cost(void *ctx, int prefill, int batch, int context)
{
    (void)ctx, (void)batch, (void)context;
    return prefill ? 1.0 : 0.1;
}

static sv_request req(double arrival, int prompt, int output, int group, int prefix)
{
    static long line;
    return (sv_request){++line, arrival, prompt, output, group, prefix};
}

/* max_seqs 1: B waits for A to finish; max_seqs 2: B's prefill comes
 * between A's decode steps. */
static void test_admission_limit(void)
{
    sv_request r[2] = {req(0, 64, 3, -1, 0), req(0, 64, 3, -1, 0)};
    sv_policy p = {.max_seqs = 1, .chunk = 64, .kv_blocks = 100, .context = 256};
    sv_run run;
    CU_ASSERT_EQUAL_FATAL(sv_simulate(&p, r, 2, flat_cost, NULL, &run, NULL), 0);
    /* A: prefill to 1 (token 1), decodes to 1.1, 1.2; B then 2.2, 2.3, 2.4 */
    CU_ASSERT_DOUBLE_EQUAL(run.res[0].ttft, 1.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(run.res[0].e2e, 1.2, EPS);
    CU_ASSERT_DOUBLE_EQUAL(run.res[0].tpot, 0.1, EPS);
    CU_ASSERT_DOUBLE_EQUAL(run.res[1].ttft, 2.2, EPS);
    CU_ASSERT_DOUBLE_EQUAL(run.res[1].e2e, 2.4, EPS);
    CU_ASSERT_EQUAL(run.decode_steps, 4);
    sv_run_free(&run);

    p.max_seqs = 2;
    CU_ASSERT_EQUAL_FATAL(sv_simulate(&p, r, 2, flat_cost, NULL, &run, NULL), 0);
    /* A prefill 1; decode A 1.1; B prefill 2.1; decode A+B 2.2 (A done); decode B 2.3 */
    CU_ASSERT_DOUBLE_EQUAL(run.res[0].ttft, 1.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(run.res[0].e2e, 2.2, EPS);
    CU_ASSERT_DOUBLE_EQUAL(run.res[0].tpot, 0.6, EPS);
    CU_ASSERT_DOUBLE_EQUAL(run.res[1].ttft, 2.1, EPS);
    CU_ASSERT_DOUBLE_EQUAL(run.res[1].e2e, 2.3, EPS);
    CU_ASSERT_EQUAL(run.decode_steps, 3);
    CU_ASSERT_EQUAL(run.out_tokens, 6);
    sv_run_free(&run);
}

/* 3 blocks of 64 for two sequences of 64 + 70 - 1 positions (3 blocks
 * each): B, admitted last, is preempted at its first decode step (it needs
 * its second block, none is free) and recomputes its 65 tokens after A. */
static void test_preemption(void)
{
    sv_request r[2] = {req(0, 64, 70, -1, 0), req(0, 64, 70, -1, 0)};
    sv_policy p = {.max_seqs = 2, .chunk = 64, .kv_blocks = 3, .context = 256};
    sv_run run;
    CU_ASSERT_EQUAL_FATAL(sv_simulate(&p, r, 2, flat_cost, NULL, &run, NULL), 0);
    CU_ASSERT_EQUAL(run.res[0].preemptions, 0);
    CU_ASSERT_EQUAL(run.res[1].preemptions, 1);
    CU_ASSERT_EQUAL(run.preemptions, 1);
    /* A: prefill 1, decode 1.1, (B prefill 2.1), then alone: token 70 at 2.2 + 67 x 0.1 */
    CU_ASSERT_DOUBLE_EQUAL(run.res[0].e2e, 8.9, EPS);
    CU_ASSERT_DOUBLE_EQUAL(run.res[0].tpot, (8.9 - 1.0) / 69, EPS);
    /* B: first token at 2.1 stays; after A, two chunks (64 + 1 tokens) to 10.9, 68 decodes */
    CU_ASSERT_DOUBLE_EQUAL(run.res[1].ttft, 2.1, EPS);
    CU_ASSERT_DOUBLE_EQUAL(run.res[1].e2e, 10.9 + 6.8, EPS);
    CU_ASSERT_EQUAL(run.prefill_steps, 4);
    CU_ASSERT_EQUAL(run.decode_steps, 69 + 68);
    sv_run_free(&run);
}

/* Prompts of 192 (3 chunks of 64) sharing a 128-token prefix: the second
 * request of the group computes only its last chunk; another group shares
 * nothing; a prompt that is all prefix still computes its last chunk. */
static void test_prefix_cache(void)
{
    sv_request r[4] = {req(0, 192, 1, 0, 128), req(0, 192, 1, 0, 128), req(0, 192, 1, 1, 128), req(0, 128, 1, 0, 128)};
    sv_policy p = {.max_seqs = 1, .chunk = 64, .kv_blocks = 100, .context = 256};
    sv_run run;
    CU_ASSERT_EQUAL_FATAL(sv_simulate(&p, r, 4, flat_cost, NULL, &run, NULL), 0);
    CU_ASSERT_DOUBLE_EQUAL(run.res[0].e2e, 3.0, EPS); /* 3 chunks */
    CU_ASSERT_DOUBLE_EQUAL(run.res[1].e2e, 4.0, EPS); /* 2 cached, 1 computed */
    CU_ASSERT_DOUBLE_EQUAL(run.res[2].e2e, 7.0, EPS); /* group 1: all 3 */
    CU_ASSERT_DOUBLE_EQUAL(run.res[3].e2e, 8.0, EPS); /* chunk 0 cached, chunk 1 computed */
    CU_ASSERT_EQUAL(run.cached_chunks, 3);
    CU_ASSERT_EQUAL(run.prefill_steps, 3 + 1 + 3 + 1);
    CU_ASSERT_EQUAL(run.decode_steps, 0);
    sv_run_free(&run);
}

/* A request needing more blocks than there are can never run. */
static void test_request_larger_than_cache(void)
{
    sv_request r[1] = {req(0, 200, 10, -1, 0)}; /* 209 positions: 4 blocks */
    sv_policy p = {.max_seqs = 2, .chunk = 64, .kv_blocks = 3, .context = 256};
    sv_run run;
    CU_ASSERT_EQUAL(sv_simulate(&p, r, 1, flat_cost, NULL, &run, NULL), -2);
    CU_ASSERT_PTR_NULL(run.res); /* no step ran: nothing to free */
    sv_run_free(&run);
}

/* --kv-blocks too small for one request: the one line naming it, exit 2
 * (it crashed freeing reports never made). */
static void test_kv_blocks_below_one_request_is_a_usage_error(void)
{
    const char *text = "{\"arrival\": 0, \"prompt\": 250, \"output\": 7}\n"; /* 256 positions: 4 blocks */
    char path[4096], args[16384], out[4096];
    tu_write_tmpfile(".jsonl", text, strlen(text), path, sizeof path);
    snprintf(args, sizeof args, "serve %s --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --out %s.out --cost-cache %s.costs "
             "--kv-blocks 3", path, path, path);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "spyre serve: the request of line 1 needs 4 KV blocks of 64 tokens, more than the 3 "
                                       "there are\n"));
    CU_ASSERT_PTR_NULL(strstr(out, "requests=")); /* no summary */
    remove(path);
}

static void test_percentile(void)
{
    double v[5] = {5, 1, 4, 2, 3}; /* sorted 1..5: p50 3, p90 between 4 and 5 at 0.6 */
    CU_ASSERT_DOUBLE_EQUAL(sv_percentile(v, 5, 50), 3.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_percentile(v, 5, 90), 4.6, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_percentile(v, 5, 100), 5.0, EPS);
    CU_ASSERT(isnan(sv_percentile(v, 0, 50))); /* none: no percentile */
}

/* Each bad file gives one line naming its line, and exit 2. */
static void test_bad_request_files(void)
{
    static const struct { const char *text, *want; } cases[] = {
        {"{\"arrival\": 0, \"prompt\": 10, \"output\": 5}\n{\"arrival\": 1, \"output\": 5}\n", ":2: missing field \"prompt\""},
        {"{\"arrival\": 0, \"prompt\": 10, \"output\": -3}\n", ":1: \"output\" must be a whole number"},
        {"{\"prompt\": 10, \"output\": 3}\n", ":1: missing field \"arrival\""},
        {"\n{\"arrival\": -1, \"prompt\": 10, \"output\": 3}\n", ":2: \"arrival\" must be"},
        {"{\"arrival\": 0, \"prompt\": 300, \"output\": 3}\n", ":1: a prompt of 300 tokens is longer than the model's context of 256"},
        {"{\"arrival\": 0, \"prompt\": 250, \"output\": 10}\n", ":1: prompt 250 and output 10 need 259 positions"},
        {"{\"arrival\": 0, \"prompt\": 10, \"output\": 3, \"prefix\": 4}\n", ":1: \"prefix\" without \"prefix_group\""},
        {"{\"arrival\": 0, \"prompt\": 10\n", ":1: not a JSON object"},
        {"{\"arrival\": 0, \"prompt\": 10, \"output\": 3}{\"arrival\": 0, \"prompt\": 10, \"output\": 3}\n",
         ":1: text after the JSON object: one request a line"},
    };
    char path[4096], args[16384], out[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_write_tmpfile(".jsonl", cases[i].text, strlen(cases[i].text), path, sizeof path);
        snprintf(args, sizeof args, "serve %s --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --out %s.out --cost-cache %s.costs",
                 path, path, path);
        CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, cases[i].want));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, path));
        CU_ASSERT_EQUAL(strchr(out, '\n'), out + strlen(out) - 1); /* one line */
        if (!strstr(out, cases[i].want))
            fprintf(stderr, "case %zu: %s", i, out);
        remove(path);
    }
    /* --check-buckets of a directory that is not there or holds no decode graph: a bad argument (was 3, a fault) */
    CU_ASSERT_EQUAL(tu_spyre("serve --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --check-buckets /nonexistent-dir", out,
                             sizeof out), 2);
    CU_ASSERT_STRING_EQUAL(out, "spyre serve: /nonexistent-dir: cannot open\n");
    CU_ASSERT_EQUAL(tu_spyre("serve --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --check-buckets " SPYRE_SOURCE_DIR
                             "/traces/models", out, sizeof out), 2);
    CU_ASSERT_STRING_EQUAL(out, "spyre serve: " SPYRE_SOURCE_DIR "/traces/models: no decode_bB_cC step graphs to check\n");
    CU_ASSERT_EQUAL(tu_spyre("serve x.jsonl --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --tp 9", out, sizeof out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--tp 9: the system spyre-x8 has 8 cards"));
}

/* Five requests at once on serve_tiny, whose grid stops at batch 4: the
 * default --max-seqs is 4 (16 ran into a decode step of 5 outside the
 * grid, exit 3 after the whole run); --max-seqs 5 is refused up front. */
static void test_max_seqs_is_bounded_by_the_grid(void)
{
    char path[4096], args[16384], out[8192], text[512] = "";
    for (int i = 0; i < 5; i++)
        strcat(text, "{\"arrival\": 0, \"prompt\": 10, \"output\": 5}\n");
    tu_write_tmpfile(".jsonl", text, strlen(text), path, sizeof path);
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args, "serve %s --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --out %s.out "
                 "--cost-cache %s.costs%s", path, path, path, k ? " --max-seqs 5" : "");
        CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), k ? 2 : 0);
        if (!k) {
            CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nmax_seqs=4\n"));
            CU_ASSERT_PTR_NOT_NULL(strstr(out, "\noutput_tokens=25\n"));
        } else {
            CU_ASSERT_STRING_EQUAL(out, "spyre serve: --max-seqs 5: the model of " SPYRE_SOURCE_DIR "/traces/serve_tiny "
                                        "has decode step graphs up to batch 4\n");
        }
    }
    char rm[3 * 4096 + 64];
    snprintf(rm, sizeof rm, "rm -f %s %s.out* %s.costs", path, path, path);
    CU_ASSERT_EQUAL(system(rm), 0);
}

/* The tiny model end to end: every request in the CSV, SVGs with ticks,
 * and the grid's interpolation within 5% of direct simulations. */
static void test_serve_tiny(void)
{
    const char *text = "{\"arrival\": 0, \"prompt\": 100, \"output\": 20}\n"
                       "{\"arrival\": 0.00001, \"prompt\": 150, \"output\": 40, \"prefix_group\": \"s\", \"prefix\": 128}\n"
                       "{\"arrival\": 0.00002, \"prompt\": 130, \"output\": 30, \"prefix_group\": \"s\", \"prefix\": 128}\n";
    char dir[4096], path[4200], args[16384], *out = malloc(65536);
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/r.jsonl", dir);
    tu_write_file(path, text, strlen(text));
    snprintf(args, sizeof args, "serve %s --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --out %s/o --kv-blocks 64 "
             "--cost-cache %s/costs.txt", path, dir, dir); /* never a file in the source tree */
    CU_ASSERT_EQUAL_FATAL(tu_spyre(args, out, 65536), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "cached_chunks=2\n")); /* the third reuses the second's two prefix chunks */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "output_tokens=90\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nserve_sim_speed="));
    snprintf(path, sizeof path, "%s/o.csv", dir);
    char *csv = tu_read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(csv);
    int lines = 0;
    for (char *p = csv; *p; p++)
        lines += *p == '\n';
    CU_ASSERT_EQUAL(lines, 4);
    free(csv);
    snprintf(path, sizeof path, "%s/o_latency.svg", dir);
    char *svg = tu_read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "time to first token (s)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "text-anchor=\"end\">100</text>")); /* the 100% tick */
    free(svg);
    tu_rmtree(dir);
    free(out);
}

/* "key=NUMBER" in text, or -1. */
static double key_value(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    return p ? strtod(p + strlen(key), NULL) : -1;
}

/* One request of one chunk (prompt 64, output 1) at TP tp: its TTFT is the
 * step cost, 2 layers x the prefill layer graph + the ends graph, each as
 * `spyre run --no-values` (with --tp) simulates it, at the config's 1.5 GHz. */
static void step_cost_is_the_graphs_at(int tp)
{
    char *out = malloc(65536), dir[4096], path[4200], args[16384], tpflag[32] = "";
    double cycles[2];
    static const char *graph[2] = {"prefill_c0", "ends_prefill"};
    if (tp > 1)
        snprintf(tpflag, sizeof tpflag, " --tp %d", tp);
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args, "run " SPYRE_SOURCE_DIR "/traces/serve_tiny/%s/graph.txt --no-values%s", graph[k],
                 tpflag);
        CU_ASSERT_EQUAL_FATAL(tu_spyre(args, out, 65536), 0);
        cycles[k] = key_value(out, "\ncycles=");
        CU_ASSERT_FATAL(cycles[k] > 0);
    }
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/one.jsonl", dir);
    const char *one = "{\"arrival\": 0, \"prompt\": 64, \"output\": 1}\n";
    tu_write_file(path, one, strlen(one));
    snprintf(args, sizeof args, "serve %s --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --out %s/o --cost-cache %s/c.txt%s",
             path, dir, dir, tpflag);
    CU_ASSERT_EQUAL_FATAL(tu_spyre(args, out, 65536), 0);
    double want = (2 * cycles[0] + cycles[1]) / 1.5e9;
    /* run prints whole cycles of a fractional count: half a cycle each,
     * 2 x 0.5 + 0.5 in all */
    CU_ASSERT_DOUBLE_EQUAL(key_value(out, "ttft_p50_s="), want, want * 1e-8 + 1.5 / 1.5e9);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "prefill_steps=1\ndecode_steps=0\n"));
    /* one output token has no time per output token: not 0 */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\ntpot_p50_s=nan\ntpot_p90_s=nan\ntpot_p99_s=nan\n"));
    /* nor in the report, where JSON has no NaN */
    char jpath[4300];
    snprintf(jpath, sizeof jpath, "%s/o.json", dir);
    size_t jn;
    char *json = tu_read_file(jpath, &jn);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"tpot_s\": {\"p50\": null, \"p90\": null, \"p99\": null, \"mean\": null, \"count\": 0}"));
    free(json);
    tu_rmtree(dir);
    free(out);
}

static void test_step_cost_is_the_graphs(void) { step_cost_is_the_graphs_at(1); }

/* At TP 2 the step costs are the graphs split two ways, as `spyre run --tp 2`
 * runs them (the allreduces included), not TP 1's. */
static void test_step_cost_at_tp2_is_the_split_graphs(void) { step_cost_is_the_graphs_at(2); }

/* At TP 2 each card holds its shard of the weights: less than TP 1's, more
 * than half (the norms and the shared key/value heads are whole on every
 * card); the KV cache is what that card's DRAM holds beside them. */
static void test_tp2_weights_per_card(void)
{
    char *out = malloc(65536), dir[4096], path[4200], args[16384];
    double w[2], blocks[2];
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/one.jsonl", dir);
    const char *one = "{\"arrival\": 0, \"prompt\": 64, \"output\": 1}\n";
    tu_write_file(path, one, strlen(one));
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args, "serve %s --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --out %s/o "
                 "--cost-cache %s/c%d.txt --tp %d", path, dir, dir, k, k + 1);
        CU_ASSERT_EQUAL_FATAL(tu_spyre(args, out, 65536), 0);
        w[k] = key_value(out, "weight_bytes=");
        blocks[k] = key_value(out, "kv_blocks=");
    }
    CU_ASSERT(w[1] < w[0] && w[1] > w[0] / 2);
    CU_ASSERT(blocks[1] >= blocks[0]);
    tu_rmtree(dir);
    free(out);
}

/* A run of 96 us (one request on serve_tiny): makespan_s and ttft_p50_s
 * on stdout and in the JSON are the CSV's end to end time and TTFT to its
 * nine digits (stdout printed 0.000, then six digits), and the 100
 * kv_use_over_time points have 100 distinct times (t_s was rounded to
 * 0.1 ms: all 0.0000 or 0.0001). */
static void test_short_runs_report_their_times(void)
{
    char *out = malloc(65536), dir[4096], path[4200], args[16384];
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/one.jsonl", dir);
    const char *one = "{\"arrival\": 0, \"prompt\": 10, \"output\": 5}\n";
    tu_write_file(path, one, strlen(one));
    snprintf(args, sizeof args, "serve %s --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --out %s/o --cost-cache %s/c.txt",
             path, dir, dir);
    CU_ASSERT_EQUAL_FATAL(tu_spyre(args, out, 65536), 0);
    snprintf(path, sizeof path, "%s/o.csv", dir);
    char *csv = tu_read_file(path, NULL);
    const char *row = csv ? strstr(csv, "\n1,") : NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    double e2e = 0, ttft = 0;
    CU_ASSERT_EQUAL(sscanf(row, "\n1,%*[^,],%*[^,],%*[^,],%lf,%*[^,],%lf", &ttft, &e2e), 2);
    CU_ASSERT(e2e > 5e-5 && e2e < 2e-4);
    CU_ASSERT_DOUBLE_EQUAL(key_value(out, "makespan_s="), e2e, e2e * 1e-8);
    CU_ASSERT_DOUBLE_EQUAL(key_value(out, "ttft_p50_s="), ttft, ttft * 1e-8);
    snprintf(path, sizeof path, "%s/o.json", dir);
    char *json = tu_read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    CU_ASSERT_DOUBLE_EQUAL(key_value(json, "\"makespan_s\": "), e2e, e2e * 1e-8);
    double last = 0;
    int points = 0, rising = 0;
    for (const char *p = strstr(json, "\"t_s\": "); p; p = strstr(p + 1, "\"t_s\": ")) {
        double t = strtod(p + 7, NULL);
        points++, rising += t > last, last = t;
    }
    CU_ASSERT_EQUAL(points, 100);
    CU_ASSERT_EQUAL(rising, 100);
    CU_ASSERT_DOUBLE_EQUAL(last, e2e, e2e * 1e-5);
    free(json);
    free(csv);
    tu_rmtree(dir);
    free(out);
}

/* A decode step's cost reads its grid graphs once: with them deleted after
 * the first step the same step costs the same.  (Each step hashed its
 * graph files again, reading them from disk: 20,000 requests on
 * serve_tiny took 26 s, 0.5 s now.) */
static void test_step_costs_read_the_graphs_once(void)
{
    char dir[4096], cmd[5 * 4096 + 256], err[1024];
    tu_tmpdir(dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "cp -r " SPYRE_SOURCE_DIR "/traces/serve_tiny/model.txt " SPYRE_SOURCE_DIR
             "/traces/serve_tiny/decode_* " SPYRE_SOURCE_DIR "/traces/serve_tiny/ends_* " SPYRE_SOURCE_DIR
             "/traces/serve_tiny/prefill_* %s/", dir);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/costs.txt", dir);
    sv_costs *c = sv_costs_open(dir, "spyre", "spyre-x8", 1, cmd, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    double first = sv_costs_step(c, 0, 3, 100); /* between batches 2 and 4, contexts 64 and 128 */
    CU_ASSERT(first > 1e-6 && first < 1e-3);
    snprintf(cmd, sizeof cmd, "rm -r %s/decode_b2_c64 %s/decode_b4_c128 %s/ends_b2 %s/ends_b4", dir, dir, dir, dir);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    CU_ASSERT_EQUAL(sv_costs_step(c, 0, 3, 100), first);
    sv_costs_close(c);
    tu_rmtree(dir);
}

/* serve_tiny without its context-256 decode graphs (contexts to 128, the
 * model's context still 256): prompt 120 and output 10 end at 128 cached
 * positions and run; output 11 ends at 129, 192 in whole blocks, and is
 * refused before the run naming its line (it ran until that step, then
 * exited 3 "outside the grid"). */
static void test_requests_beyond_the_grids_contexts_are_refused_up_front(void)
{
    char dir[4096], cmd[6 * 4096], out[8192];
    tu_tmpdir(dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "cd " SPYRE_SOURCE_DIR "/traces/serve_tiny && cp -r model.txt ends_* prefill_* "
             "decode_b*_c64 decode_b*_c128 %s/", dir);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    for (int output = 10; output <= 11; output++) {
        char text[4400], path[4200];
        snprintf(path, sizeof path, "%s/r.jsonl", dir);
        snprintf(text, sizeof text, "{\"arrival\": 0, \"prompt\": 120, \"output\": %d}\n", output);
        tu_write_file(path, text, strlen(text));
        snprintf(cmd, sizeof cmd, "serve %s --model %s --out %s/o --cost-cache %s/c.txt", path, dir, dir, dir);
        CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), output == 10 ? 0 : 2);
        if (output == 10) {
            TU_ASSERT_CONTAINS(out, "\noutput_tokens=10\n");
        } else {
            snprintf(text, sizeof text, "%s/r.jsonl:1: its last decode step reads 129 cached positions (192 in whole "
                     "blocks), beyond", dir);
            TU_ASSERT_CONTAINS(out, text, "(contexts to 128)\n");
            TU_ASSERT_LACKS(out, "requests=");
        }
    }
    tu_rmtree(dir);
}

/* One request (10 prompt tokens, 5 out) in a new temporary .jsonl file,
 * its name into path. */
static void write_one_request(char *path, size_t len)
{
    const char *one = "{\"arrival\": 0, \"prompt\": 10, \"output\": 5}\n";
    tu_write_tmpfile(".jsonl", one, strlen(one), path, len);
}

/* --cost-cache in a directory that is not there: the run serves, and one
 * note says the costs were not kept (nothing was said). */
static void test_unwritable_cost_cache_is_said_once(void)
{
    char path[4096], args[16384], out[8192];
    write_one_request(path, sizeof path);
    snprintf(args, sizeof args, "serve %s --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --out %s.o "
             "--cost-cache /nonexistent-dir/costs.txt", path, path);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
    const char *note = "spyre serve: note: --cost-cache /nonexistent-dir/costs.txt: cannot write (No such file or "
                       "directory): the costs will be simulated again next run\n";
    const char *at = strstr(out, note);
    CU_ASSERT_PTR_NOT_NULL(at);
    CU_ASSERT(at && !strstr(at + strlen(note), "note:")); /* once, though 8 graphs were simulated */
    TU_ASSERT_CONTAINS(out, "\noutput_tokens=5\n", "step_graphs_simulated=8 ");
    snprintf(args, sizeof args, "rm -f %s %s.o*", path, path);
    CU_ASSERT_EQUAL(system(args), 0);
}

/* The line of text at key (a leading newline of key skipped), into buf ("" when absent). */
static void line_of(const char *text, const char *key, char *buf, size_t len)
{
    const char *p = strstr(text, key);
    p = p && *p == '\n' ? p + 1 : p;
    size_t n = p ? strcspn(p, "\n") : 0;
    snprintf(buf, len, "%.*s", (int)n, p ? p : "");
}

/* The same 20 requests arriving at 1000 s (a log's timestamps) and at 0:
 * the same makespan, tokens/s and timeline (tokens_per_s was 0.40 and
 * makespan 1000 s, every step in the timeline's last window). */
static void test_reports_start_at_the_first_arrival(void)
{
    char dir[4096], path[4200], args[16384], a[3][128], b[3][128], *out = malloc(65536), *svg[2];
    const char *keys[3] = {"\nmakespan_s=", "\ntokens_per_s=", "\nttft_p50_s="};
    tu_tmpdir(dir, sizeof dir);
    for (int k = -1; k < 2; k++) { /* k -1 fills the cost cache: k 0 reads it as k 1 does */
        char text[2048] = "";
        for (int i = 0; i < 20; i++)
            snprintf(text + strlen(text), sizeof text - strlen(text), /* at once: no arrival ties a step's end */
                     "{\"arrival\": %d, \"prompt\": %d, \"output\": 20}\n", k > 0 ? 1000 : 0, 10 + 10 * i);
        snprintf(path, sizeof path, "%s/r%d.jsonl", dir, k);
        tu_write_file(path, text, strlen(text));
        snprintf(args, sizeof args, "serve %s --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --out %s/o%d "
                 "--cost-cache %s/c.txt", path, dir, k, dir);
        CU_ASSERT_EQUAL_FATAL(tu_spyre(args, out, 65536), 0);
        if (k < 0)
            continue;
        for (int j = 0; j < 3; j++)
            line_of(out, keys[j], k ? b[j] : a[j], sizeof a[j]);
        snprintf(path, sizeof path, "%s/o%d_timeline.svg", dir, k);
        svg[k] = tu_read_file(path, NULL);
    }
    for (int j = 0; j < 3; j++)
        CU_ASSERT_STRING_EQUAL(a[j], b[j]);
    CU_ASSERT(key_value(a[1], "tokens_per_s=") > 1e4); /* 400 tokens in a few ms */
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg[0]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(svg[1]);
    CU_ASSERT_STRING_EQUAL(svg[0], svg[1]);
    free(svg[0]);
    free(svg[1]);
    tu_rmtree(dir);
    free(out);
}

/* The same file served twice, the first run filling the cost cache and the
 * second reading it: the same times (the cache kept the cycles rounded to
 * whole ones, so the second run's TTFT p50 was 1.3546e-3 s, the first's
 * 1.35458e-3). */
static void test_cached_costs_give_the_simulated_times(void)
{
    char dir[4096], path[4200], args[16384], line[2][3][128], *out = malloc(65536), text[2048] = "";
    const char *keys[3] = {"\nttft_p50_s=", "\ntpot_p50_s=", "\ntokens_per_s="};
    tu_tmpdir(dir, sizeof dir);
    for (int i = 0; i < 20; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text),
                 "{\"arrival\": 0, \"prompt\": %d, \"output\": 20}\n", 10 + 10 * i);
    snprintf(path, sizeof path, "%s/r.jsonl", dir);
    tu_write_file(path, text, strlen(text));
    snprintf(args, sizeof args, "serve %s --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --out %s/o --cost-cache "
             "%s/c.txt", path, dir, dir);
    for (int k = 0; k < 2; k++) {
        CU_ASSERT_EQUAL_FATAL(tu_spyre(args, out, 65536), 0);
        TU_ASSERT_CONTAINS(out, k ? "\nstep_graphs_simulated=0 " : "\nstep_costs_from_cache_file=0\n");
        for (int j = 0; j < 3; j++)
            line_of(out, keys[j], line[k][j], sizeof line[k][j]);
    }
    for (int j = 0; j < 3; j++)
        CU_ASSERT_STRING_EQUAL(line[0][j], line[1][j]);
    CU_ASSERT(strlen(line[0][0]) > 12);
    tu_rmtree(dir);
    free(out);
}

/* --out in a directory that is not there: one line before the run, exit 2
 * (the run was simulated first, then its reports failed). */
static void test_unwritable_reports_are_refused_before_the_run(void)
{
    char path[4096], args[16384], out[8192];
    write_one_request(path, sizeof path);
    snprintf(args, sizeof args, "serve %s --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --out /nonexistent-dir/o "
             "--cost-cache %s.c", path, path);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 2);
    CU_ASSERT_STRING_EQUAL(out, "spyre serve: --out /nonexistent-dir/o: cannot write /nonexistent-dir/o.csv: No such "
                                "file or directory\n");
    snprintf(args, sizeof args, "rm -f %s %s.c", path, path);
    CU_ASSERT_EQUAL(system(args), 0);
}

/* A run refused after the --out check (--max-seqs beyond the grid, exit 2)
 * leaves no PREFIX.csv where there was none: the check made an empty one. */
static void test_refused_run_leaves_no_empty_report(void)
{
    char path[4096], args[16384], out[8192], csv[4200];
    write_one_request(path, sizeof path);
    snprintf(csv, sizeof csv, "%s.out.csv", path);
    snprintf(args, sizeof args, "serve %s --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --out %s.out "
             "--cost-cache %s.c --max-seqs 5", path, path, path);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 2);
    CU_ASSERT_EQUAL(access(csv, F_OK), -1);
    snprintf(args, sizeof args, "rm -f %s %s.c %s", path, path, csv);
    CU_ASSERT_EQUAL(system(args), 0);
}

/* Every report file is checked before the run, not only the CSV: a
 * PREFIX.json that is a directory is named (exit 2), and the CSV checked
 * before it is not left behind empty. */
static void test_each_unwritable_report_file_is_refused_before_the_run(void)
{
    char dir[4096], path[4200], args[16384], out[8192], want[16384];
    const char *one = "{\"arrival\": 0, \"prompt\": 10, \"output\": 5}\n";
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/o.json", dir);
    CU_ASSERT_EQUAL(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/r.jsonl", dir);
    tu_write_file(path, one, strlen(one));
    snprintf(args, sizeof args, "serve %s --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --out %s/o "
             "--cost-cache %s/c", path, dir, dir);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 2);
    snprintf(want, sizeof want, "spyre serve: --out %s/o: cannot write %s/o.json: Is a directory\n", dir, dir);
    CU_ASSERT_STRING_EQUAL(out, want);
    snprintf(path, sizeof path, "%s/o.csv", dir);
    CU_ASSERT_EQUAL(access(path, F_OK), -1);
    tu_rmtree(dir);
}

int main(void)
{
    static const tu_test tests[] = {
        {"admission_limit", test_admission_limit},
        {"preemption", test_preemption},
        {"prefix_cache", test_prefix_cache},
        {"request_larger_than_cache", test_request_larger_than_cache},
        {"kv_blocks_below_one_request_is_a_usage_error", test_kv_blocks_below_one_request_is_a_usage_error},
        {"percentile", test_percentile},
        {"bad_request_files", test_bad_request_files},
        {"max_seqs_is_bounded_by_the_grid", test_max_seqs_is_bounded_by_the_grid},
        {"serve_tiny", test_serve_tiny},
        {"step_cost_is_the_graphs", test_step_cost_is_the_graphs},
        {"step_cost_at_tp2_is_the_split_graphs", test_step_cost_at_tp2_is_the_split_graphs},
        {"tp2_weights_per_card", test_tp2_weights_per_card},
        {"short_runs_report_their_times", test_short_runs_report_their_times},
        {"step_costs_read_the_graphs_once", test_step_costs_read_the_graphs_once},
        {"unwritable_cost_cache_is_said_once", test_unwritable_cost_cache_is_said_once},
        {"reports_start_at_the_first_arrival", test_reports_start_at_the_first_arrival},
        {"cached_costs_give_the_simulated_times", test_cached_costs_give_the_simulated_times},
        {"unwritable_reports_are_refused_before_the_run", test_unwritable_reports_are_refused_before_the_run},
        {"refused_run_leaves_no_empty_report", test_refused_run_leaves_no_empty_report},
        {"each_unwritable_report_file_is_refused_before_the_run",
         test_each_unwritable_report_file_is_refused_before_the_run},
        {"requests_beyond_the_grids_contexts_are_refused_up_front",
         test_requests_beyond_the_grids_contexts_are_refused_up_front},
        {NULL, NULL},
    };
    return tu_run("serve", tests);
}
