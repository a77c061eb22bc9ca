/* serve_cost.c: what a serving step costs, from simulated step graphs
 * (docs/serving.md, "Step costs").  A model directory
 * (traces/models/llama_serve.py grid) holds model.txt (layers, context,
 * chunk) and one layer's step graphs at a grid of shapes: prefill_cC (a
 * chunk at C cached positions, C a multiple of the chunk), decode_bB_cC (B
 * sequences, C cached positions each), and the embedding and LM head,
 * ends_prefill and ends_bB.  A step costs layers x its layer graph plus its
 * ends graph; a decode step between grid points is interpolated (bilinear
 * in batch and context), and each grid graph is compiled and simulated
 * timing-only once, its cycles kept in DIR/costs-CONFIG.txt under a hash of
 * the graph and the configuration.  At --tp N each step graph is split for
 * N cards of the system and simulated as `spyre run GRAPH --tp N
 * --no-values` does (tp.c), the slowest card's cycles its cost, cached
 * under the TP and the system too; the KV cache holds the blocks of one
 * card's DRAM beside that card's shard of the weights (each card keeps its
 * heads' part of every block). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cc.h"
#include "rt.h"
#include "serve.h"
#include "tp.h"

enum { SV_GRID_MAX = 32 };

typedef struct {
    char *path;
    uint64_t hash;
} sv_hashed;

struct sv_costs {
    char dir[4096], cache_path[4200];
    rt_device *dev;
    uint64_t config_hash; /* of the chip config, and at TP > 1 of the TP and system too */
    int tp;
    char config[256], system[256];
    int layers, context, chunk;
    double kv_token; /* KV bytes per position, all layers */
    int nb, nc, ne, batches[SV_GRID_MAX], contexts[SV_GRID_MAX], ends[SV_GRID_MAX];
    double weight_bytes; /* the model's parameters on the device */
    /* known costs in cycles: by graph name */
    struct { char name[64]; uint64_t hash; double cycles; } *known;
    int nknown, capknown;
    /* graph files hashed so far: a step's graphs are not read again */
    sv_hashed *hashed;
    int nhashed;
    long sims, cached;
    double sim_host_s;
    int cache_given, cache_warned; /* --cost-cache named; said once that it cannot be written */
};

