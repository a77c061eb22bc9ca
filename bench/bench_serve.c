/* bench_serve: serving a Llama-3-8B-size model (32 layers, timing only;
 * traces/models/llama_serve.py) with `spyre serve` on the reference chip
 * (chip/configs/spyre.cfg) at TP 1 (docs/serving.md, "bench/run serve"):
 *   1. the decode step at batch 1 and context 512, as one whole-model graph
 *      (embedding, 32 layers, norm, LM head), simulated against its
 *      roofline: (weights + the KV cache read) / DRAM bandwidth; and the
 *      same step as spyre serve composes it (32 x the layer graph + the
 *      ends graph);
 *   2. the bucketing error: 20 decode steps at seeded random shapes (batch
 *      1..16, context 64..3072 in whole 64-token blocks, as spyre serve
 *      charges a decode step), each simulated directly against the cost
 *      spyre serve interpolates from its grid (spyre serve --check-buckets);
 *   3. a seeded synthetic trace (Poisson arrivals at RATE per second,
 *      prompts 128..2048 and outputs 32..256 tokens, uniform, 64 requests)
 *      served with spyre serve's defaults: TTFT and TPOT percentiles,
 *      tokens/s and serve_sim_speed= (simulated seconds per host second), last.
 * Graphs are exported on first use (graph only, no weights) into
 * BUILD/traces/llama8b_serve (the step-graph grid), llama8b_decode_model and
 * llama8b_check; the trace and reports go to BUILD/serve.  The grid's costs
 * are kept in BUILD/traces/llama8b_serve/costs-spyre.txt: a first run
 * simulates every grid graph (minutes), later ones read them.
 * Exit status: 0 ok, 2 an export or compile failed, 3 a run faulted. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "benchutil.h"
#include "cc.h"
#include "rt.h"

enum {
    HIDDEN = 4096, KV_DIM = 8 * 128, FFN = 14336, VOCAB = 128256, LAYERS = 32,
    CONTEXT = 3072, CHUNK = 512, REQUESTS = 64, DECODE_CONTEXT = 512, ELEM_BYTES = 2
};
/* The grid spyre serve interpolates on (docs/serving.md, "Step costs"):
 * every batch (the compiler's cost is not linear in it: 4 and 8 do not
 * bound 5 to 7 within 5%) and contexts 256 apart. */
#define GRID_BATCHES "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16"
#define GRID_CONTEXTS "64,256,512,768,1024,1280,1536,1792,2048,2304,2560,2816,3072"
#define RATE 0.5 /* requests per second: about what the device serves (docs/serving.md) */

static int die(int status, const char *what, const char *msg)
{
    fprintf(stderr, "bench_serve: %s: %s\n", what, msg);
    return status;
}

static int run(const char *cmd)
{
    fflush(stdout);
    int rc = system(cmd);
    return rc == 0 ? 0 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 3;
}

/* Simulate DIR/graph.txt timing-only: its cycles, or < 0. */
static double simulate(rt_device *dev, const char *dir, double *compile_s)
{
    char path[PATH_MAX + 32], err[4096];
    snprintf(path, sizeof path, "%s/graph.txt", dir);
    gr_graph *g = gr_graph_load(path, err, sizeof err);
    if (!g)
        return die(-2, "load", err);
    isa_program *p = bench_compile(g, rt_config(dev), compile_s, err, sizeof err);
    rt_program *prog = p ? rt_load_program(dev, p, err, sizeof err) : NULL;
    gr_graph_free(g);
    if (!prog)
        return die(-2, path, err);
    rt_run_result *res = malloc(sizeof *res);
    double cycles = res && !rt_launch(prog, res) ? res->stats.cycles : -3;
    if (res && cycles < 0) {
        rt_run_format(res, err, sizeof err);
        die(3, path, err);
    }
    free(res);
    rt_unload(prog);
    return cycles;
}

/* 1: the whole decode step at batch 1 against its roofline and against
 * the sum of its parts. */
