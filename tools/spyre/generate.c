/* generate.c: `spyre generate DIR`: greedy generation with a whole
 * decoder-only model exported as two steps, DIR/prefill and DIR/decode
 * (traces/models/decoder_gen.py), whose KV cache is state
 * (docs/graph-format.md, "State"): both programs loaded on one device, the
 * prefill run once on the prompt, then one decode step per new token, the
 * cache staying in device DRAM.  Or a plain causal LM exported as one step
 * over its whole context, DIR/step (tools/export.py --generate), rerun
 * for each token.  Prints each step's cycles, the tokens, the time to
 * first token and the time per output token (docs/serving.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cc.h"
#include "generate.h"
#include "isa.h"
#include "rt.h"
#include "tp.h"

enum { GEN_OK = 0, GEN_USAGE = 2, GEN_FAULT = 3, GEN_MAX_CARDS = 64 };
#define GEN_MAX_TOKENS 65536

const char generate_usage[] = "generate DIR --prompt T1,T2,... --max-new-tokens N [--config FILE] [--tp N] "
                              "[--system NAME] [--no-values]";
const char generate_help[] =
    "Generate tokens greedily with a whole decoder-only model: DIR holds its two steps as export\n"
    "directories, DIR/prefill (the prompt, padded to its fixed length, at positions 0..) and DIR/decode\n"
    "(one token), each with inputs %ids: i64[1, S] and %pos: i64[S], the logits f32[1, S, VOCAB] as\n"
    "its first output and the KV cache as state (docs/graph-format.md).  Both are compiled for the\n"
    "chip of --config (default spyre) and loaded on one device; the prefill runs once, then a decode\n"
    "step per further token, the cache resident in device DRAM.  Or DIR holds DIR/step, a plain causal\n"
    "LM over its whole context (ids i64[1, CONTEXT] -> logits f32[1, CONTEXT, VOCAB], no cache;\n"
    "tools/export.py --generate CONTEXT): each token reruns it on the prompt and the tokens so far,\n"
    "padded with token 0, and reads the logits of the last.  Prints each step's simulated cycles\n"
    "and token, the tokens, the time to first token (the prefill step) and the time per output token\n"
    "(the mean decode step; for DIR/step the mean later step, a whole context's) at the chip's clock.\n"
    "--no-values simulates timing only (no weights are read: graphs exported with --graph-only will\n"
    "do; the tokens are then not computed and every decode step is fed token 0).\n"
    "--tp N splits the steps for N cards of --system (default spyre-x8, its chip that of --config when\n"
    "given; docs/multicard.md): every card holds its shards of the weights and its part of the KV\n"
    "cache in its own DRAM, the cards meet at the allreduces, a step's cycles are the slowest card's\n"
    "and the token is card 0's argmax.\n"
    "Exit status: 0 ok, 2 bad arguments or files, 3 a step faulted.";

typedef struct {
    const char *dir, *config, *system;
    int tp;
    int64_t prompt[GEN_MAX_TOKENS];
    int nprompt;
    long max_new;
    int values;
} gen_args;

/* The cards: one device each (one card: no link), their system. */
typedef struct {
    int n;
    rt_device *dev[GEN_MAX_CARDS];
    chip_system sys;
} gen_cards;

/* One step program: its graph, the program (on each card), its ids input
 * (and positions), its logits tensor and shape. */
typedef struct {
    gr_graph *g;
    rt_program *prog, *cards[GEN_MAX_CARDS]; /* prog: card 0's */
    char ids[GR_TENSOR_NAME_MAX], logits[GR_TENSOR_NAME_MAX];
    int positioned;              /* has %pos: i64[S] */
    int64_t seq, vocab, context; /* tokens per run, logits per token, cache positions (or the plain step's) */
} gen_step;

static int bad(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "spyre generate: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return GEN_USAGE;
}