static uint64_t fnv(uint64_t h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

/* FNV-1a of the file's bytes, or 0 if it cannot be read. */
static uint64_t file_hash(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    uint64_t h = 14695981039346656037ull;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        h = fnv(h, buf, n);
    fclose(f);
    return h;
}

/* file_hash of path, read once per run. */
static uint64_t graph_hash(sv_costs *c, const char *path)
{
    for (int i = 0; i < c->nhashed; i++)
        if (!strcmp(c->hashed[i].path, path))
            return c->hashed[i].hash;
    uint64_t h = file_hash(path);
    void *p = realloc(c->hashed, (size_t)(c->nhashed + 1) * sizeof *c->hashed);
    char *copy = p ? strdup(path) : NULL;
    if (p)
        c->hashed = p;
    if (copy)
        c->hashed[c->nhashed++] = (sv_hashed){copy, h};
    return h;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int remember(sv_costs *c, const char *name, uint64_t hash, double cycles)
{
    if (c->nknown == c->capknown) {
        const int cap = c->capknown ? 2 * c->capknown : 64;
        void *p = realloc(c->known, (size_t)cap * sizeof *c->known);
        if (!p) /* the table and its count stay as they were */
            return -1;
        c->known = p;
        c->capknown = cap;
    }
    snprintf(c->known[c->nknown].name, sizeof c->known[0].name, "%s", name);
    c->known[c->nknown].hash = hash;
    c->known[c->nknown++].cycles = cycles;
    return 0;
}

/* The graph at path split for c->tp cards, simulated as `spyre run --tp`
 * does: the slowest card's cycles, or -1. */
static double simulate_split(sv_costs *c, const char *path)
{
    char err[2048];
    double t0 = now_s(), cycles, bytes;
    if (tp_timing(path, c->tp, c->system, c->config, &cycles, &bytes, err, sizeof err)) {
        fprintf(stderr, "spyre serve: %s\n", err);
        cycles = -1;
    }
    c->sims++;
    c->sim_host_s += now_s() - t0;
    return cycles;
}

/* Compile and simulate DIR/name/graph.txt timing-only: its cycles, or -1. */
static double simulate(sv_costs *c, const char *dir, const char *name)
{
    char path[8300], err[2048];
    snprintf(path, sizeof path, "%s/%s/graph.txt", dir, name);
    if (c->tp > 1)
        return simulate_split(c, path);
    gr_graph *g = gr_graph_load(path, err, sizeof err);
    if (!g) {
        fprintf(stderr, "spyre serve: %s\n", err);
        return -1;
    }
    double t0 = now_s(), cycles = -1;
    cc_compile_opts o = {0};
    o.target = rt_config(c->dev);
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    rt_program *prog = r ? rt_load_program(c->dev, cc_result_take_program(r), err, sizeof err) : NULL;
    rt_run_result *res = prog ? malloc(sizeof *res) : NULL;
    if (res && !rt_launch(prog, res))
        cycles = res->stats.cycles;
    else if (res)
        rt_run_format(res, err, sizeof err);
    if (cycles < 0)
        fprintf(stderr, "spyre serve: %s: %s\n", path, err);
    free(res);
    rt_unload(prog);
    cc_result_free(r);
    gr_graph_free(g);
    c->sims++;
    c->sim_host_s += now_s() - t0;
    return cycles;
}

/* Cycles of graph DIR/name, simulated once: the cache (and its file) is
 * keyed by a hash of the graph and the configuration, so the same graph
 * under another directory is not simulated again. */
static double grid_cycles(sv_costs *c, const char *dir, const char *name)
{
    char path[8300];
    snprintf(path, sizeof path, "%s/%s/graph.txt", dir, name);
    uint64_t h = graph_hash(c, path) ^ c->config_hash;
    for (int i = 0; i < c->nknown; i++)
        if (c->known[i].hash == h)
            return c->known[i].cycles;
    double cycles = simulate(c, dir, name);
    if (cycles < 0 || remember(c, name, h, cycles))
        return -1;
    /* best effort: a read-only DIR just simulates again next time; every digit
     * of the cycles (a run's mean, fractional), so a rerun gives the same times */
    FILE *f = fopen(c->cache_path, "a");
    if (!f && c->cache_given && !c->cache_warned) { /* but a file the user named should be said */
        c->cache_warned = 1;
        fprintf(stderr, "spyre serve: note: --cost-cache %s: cannot write (%s): the costs will be simulated again "
                        "next run\n", c->cache_path, strerror(errno));
    }
    if (f) {
        fprintf(f, "%s %016llx %.17g\n", name, (unsigned long long)h, cycles);
        fclose(f);
    }
    return cycles;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static void add_unique(int *v, int *n, int x)
{
    for (int i = 0; i < *n; i++)
        if (v[i] == x)
            return;
    if (*n < SV_GRID_MAX)
        v[(*n)++] = x;
}

/* The decode grid from the names decode_bB_cC in the directory; every
 * (B, C) pair and every prefill_cC, ends_bB graph must be there. */
static int read_grid(sv_costs *c, char *err, size_t errlen)
{
    DIR *d = opendir(c->dir);
    if (!d)
        return snprintf(err, errlen, "%s: cannot open the model directory", c->dir), -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        int b, ctx;
        char tail;
        if (sscanf(e->d_name, "decode_b%d_c%d%c", &b, &ctx, &tail) == 2 && b > 0 && ctx > 0) {
            add_unique(c->batches, &c->nb, b);
            add_unique(c->contexts, &c->nc, ctx);
        } else if (sscanf(e->d_name, "ends_b%d%c", &b, &tail) == 1 && b > 0) {
            add_unique(c->ends, &c->ne, b);
        }
    }
    closedir(d);
    qsort(c->batches, (size_t)c->nb, sizeof(int), cmp_int);
    qsort(c->contexts, (size_t)c->nc, sizeof(int), cmp_int);
    qsort(c->ends, (size_t)c->ne, sizeof(int), cmp_int);
    if (!c->nb || !c->ne || c->ends[0] > c->batches[0] || c->ends[c->ne - 1] < c->batches[c->nb - 1])
        return snprintf(err, errlen, "%s: needs decode_bB_cC and ends_bB step graphs over the same batches "
                                     "(traces/models/llama_serve.py grid)", c->dir), -1;
    char path[8300];
    for (int i = 0; i < c->nb; i++)
        for (int j = 0; j < c->nc; j++) {
            snprintf(path, sizeof path, "%s/decode_b%d_c%d/graph.txt", c->dir, c->batches[i], c->contexts[j]);
            FILE *f = fopen(path, "r");
            if (!f)
                return snprintf(err, errlen, "%s: missing (the grid of step graphs must be whole)", path), -1;
            fclose(f);
        }
    return 0;
}

static int read_model(sv_costs *c, char *err, size_t errlen)
{
    char path[4200], line[256], key[64];
    snprintf(path, sizeof path, "%s/model.txt", c->dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return snprintf(err, errlen, "%s: cannot open (traces/models/llama_serve.py grid writes it)", path), -1;
    long v, ln = 0;
    int rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        ln++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (sscanf(line, "%63s %ld", key, &v) != 2 || v < 1 || v > 1 << 24)
            rc = (snprintf(err, errlen, "%s:%ld: expected KEY COUNT", path, ln), -1);
        else if (!strcmp(key, "layers"))
            c->layers = (int)v;
        else if (!strcmp(key, "context"))
            c->context = (int)v;
        else if (!strcmp(key, "chunk"))
            c->chunk = (int)v;
        else if (!strcmp(key, "kv_bytes_per_token"))
            c->kv_token = (double)v;
    }
    fclose(f);
    if (!rc && (!c->layers || !c->context || !c->chunk || !c->kv_token || c->chunk % SV_BLOCK_TOKENS))
        rc = (snprintf(err, errlen, "%s: needs layers, context, kv_bytes_per_token and chunk (a multiple of %d)", path,
                       SV_BLOCK_TOKENS), -1);
    return rc;
}

static void read_cache(sv_costs *c)
{
    FILE *f = fopen(c->cache_path, "r");
    char name[64];
    unsigned long long h;
    double cycles;
    while (f && fscanf(f, "%63s %llx %lf", name, &h, &cycles) == 3)
        if (!remember(c, name, (uint64_t)h, cycles))
            c->cached++;
    if (f)
        fclose(f);
}

/* At TP > 1: the system must have the cards; its file and the TP join the cache key. */
static int open_system(sv_costs *c, char *err, size_t errlen)
{
    if (c->tp == 1)
        return 0;
    char *path = chip_system_path(c->system);
    chip_system sys;
    int rc = chip_system_load(path, &sys, err, errlen);
    if (!rc && c->tp > sys.cards)
        rc = (snprintf(err, errlen, "--tp %d: the system %s has %d cards", c->tp, sys.name, sys.cards), -1);
    c->config_hash = (c->config_hash ^ file_hash(path) * 31) * 1099511628211ull + (uint64_t)c->tp;
    free(path);
    return rc;
}

sv_costs *sv_costs_open(const char *dir, const char *config, const char *system, int tp, const char *cache, char *err,
                        size_t errlen)
{
    sv_costs *c = calloc(1, sizeof *c);
    if (!c)
        return snprintf(err, errlen, "out of host memory"), NULL;
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    snprintf(c->config, sizeof c->config, "%s", config);
    snprintf(c->system, sizeof c->system, "%s", system);
    c->tp = tp;
    char *cfg = chip_config_path(config);
    c->dev = rt_open(cfg, err, errlen);
    c->config_hash = file_hash(cfg);
    const char *base = strrchr(cfg, '/') ? strrchr(cfg, '/') + 1 : cfg;
    c->cache_given = cache != NULL;
    if (cache)
        snprintf(c->cache_path, sizeof c->cache_path, "%s", cache);
    else if (tp == 1)
        snprintf(c->cache_path, sizeof c->cache_path, "%s/costs-%.*s.txt", dir, (int)strcspn(base, "."), base);
    else
        snprintf(c->cache_path, sizeof c->cache_path, "%s/costs-%.*s-tp%d.txt", dir, (int)strcspn(base, "."), base,
                 tp);
    free(cfg);
    if (!c->dev || open_system(c, err, errlen) || read_model(c, err, errlen) || read_grid(c, err, errlen)) {
        sv_costs_close(c);
        return NULL;
    }
    sim_options opt = {.values = 0, .detect_races = 0, .trace = SIM_TRACE_OFF};
    rt_set_options(c->dev, &opt);
    read_cache(c);
    return c;
}

void sv_costs_close(sv_costs *c)
{
    if (!c)
        return;
    if (c->dev)
        rt_close(c->dev);
    free(c->known);
    for (int i = 0; i < c->nhashed; i++)
        free(c->hashed[i].path);
    free(c->hashed);
    free(c);
}

int sv_costs_layers(const sv_costs *c) { return c->layers; }
int sv_costs_context(const sv_costs *c) { return c->context; }
int sv_costs_chunk(const sv_costs *c) { return c->chunk; }
int sv_costs_max_batch(const sv_costs *c) { return c->batches[c->nb - 1]; }
int sv_costs_max_context(const sv_costs *c) { return c->contexts[c->nc - 1]; }

void sv_costs_counts(const sv_costs *c, long *sims, double *host_s, long *cached)
{
    *sims = c->sims, *host_s = c->sim_host_s, *cached = c->cached;
}

/* Index i with v[i] <= x <= v[i+1] (clamped to the grid's ends), and the
 * fraction of the way. */
static int bracket(const int *v, int n, int x, double *frac)
{
    int i = 0;
    while (i + 2 < n && v[i + 1] < x)
        i++;
    if (n == 1 || x <= v[i]) {
        *frac = 0;
        return i;
    }
    *frac = (double)(x - v[i]) / (v[i + 1] - v[i]);
    return i;
}

/* Decode layer cycles at (b, ctx), bilinear between grid points, and the
 * ends' at b, linear between theirs; -1 on failure. */
static double decode_layer(sv_costs *c, int b, int ctx, double *ends)
{
    double fb, fc, fe, v[2][2], e[2];
    int i = bracket(c->batches, c->nb, b, &fb), j = bracket(c->contexts, c->nc, ctx, &fc);
    int k = bracket(c->ends, c->ne, b, &fe);
    char name[64];
    for (int d = 0; d < 2; d++) {
        snprintf(name, sizeof name, "ends_b%d", c->ends[k + (d && c->ne > 1)]);
        if ((e[d] = grid_cycles(c, c->dir, name)) < 0)
            return -1;
        for (int dj = 0; dj < 2; dj++) {
            snprintf(name, sizeof name, "decode_b%d_c%d", c->batches[i + (d && c->nb > 1)],
                     c->contexts[j + (dj && c->nc > 1)]);
            if ((v[d][dj] = grid_cycles(c, c->dir, name)) < 0)
                return -1;
        }
    }
    *ends = e[0] + fe * (e[1] - e[0]);
    double lo = v[0][0] + fc * (v[0][1] - v[0][0]), hi = v[1][0] + fc * (v[1][1] - v[1][0]);
    return lo + fb * (hi - lo);
}

static double cycles_of(sv_costs *c, int prefill, int batch, int context)
{
    char name[64];
    double layer, ends = -1;
    if (prefill) {
        snprintf(name, sizeof name, "prefill_c%d", context);
        layer = grid_cycles(c, c->dir, name);
        ends = layer < 0 ? -1 : grid_cycles(c, c->dir, "ends_prefill");
    } else if (batch > c->batches[c->nb - 1] || context > c->contexts[c->nc - 1]) {
        fprintf(stderr, "spyre serve: a decode step of %d sequences at context %d is outside the grid of %s "
                        "(batches to %d, contexts to %d)\n", batch, context, c->dir, c->batches[c->nb - 1],
                c->contexts[c->nc - 1]);
        return -1;
    } else {
        layer = decode_layer(c, batch, context, &ends);
    }
    return layer < 0 || ends < 0 ? -1 : c->layers * layer + ends;
}

double sv_costs_step(void *ctx, int prefill, int batch, int context)
{
    sv_costs *c = ctx;
    double cy = cycles_of(c, prefill, batch, context);
    return cy < 0 ? -1 : cy / (rt_config(c->dev)->clock_ghz * 1e9);
}

/* The graph of one of tp cards (its parameters the card's shards); NULL:
 * message printed.  note: say when nothing splits (a layer graph; the
 * ends are whole by design). */
static gr_graph *card_graph(const char *path, int tp, int note)
{
    char err[1024];
    gr_graph *g = gr_graph_load(path, err, sizeof err), *cg = NULL;
    cc_tp_plan *plan = g && tp > 1 ? cc_tp_split(g, tp, err, sizeof err) : NULL;
    if (note)
        tp_note_whole(path, tp, plan);
    char *text = plan ? cc_tp_graph_text(plan, NULL) : NULL;
    if (text)
        cg = gr_graph_parse(text, path, err, sizeof err);
    free(text);
    cc_tp_free(plan);
    if (g && tp > 1) {
        gr_graph_free(g);
        g = cg;
    }
    if (!g)
        fprintf(stderr, "spyre serve: %s\n", err);
    return g;
}

/* Bytes of one card's parameters (DL16; the state, the cache, is not a
 * weight) and, in *state, its state's elements; note as card_graph's. */
static double param_bytes(const char *path, int tp, int note, double *state)
{
    gr_graph *g = card_graph(path, tp, note);
    if (!g)
        return -1;
    double b = 0;
    *state = 0;
    for (int v = 0; v < g->nvalues; v++)
        if (g->values[v].kind == GR_VAL_PARAM)
            *(g->values[v].state ? state : &b) += (g->values[v].state ? 1.0 : 2.0) * gr_ttype_numel(&g->values[v].type);
    gr_graph_free(g);
    return b;
}

long sv_costs_capacity_blocks(sv_costs *c, double *weight_bytes)
{
    char layer[8300], ends[8300];
    snprintf(layer, sizeof layer, "%s/decode_b%d_c%d/graph.txt", c->dir, c->batches[0], c->contexts[0]);
    snprintf(ends, sizeof ends, "%s/ends_prefill/graph.txt", c->dir);
    double state, whole_state, s;
    double l = param_bytes(layer, c->tp, 1, &state), e = l < 0 ? -1 : param_bytes(ends, c->tp, 0, &s);
    if (e < 0 || (c->tp > 1 && param_bytes(layer, 1, 0, &whole_state) < 0))
        return -1;
    *weight_bytes = c->layers * l + e;
    /* a card keeps its heads' part of each block (all of it for key/value heads the cards share) */
    double share = c->tp > 1 && whole_state > 0 ? state / whole_state : 1;
    double block = (double)SV_BLOCK_TOKENS * c->kv_token * share;
    return (long)floor(((double)rt_config(c->dev)->dram_bytes - *weight_bytes) / block);
}

int sv_costs_check(sv_costs *c, const char *dir, double *worst)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "spyre serve: %s: cannot open\n", dir);
        return -2;
    }
    struct dirent *e;
    int rc = 0, count = 0;
    *worst = 0;
    while (!rc && (e = readdir(d))) {
        int b, ctx;
        char tail, ends_name[64];
        if (sscanf(e->d_name, "decode_b%d_c%d%c", &b, &ctx, &tail) != 2)
            continue;
        snprintf(ends_name, sizeof ends_name, "ends_b%d", b);
        double layer = grid_cycles(c, dir, e->d_name), ends = layer < 0 ? -1 : grid_cycles(c, dir, ends_name);
        double cached = ends < 0 ? -1 : cycles_of(c, 0, b, ctx);
        if (cached < 0) {
            rc = -1;
            break;
        }
        double direct = c->layers * layer + ends, err = fabs(cached - direct) / direct;
        printf("bucket_check batch=%d context=%d direct_cycles=%.0f cached_cycles=%.0f error=%.4f\n", b, ctx, direct,
               cached, err);
        *worst = err > *worst ? err : *worst;
        count++;
    }
    closedir(d);
    if (!rc && !count) {
        fprintf(stderr, "spyre serve: %s: no decode_bB_cC step graphs to check\n", dir);
        rc = -2;
    }
    return rc;
}