static int decode_roofline(const char *src, const char *build, const char *model)
{
    char dir[PATH_MAX + 64], cmd[4 * PATH_MAX];
    snprintf(dir, sizeof dir, "%s/traces/llama8b_decode_model", build);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/traces/models/llama_serve.py' step '%s' 8b decode_model 1 %d %d >&2",
             src, dir, DECODE_CONTEXT, LAYERS);
    if (run(cmd))
        return die(2, "export", cmd);
    rt_device *dev = bench_open("bench_serve");
    bench_sim_options(dev, 0, 0);
    const chip_config *cfg = rt_config(dev);
    double bw = cfg->dram_channels * (double)cfg->dram_burst_bytes / (cfg->dram_burst_tck * cfg->dram_tck_ns) * 1e9;
    double layer_params = 2.0 * HIDDEN * HIDDEN + 2.0 * HIDDEN * KV_DIM + 3.0 * HIDDEN * FFN + 2.0 * HIDDEN;
    double weights = (LAYERS * layer_params + (double)VOCAB * HIDDEN + HIDDEN) * ELEM_BYTES; /* + one embedding row */
    double kv = LAYERS * 2.0 * DECODE_CONTEXT * KV_DIM * ELEM_BYTES;
    double bound_us = (weights + kv) / bw * 1e6, compile_s, c2;
    double whole = simulate(dev, dir, &compile_s);
    char part[PATH_MAX + 256];
    snprintf(part, sizeof part, "%s/decode_b1_c%d", model, DECODE_CONTEXT);
    double layer = whole < 0 ? -1 : simulate(dev, part, &c2);
    snprintf(part, sizeof part, "%s/ends_b1", model);
    double ends = layer < 0 ? -1 : simulate(dev, part, &c2);
    double us = whole / cfg->clock_ghz / 1e3;
    rt_close(dev);
    if (ends < 0)
        return 3;
    printf("decode_b1_min_bytes=%.0f (weights %.0f + KV read %.0f)\n", weights + kv, weights, kv);
    printf("decode_b1_roofline_us=%.1f\ndecode_b1_whole_model_compile_s=%.1f\n", bound_us, compile_s);
    printf("decode_b1_whole_model_sim_us=%.1f\n", us);
    printf("decode_b1_composed_sim_us=%.1f (32 x layer + ends, as spyre serve charges)\n",
           (LAYERS * layer + ends) / cfg->clock_ghz / 1e3);
    printf("decode_b1_composed_vs_whole=%.4f\n", (LAYERS * layer + ends) / whole);
    printf("decode_b1_vs_roofline=%.3f\n", us / bound_us);
    return 0;
}

/* xorshift64*: the trace's generator (seeded, the same on every host). */
static double uniform(uint64_t *s)
{
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static int write_trace(const char *path, int n, uint64_t seed)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return die(2, path, "cannot write");
    double t = 0;
    for (int i = 0; i < n; i++) {
        t += -log(1 - uniform(&seed)) / RATE;
        int prompt = 128 + (int)(uniform(&seed) * (2048 - 128 + 1));
        int output = 32 + (int)(uniform(&seed) * (256 - 32 + 1));
        fprintf(f, "{\"arrival\": %.4f, \"prompt\": %d, \"output\": %d}\n", t, prompt, output);
    }
    return fclose(f) ? die(2, path, "cannot write") : 0;
}

int main(int argc, char **argv)
{
    char src[PATH_MAX], build[PATH_MAX], model[PATH_MAX + 64], cmd[8 * PATH_MAX], out[PATH_MAX + 64];
    int n = argc > 1 ? atoi(argv[1]) : REQUESTS; /* bench_serve N: another trace length */
    if (bench_dirs(src, sizeof src, build, sizeof build))
        return die(2, "/proc/self/exe", "cannot find the build directory");
    snprintf(model, sizeof model, "%s/traces/llama8b_serve", build);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/traces/models/llama_serve.py' grid '%s' 8b %d %d %s %s %s >&2", src,
             model, CONTEXT, CHUNK, GRID_BATCHES, GRID_CONTEXTS, GRID_BATCHES);
    if (run(cmd))
        return die(2, "export", cmd);
    int rc = decode_roofline(src, build, model);
    if (rc)
        return rc;
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/traces/models/llama_serve.py' random '%s/traces/llama8b_check_blocks' 8b "
             "20 16 %d 1 >&2 && '%s/spyre' serve --model '%s' --check-buckets '%s/traces/llama8b_check_blocks'",
             src, build, CONTEXT, build, model, build);
    if ((rc = run(cmd)))
        return rc;
    snprintf(out, sizeof out, "%s/serve", build);
    mkdir(out, 0777);
    snprintf(out, sizeof out, "%s/serve/trace%d.jsonl", build, n);
    if ((rc = write_trace(out, n, 17)))
        return rc;
    printf("trace=%s (Poisson arrivals at %.2f/s, prompts 128..2048, outputs 32..256, seed 17)\n", out, RATE);
    snprintf(cmd, sizeof cmd, "'%s/spyre' serve '%s' --model '%s' --out '%s/serve/serve%d'", build, out,
             model, build, n);
    return run(cmd);
}