/* "1,2,3": token ids >= 0 into a->prompt. */
static int parse_prompt(const char *s, gen_args *a)
{
    const char *p = s;
    a->nprompt = 0;
    while (*p) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || (*end && *end != ',') || a->nprompt == GEN_MAX_TOKENS)
            return bad("--prompt '%s' is not a list of token ids such as 1,2,3%s", s, "");
        a->prompt[a->nprompt++] = v;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return bad("--prompt '%s' is not a list of token ids such as 1,2,3%s", s, "");
    }
    return a->nprompt ? 0 : bad("--prompt '%s' has no token%s", s, "");
}

static int parse_args(int argc, char **argv, gen_args *a)
{
    memset(a, 0, sizeof *a);
    a->values = 1;
    a->max_new = -1;
    a->tp = 1;
    a->system = "spyre-x8";
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(o, "--no-values")) {
            a->values = 0;
        } else if (!strcmp(o, "--prompt") || !strcmp(o, "--max-new-tokens") || !strcmp(o, "--config") ||
                   !strcmp(o, "--tp") || !strcmp(o, "--system")) {
            if (!has)
                return bad("%s needs a value%s", o, "");
            const char *v = argv[++i];
            if (!strcmp(o, "--config")) {
                a->config = v;
            } else if (!strcmp(o, "--system")) {
                a->system = v;
            } else if (!strcmp(o, "--tp")) {
                char *end;
                long n = strtol(v, &end, 10);
                if (end == v || *end || n < 1 || n > GEN_MAX_CARDS)
                    return bad("--tp '%s' is not a number of cards from 1 to 64%s", v, "");
                a->tp = (int)n;
            } else if (!strcmp(o, "--prompt")) {
                if (parse_prompt(v, a))
                    return GEN_USAGE;
            } else {
                char *end;
                errno = 0;
                a->max_new = strtol(v, &end, 10);
                if (end == v || *end || errno || a->max_new < 1 || a->max_new > GEN_MAX_TOKENS)
                    return bad("--max-new-tokens '%s' is not a count from 1 to 65536%s", v, "");
            }
        } else if (o[0] == '-' || a->dir) {
            return bad("unexpected argument '%s' (usage: spyre %s)", o, generate_usage);
        } else {
            a->dir = o;
        }
    }
    if (!a->dir || !a->nprompt || a->max_new < 0)
        return bad("needs DIR, --prompt and --max-new-tokens (usage: spyre %s)%s", generate_usage, "");
    return 0;
}

/* The value of g named name, or -1. */
static const gr_value *named(const gr_graph *g, const char *name)
{
    int v = gr_graph_find(g, name);
    return v >= 0 ? &g->values[v] : NULL;
}

/* Is the step's first output the logits of its s->seq tokens, f32[1, S,
 * VOCAB]?  Sets the vocabulary and the logits' tensor. */
static int logits_shape(gen_step *s, const char *path)
{
    const gr_graph *g = s->g;
    const gr_value *out = g->noutputs ? &g->values[g->outputs[0]] : NULL;
    if (!out || out->ntuple || out->type.rank != 3 || out->type.shape[0] != 1 || out->type.shape[1] != s->seq)
        return bad("%s: its first output must be the logits, f32[1, S, VOCAB]%s", path, "");
    s->vocab = out->type.shape[2];
    gr_tensor_name(out->name, s->logits);
    return 0;
}

/* Does the step graph have the shape generate drives: %ids i64[1, S],
 * %pos i64[S], logits f32[1, S, V] first, a state update?  Sets the sizes. */
static int step_shape(gen_step *s, const char *path)
{
    const gr_graph *g = s->g;
    const gr_value *ids = named(g, "ids"), *pos = named(g, "pos");
    if (!ids || ids->kind != GR_VAL_INPUT || ids->type.rank != 2 || ids->type.shape[0] != 1 || !pos ||
        pos->kind != GR_VAL_INPUT || pos->type.rank != 1 || pos->type.shape[0] != ids->type.shape[1])
        return bad("%s: needs inputs %%ids: i64[1, S] and %%pos: i64[S]%s", path, "");
    s->seq = ids->type.shape[1];
    s->positioned = 1;
    gr_tensor_name(ids->name, s->ids);
    if (logits_shape(s, path))
        return GEN_USAGE;
    if (!g->nupdates)
        return bad("%s: has no state update (the KV cache: docs/graph-format.md)%s", path, "");
    const gr_update *u = &g->updates[0];
    s->context = g->values[u->state].type.shape[u->dim];
    return 0;
}

/* Is the step a plain causal LM's (tools/export.py --generate): one input,
 * the ids i64[1, CONTEXT], the logits f32[1, CONTEXT, V] first, no state
 * (its positions are the module's own, 0..CONTEXT-1)? */
static int plain_shape(gen_step *s, const char *path)
{
    const gr_graph *g = s->g;
    const gr_value *ids = g->ninputs == 1 ? &g->values[g->inputs[0]] : NULL;
    if (!ids || ids->type.dtype != GR_I64 || ids->type.rank != 2 || ids->type.shape[0] != 1)
        return bad("%s: needs one input, the ids i64[1, CONTEXT] (tools/export.py --generate)%s", path, "");
    s->seq = s->context = ids->type.shape[1];
    gr_tensor_name(ids->name, s->ids);
    if (logits_shape(s, path))
        return GEN_USAGE;
    if (g->nupdates)
        return bad("%s: has state; a plain step reruns the whole context and keeps none%s", path, "");
    return 0;
}

/* The graph of DIR/NAME, checked by shape. */
static int read_step(const gen_args *a, const char *name, gen_step *s, int (*shape)(gen_step *, const char *))
{
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s/%s", a->dir, name);
    s->g = gr_graph_load(path, err, sizeof err);
    if (!s->g)
        return bad("%s%s", err, "");
    return shape(s, path) ? GEN_USAGE : 0;
}

/* Step s compiled for the cards' chip and loaded on each (split for them
 * when several: tp.c), with its weights and the cache's initial value
 * (each card's shards) when values are on. */
static int load_step(const gen_cards *k, const gen_args *a, gen_step *s)
{
    char err[1024];
    const char *path = s->g->path;
    if (k->n > 1) {
        if (tp_load_split(path, k->n, k->dev, a->values, s->cards, err, sizeof err))
            return bad("%s: %s", path, err);
        s->prog = s->cards[0];
        return 0;
    }
    cc_compile_opts o = {0};
    o.target = rt_config(k->dev[0]);
    cc_result *r = cc_compile(s->g, &o, err, sizeof err);
    if (!r)
        return bad("%s: %s", path, err);
    s->prog = s->cards[0] = rt_load_program(k->dev[0], cc_result_take_program(r), err, sizeof err);
    cc_result_free(r);
    if (!s->prog || (a->values && rt_load_graph_tensors(s->prog, s->g, NULL, err, sizeof err)))
        return bad("%s: %s", path, err);
    return 0;
}

/* Step s on every card, *res the slowest card's result (or the failed
 * card's, whose fault is no other card's).  A fresh link each step: a
 * link's cards leave it when their run ends.  The number of failed cards. */
static int launch(gen_step *s, const gen_cards *k, rt_run_result *res)
{
    if (k->n == 1)
        return rt_launch(s->prog, res) != 0;
    rt_run_result *r = calloc((size_t)k->n, sizeof *r);
    void *link = rt_threads_link_new(&k->sys, k->n);
    if (!r || !link)
        abort(); /* out of host memory */
    for (int c = 0; c < k->n; c++)
        rt_set_link(k->dev[c], &rt_threads_link_ops, link, c);
    int failed = rt_launch_cards(s->cards, k->n, r), pick = -1;
    for (int c = 0; c < k->n; c++) {
        char line[1024] = "";
        if (failed && r[c].status != RT_RUN_OK)
            rt_run_format(&r[c], line, sizeof line);
        if (failed ? r[c].status != RT_RUN_OK && (pick < 0 || !strstr(line, " failed: "))
                   : pick < 0 || r[c].stats.cycles > r[pick].stats.cycles)
            pick = c;
    }
    *res = r[pick];
    rt_threads_link_free(link);
    free(r);
    return failed;
}

/* Run step s on tokens ids[0..n) at positions from start (the rest of its
 * fixed length padded with token 0 at the positions after; a step without
 * %pos has its own, 0..); the run's result goes to *res and, with values,
 * the argmax of the logits of token n - 1 to *token. */
static int run_step(gen_step *s, const gen_args *a, const gen_cards *k, const int64_t *ids, int n, int64_t start,
                    rt_run_result *res, int64_t *token)
{
    char err[1024];
    float *in = calloc((size_t)s->seq * 2, sizeof *in), *logits = NULL;
    int rc = in ? 0 : bad("out of host memory%s%s", "", "");
    for (int64_t k = 0; k < s->seq && !rc; k++) {
        in[k] = k < n ? (float)ids[k] : 0;
        in[s->seq + k] = (float)(start + k);
    }
    for (int c = 0; c < k->n && !rc; c++)
        if (rt_set_input(s->cards[c], s->ids, in, err, sizeof err) ||
            (s->positioned && rt_set_input(s->cards[c], "pos", in + s->seq, err, sizeof err)))
            rc = bad("%s%s", err, "");
    if (!rc && launch(s, k, res)) {
        char line[1024];
        rt_run_format(res, line, sizeof line);
        fprintf(stderr, "spyre generate: %s: %s\n", s->g->path, line);
        rc = GEN_FAULT;
    }
    *token = 0;
    if (!rc && a->values) {
        logits = malloc((size_t)(s->seq * s->vocab) * sizeof *logits);
        if (!logits || rt_read_tensor(s->prog, s->logits, logits, err, sizeof err))
            rc = bad("%s: %s", s->g->path, logits ? err : "out of host memory");
        for (int64_t v = 1; !rc && v < s->vocab; v++) /* the first of equal maxima, as torch.argmax */
            if (logits[(n - 1) * s->vocab + v] > logits[(n - 1) * s->vocab + *token])
                *token = v;
    }
    free(logits);
    free(in);
    return rc;
}

/* Are the prompt's tokens in the vocabulary? */
static int in_vocabulary(const gen_args *a, int64_t vocab)
{
    char n[64], m[64];
    for (int i = 0; i < a->nprompt; i++)
        if (a->prompt[i] >= vocab) {
            snprintf(n, sizeof n, "%lld", (long long)a->prompt[i]);
            snprintf(m, sizeof m, "%lld", (long long)vocab);
            return bad("--prompt: token %s is not in the vocabulary [0, %s)", n, m);
        }
    return 0;
}

/* Do the prompt and the tokens fed back (all but the last) fit context?
 * Else why, fmt taking the positions needed and the context. */
static int context_fits(const gen_args *a, int64_t context, const char *fmt)
{
    char n[64], m[64];
    if (a->nprompt + a->max_new - 1 <= context)
        return 0;
    snprintf(n, sizeof n, "%ld", (long)(a->nprompt + a->max_new - 1));
    snprintf(m, sizeof m, "%lld", (long long)context);
    return bad(fmt, n, m);
}

/* Do the prompt and the tokens asked for fit the steps, prefill and decode? */
static int cached_fits(const gen_args *a, const gen_step *s)
{
    const gen_step *pre = &s[0], *dec = &s[1];
    char n[64], m[64];
    if (dec->seq != 1 || dec->vocab != pre->vocab || dec->context != pre->context)
        return bad("%s: the decode step must take one token and share the prefill's vocabulary and cache (%s)",
                   dec->g->path, pre->g->path);
    snprintf(n, sizeof n, "%d", a->nprompt);
    snprintf(m, sizeof m, "%lld", (long long)pre->seq);
    if (a->nprompt > pre->seq)
        return bad("--prompt has %s tokens, more than the prefill step's %s", n, m);
    if (in_vocabulary(a, pre->vocab))
        return GEN_USAGE;
    return context_fits(a, pre->context,
                        "the prompt and --max-new-tokens need %s cache positions, more than the model's context of %s");
}

/* Do the prompt and the tokens fed back (all but the last) fit the plain
 * step's context? */
static int plain_fits(const gen_args *a, const gen_step *s)
{
    if (in_vocabulary(a, s->vocab))
        return GEN_USAGE;
    return context_fits(a, s->context,
                        "the prompt and --max-new-tokens need %s positions, more than the step's context of %s");
}

/* A token as printed: "-" when values are off (not computed). */
static const char *token_str(const gen_args *a, int64_t t, char buf[32])
{
    snprintf(buf, 32, "%" PRId64, t);
    return a->values ? buf : "-";
}

/* The tokens, the first step's time and the mean of the later ones (rest
 * cycles in all, steps named as printed), at the cards' clock. */
static void report(const gen_args *a, const int64_t *tokens, double ttft, double rest, const char *steps,
                   double clock_ghz)
{
    char tok[32];
    printf("tokens=");
    for (long i = 0; i < a->max_new; i++)
        printf("%s%s", i ? "," : "", token_str(a, tokens[i], tok));
    printf("\nttft_cycles=%.0f ttft_us=%.3f\n", ttft, ttft / clock_ghz / 1e3);
    if (a->max_new > 1) {
        double tpot = rest / (double)(a->max_new - 1);
        printf("tpot_cycles=%.0f tpot_us=%.3f (mean of %ld %s)\n", tpot, tpot / clock_ghz / 1e3, a->max_new - 1,
               steps);
    }
    printf("clock_ghz=%g (times are the device's: host transfers and the host's argmax are not in them)\n",
           clock_ghz);
}

/* The steps: prefill, then decode steps; the report. */
static int generate_cached(const gen_args *a, const gen_cards *k, gen_step *s)
{
    gen_step *pre = &s[0], *dec = &s[1];
    int64_t *tokens = calloc((size_t)a->max_new, sizeof *tokens);
    double clock_ghz = rt_config(k->dev[0])->clock_ghz;
    if (!tokens)
        return bad("out of host memory%s%s", "", "");
    double decode_cycles = 0;
    char tok[32];
    rt_run_result *res = malloc(sizeof *res);
    int rc = res ? run_step(pre, a, k, a->prompt, a->nprompt, 0, res, &tokens[0])
                 : bad("out of host memory%s%s", "", "");
    double ttft = rc ? 0 : res->stats.cycles;
    if (!rc)
        printf("prefill: prompt_tokens=%d cycles=%.0f token=%s uploaded=%" PRIu64 " state_written=%" PRIu64 "\n",
               a->nprompt, ttft, token_str(a, tokens[0], tok), res->xfer.bytes_uploaded, res->state_bytes);
    for (long i = 1; i < a->max_new && !rc; i++) {
        int64_t pos = a->nprompt + i - 1;
        rc = run_step(dec, a, k, &tokens[i - 1], 1, pos, res, &tokens[i]);
        decode_cycles += rc ? 0 : res->stats.cycles;
        if (!rc)
            printf("decode %ld: pos=%" PRId64 " cycles=%.0f token=%s uploaded=%" PRIu64 " state_written=%" PRIu64 "\n",
                   i, pos, res->stats.cycles, token_str(a, tokens[i], tok), res->xfer.bytes_uploaded, res->state_bytes);
    }
    free(res);
    if (!rc)
        report(a, tokens, ttft, decode_cycles, "decode steps", clock_ghz);
    free(tokens);
    return rc;
}

/* Each token a run of the plain step on the prompt and the tokens so far,
 * padded with token 0 to its context; the report. */
static int generate_plain(const gen_args *a, const gen_cards *k, gen_step *s)
{
    int64_t *ids = calloc((size_t)(a->nprompt + a->max_new), sizeof *ids);
    rt_run_result *res = malloc(sizeof *res);
    double clock_ghz = rt_config(k->dev[0])->clock_ghz, ttft = 0, rest = 0;
    char tok[32];
    int rc = ids && res ? 0 : bad("out of host memory%s%s", "", "");
    if (!rc) {
        memcpy(ids, a->prompt, (size_t)a->nprompt * sizeof *ids);
        printf("context=%lld (no KV cache: each token reruns the step over the whole context)\n",
               (long long)s->context);
    }
    for (long i = 0; i < a->max_new && !rc; i++) {
        int n = a->nprompt + (int)i;
        rc = run_step(s, a, k, ids, n, 0, res, &ids[n]);
        if (rc)
            break;
        *(i ? &rest : &ttft) += res->stats.cycles;
        printf("step %ld: tokens=%d cycles=%.0f token=%s uploaded=%" PRIu64 "\n", i, n, res->stats.cycles,
               token_str(a, ids[n], tok), res->xfer.bytes_uploaded);
    }
    if (!rc)
        report(a, ids + a->nprompt, ttft, rest, "later steps, each over the whole context", clock_ghz);
    free(res);
    free(ids);
    return rc;
}

/* The two forms of DIR (docs/serving.md), tried in order: the first whose
 * first step directory exists (else the last, whose errors name it). */
typedef struct {
    const char *step[2]; /* the step directories; NULL after the last */
    int (*shape)(gen_step *s, const char *path);
    int (*fits)(const gen_args *a, const gen_step *s);
    int (*generate)(const gen_args *a, const gen_cards *k, gen_step *s);
} gen_form;

static const gen_form gen_forms[] = {
    {{"step", NULL}, plain_shape, plain_fits, generate_plain},
    {{"prefill", "decode"}, step_shape, cached_fits, generate_cached},
};
enum { GEN_NFORMS = sizeof gen_forms / sizeof gen_forms[0] };

static const gen_form *dir_form(const char *dir)
{
    for (int f = 0; f < GEN_NFORMS - 1; f++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, gen_forms[f].step[0]);
        if (!stat(path, &st) && S_ISDIR(st.st_mode))
            return &gen_forms[f];
    }
    return &gen_forms[GEN_NFORMS - 1];
}

/* The cards' devices: one of --config's chip, or --tp of --system's. */
static int open_cards(const gen_args *a, gen_cards *k)
{
    char err[1024];
    sim_options opt = {.values = a->values, .detect_races = a->values, .trace = SIM_TRACE_OFF};
    k->n = a->tp;
    if (k->n > 1)
        return tp_devices_open(a->system, a->config, k->n, &opt, k->dev, &k->sys, err, sizeof err)
                   ? bad("%s%s", err, "") : 0;
    char *cfg = chip_config_path(a->config ? a->config : "spyre");
    k->dev[0] = rt_open(cfg, err, sizeof err);
    free(cfg);
    if (!k->dev[0])
        return bad("%s%s", err, "");
    rt_set_options(k->dev[0], &opt);
    return 0;
}

int cmd_generate(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: spyre %s\n\n%s\n", generate_usage, generate_help);
            return GEN_OK;
        }
    if (tp_refuse_mpirun("generate", "--tp N runs the cards in threads of one process; run it without mpirun"))
        return GEN_USAGE;
    gen_args *a = malloc(sizeof *a);
    gen_step s[2] = {{0}};
    gen_cards *k = calloc(1, sizeof *k);
    int rc = a && k ? parse_args(argc, argv, a) : bad("out of host memory%s%s", "", "");
    const gen_form *form = rc ? NULL : dir_form(a->dir);
    int nsteps = form && form->step[1] ? 2 : 1;
    for (int i = 0; i < nsteps && !rc; i++)
        rc = read_step(a, form->step[i], &s[i], form->shape);
    if (!rc)
        rc = form->fits(a, s);
    if (!rc)
        rc = open_cards(a, k);
    for (int i = 0; i < nsteps && !rc; i++)
        rc = load_step(k, a, &s[i]);
    if (!rc && k->n > 1)
        printf("tp=%d system=%s (each step split for %d cards; cycles are the slowest card's)\n", k->n, k->sys.name,
               k->n);
    if (!rc)
        rc = form->generate(a, k, s);
    for (int c = 0; k && c < k->n; c++) {
        for (int i = 0; i < 2; i++)
            rt_unload(s[i].cards[c]);
        if (k->dev[c])
            rt_close(k->dev[c]);
    }
    for (int i = 0; i < 2; i++)
        gr_graph_free(s[i].g);
    free(a);
    free(k);
    return rc;
}
