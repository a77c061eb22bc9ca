/* generate.c: `spyre generate DIR`: generation with a whole
 * decoder-only model exported as two steps, DIR/prefill and DIR/decode
 * (traces/models/decoder_gen.py), whose KV cache is state
 * (docs/graph-format.md, "State"): both programs loaded on one device, the
 * prefill run once on the prompt, then one decode step per new token, the
 * cache staying in device DRAM.  Or a plain causal LM exported as one step
 * over its whole context, DIR/step (tools/export.py --generate), rerun
 * for each token; or an encoder-decoder's step over the source and the
 * whole decoder context, DIR/seq2seq, the source set once; or that step
 * cut in two, DIR/encoder run once and DIR/decoder per token.  Each token is greedy or sampled on the host from the
 * logits read back (sample.c).  Prints each step's cycles, the tokens, the
 * time to first token and the time per output token (docs/serving.md). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cc.h"
#include "generate.h"
#include "isa.h"
#include "rt.h"
#include "sample.h"
#include "tp.h"

enum { GEN_OK = 0, GEN_USAGE = 2, GEN_FAULT = 3, GEN_MAX_CARDS = 64, GEN_MAX_EOS = 64 };
#define GEN_MAX_TOKENS 65536

const char generate_usage[] = "generate DIR --prompt T1,T2,... | --source T1,T2,... | --source-file FILE [--decoder-start ID] "
                              "--max-new-tokens N [--config FILE] [--tp N] "
                              "[--system NAME] [--no-values] [--temperature T] [--top-k K] [--top-p P] "
                              "[--repetition-penalty R] [--seed N] [--eos ID[,ID...]]";
const char generate_help[] =
    "Generate tokens with a whole decoder-only model: DIR holds its two steps as export\n"
    "directories, DIR/prefill (the prompt, padded to its fixed length, at positions 0..) and DIR/decode\n"
    "(one token), each with inputs %ids: i64[1, S] and %pos: i64[S], the logits f32[1, S, VOCAB] as\n"
    "its first output and the KV cache as state (docs/graph-format.md).  Both are compiled for the\n"
    "chip of --config (default spyre) and loaded on one device; the prefill runs once, then a decode\n"
    "step per further token, the cache resident in device DRAM.  Or DIR holds DIR/step, a plain causal\n"
    "LM over its whole context (ids i64[1, CONTEXT] -> logits f32[1, CONTEXT, VOCAB], no cache;\n"
    "tools/export.py --generate CONTEXT): each token reruns it on the prompt and the tokens so far,\n"
    "padded with token 0, and reads the logits of the last.  Or DIR holds DIR/seq2seq, an\n"
    "encoder-decoder's step (inputs: the source ids i64[1, S], optionally its mask [1, S], the\n"
    "decoder ids i64[1, CONTEXT]; tools/export.py --generate CONTEXT of a module with those inputs):\n"
    "--source T1,T2,... gives the source ids, at most S, padded with token 0 and mask 0 (exactly S\n"
    "when the step takes no mask), set once.  A step whose source is features (a float first input,\n"
    "no mask: Whisper's log-mel frames f32[1, MELS, FRAMES]) takes --source-file FILE instead: raw\n"
    "little-endian fp32 of exactly that shape, as spyre run --input reads, set once; the\n"
    "decoder starts from --decoder-start ID (default the model's, DIR/seq2seq/decoder_start.txt;\n"
    "without it --decoder-start is needed), then --prompt's tokens if given, and each token reruns the step as a plain LM's.\n"
    "Or DIR holds DIR/encoder and DIR/decoder (tools/export.py --generate --encoder-once): the\n"
    "encoder runs once on the source (its line: encoder: cycles=) and its outputs are read back and\n"
    "set as the decoder's first inputs; each token reruns the decoder; the time to first token\n"
    "counts the encoder's run.\n"
    "Prints each step's simulated cycles and token, the tokens, the time to first token (the\n"
    "prefill step) and the time per output token (the mean decode step; for DIR/step and\n"
    "DIR/seq2seq the mean later step, a whole context's) at the chip's clock.\n"
    "--no-values simulates timing only (no weights are read: graphs exported with --graph-only will\n"
    "do; the tokens are then not computed and every decode step is fed token 0; the sampling and\n"
    "stopping options below need the tokens and are refused with it).\n"
    "Each token is the argmax of its logits (greedy), unless --temperature T > 0 samples it on the\n"
    "host from the logits read back, in Hugging Face's order: --repetition-penalty R (R > 0, default\n"
    "1: the logits of the tokens in the prompt and generated so far divided by R where positive,\n"
    "multiplied where not; it applies to greedy choice too), the logits divided by T, --top-k K (the\n"
    "K likeliest; K >= 0, 0 all), --top-p P (0 < P <= 1: the smallest set of the likeliest whose\n"
    "probability reaches P, at least one token), then a draw from the softmax of those kept.  Tokens\n"
    "tied with the K-th are kept (Hugging Face's TopKLogitsWarper), so --top-k 1 is greedy only\n"
    "without a tie at the top; at T 0 --top-k, --top-p and --seed change nothing.  A draw needs\n"
    "logits softmax can weigh (no NaN or +inf, not all -inf), as torch.multinomial: else the step\n"
    "fails (exit 3 when so read back, 2 when --repetition-penalty made them so); greedy choice is\n"
    "torch.argmax's (the first NaN, else the first of equal maxima).\n"
    "--seed N (0 to 2^64-1, default 0) seeds the generator (splitmix64): the same seed and options\n"
    "give the same tokens run after run.\n"
    "--eos ID[,ID...] stops after producing any of these tokens (it is printed; --max-new-tokens\n"
    "still caps the count).\n"
    "--tp N splits the steps for N cards of --system (default spyre-x8, its chip that of --config when\n"
    "given; docs/multicard.md): every card holds its shards of the weights and its part of the KV\n"
    "cache in its own DRAM, the cards meet at the allreduces, a step's cycles are the slowest card's\n"
    "and the token is chosen from card 0's logits.\n"
    "Exit status: 0 ok, 2 bad arguments or files (or a step the runtime refused, as spyre run), 3 a step\n"
    "faulted or its logits cannot be sampled.";

typedef struct {
    const char *dir, *config, *system;
    int tp;
    int64_t prompt[GEN_MAX_TOKENS], source[GEN_MAX_TOKENS];
    int nprompt, nsource;
    const char *source_file; /* a features source: raw fp32 */
    int64_t decoder_start; /* -1: the model's */
    long max_new;
    int values;
    sample_params sampling;
    uint64_t seed;
    int64_t eos[GEN_MAX_EOS];
    int neos;
    const char *needs_values; /* the first sampling or stopping option given, which --no-values refuses */
} gen_args;

/* The sequence: the prompt, then the tokens generated, and the generator
 * that samples them. */
typedef struct {
    int64_t *ids;
    int n;
    sample_rng rng;
} gen_seq;

/* The cards: one device each (one card: no link), their system. */
typedef struct {
    int n;
    rt_device *dev[GEN_MAX_CARDS];
    chip_system sys;
} gen_cards;

/* One step program: its graph, the program (on each card), its ids input
 * (and positions), its logits tensor and shape; an encoder-decoder's
 * source input (and mask, "" when none) and length. */
typedef struct {
    gr_graph *g;
    rt_program *prog, *cards[GEN_MAX_CARDS]; /* prog: card 0's */
    char ids[GR_TENSOR_NAME_MAX], logits[GR_TENSOR_NAME_MAX];
    char source[GR_TENSOR_NAME_MAX], mask[GR_TENSOR_NAME_MAX];
    cc_tp_plan *plan;            /* the split for several cards (tp_load_split's), else NULL */
    int positioned;              /* has %pos: i64[S] */
    int64_t seq, vocab, context; /* tokens per run, logits per token, cache positions (or the plain step's) */
    int64_t source_len;
    int features; /* the source is a float tensor (set from --source-file), not ids */
} gen_step;

static int bad(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "spyre generate: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return GEN_USAGE;
}

/* "1,2,3": at most max token ids >= 0 into ids, their count into *n;
 * -1 when s is not such a list (or empty). */
static int ids_in(const char *s, int64_t *ids, int max, int *n)
{
    const char *p = s;
    *n = 0;
    while (*p) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || (*end && *end != ',') || *n == max)
            return -1;
        ids[(*n)++] = v;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return -1;
    }
    return *n ? 0 : -1;
}

/* Option o's value s as ids_in: 0 or GEN_USAGE. */
static int parse_ids(const char *o, const char *s, int64_t *ids, int max, int *n)
{
    char what[256];
    snprintf(what, sizeof what, "%s '%s'", o, s);
    if (ids_in(s, ids, max, n))
        return bad(*s ? "%s is not a list of token ids such as 1,2,3%s" : "%s has no token%s", what, "");
    return 0;
}

/* v as a finite number in [lo, hi] (open at lo when above), else -1. */
static int number_in(const char *v, double lo, int above, double hi, double *x)
{
    char *end;
    *x = strtod(v, &end);
    return end != v && !*end && isfinite(*x) && (above ? *x > lo : *x >= lo) && *x <= hi ? 0 : -1;
}

/* v as a whole number from 0 to 2^64 - 1, else -1. */
static int count_in(const char *v, uint64_t *x)
{
    char *end;
    errno = 0;
    *x = strtoull(v, &end, 10);
    return end != v && !*end && !errno && !strchr(v, '-') ? 0 : -1;
}

static int temperature_of(const char *v, gen_args *a)
{
    return number_in(v, 0, 0, INFINITY, &a->sampling.temperature);
}

static int top_p_of(const char *v, gen_args *a)
{
    return number_in(v, 0, 1, 1, &a->sampling.top_p);
}

static int penalty_of(const char *v, gen_args *a)
{
    return number_in(v, 0, 1, INFINITY, &a->sampling.repetition_penalty);
}

static int top_k_of(const char *v, gen_args *a)
{
    uint64_t k;
    if (count_in(v, &k) || k > INT64_MAX)
        return -1;
    a->sampling.top_k = (int64_t)k;
    return 0;
}

static int seed_of(const char *v, gen_args *a)
{
    return count_in(v, &a->seed);
}

static int eos_of(const char *v, gen_args *a)
{
    return ids_in(v, a->eos, GEN_MAX_EOS, &a->neos);
}

/* The sampling and stopping options: each parses its value into the
 * arguments (0, or -1 when it is not what `want` says).  --no-values
 * refuses them all. */
static const struct {
    const char *name;
    int (*parse)(const char *v, gen_args *a);
    const char *want;
} sampling_options[] = {
    {"--temperature", temperature_of, "a number >= 0"},
    {"--top-k", top_k_of, "a count >= 0 (0: all tokens)"},
    {"--top-p", top_p_of, "a number in (0, 1]"},
    {"--repetition-penalty", penalty_of, "a number > 0"},
    {"--seed", seed_of, "a whole number from 0 to 2^64-1"},
    {"--eos", eos_of, "a list of token ids such as 1,2,3"},
};
enum { GEN_NSAMPLING = sizeof sampling_options / sizeof sampling_options[0] };

/* Option o's row of sampling_options, or -1. */
static int sampling_option(const char *o)
{
    for (int i = 0; i < GEN_NSAMPLING; i++)
        if (!strcmp(o, sampling_options[i].name))
            return i;
    return -1;
}

/* The sampling or stopping option i's value v into a: 0 or GEN_USAGE. */
static int parse_sampling(int i, const char *v, gen_args *a)
{
    char what[256];
    snprintf(what, sizeof what, "%s '%s'", sampling_options[i].name, v);
    if (!a->needs_values)
        a->needs_values = sampling_options[i].name;
    return sampling_options[i].parse(v, a) ? bad("%s is not %s", what, sampling_options[i].want) : 0;
}

static int parse_args(int argc, char **argv, gen_args *a)
{
    memset(a, 0, sizeof *a);
    a->values = 1;
    a->max_new = -1;
    a->tp = 1;
    a->system = "spyre-x8";
    a->decoder_start = -1;
    sample_defaults(&a->sampling);
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(o, "--no-values")) {
            a->values = 0;
        } else if (!strcmp(o, "--prompt") || !strcmp(o, "--max-new-tokens") || !strcmp(o, "--config") ||
                   !strcmp(o, "--tp") || !strcmp(o, "--system") || !strcmp(o, "--source") ||
                   !strcmp(o, "--source-file") ||
                   !strcmp(o, "--decoder-start") || sampling_option(o) >= 0) {
            if (!has)
                return bad("%s needs a value%s", o, "");
            const char *v = argv[++i];
            if (sampling_option(o) >= 0) {
                if (parse_sampling(sampling_option(o), v, a))
                    return GEN_USAGE;
            } else if (!strcmp(o, "--config")) {
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
                if (parse_ids(o, v, a->prompt, GEN_MAX_TOKENS - 1, &a->nprompt))
                    return GEN_USAGE;
            } else if (!strcmp(o, "--source")) {
                if (parse_ids(o, v, a->source, GEN_MAX_TOKENS, &a->nsource))
                    return GEN_USAGE;
            } else if (!strcmp(o, "--source-file")) {
                a->source_file = v;
            } else if (!strcmp(o, "--decoder-start")) {
                uint64_t id;
                if (count_in(v, &id) || id > INT64_MAX)
                    return bad("--decoder-start '%s' is not a token id%s", v, "");
                a->decoder_start = (int64_t)id;
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
    if (!a->dir || !(a->nprompt || a->nsource || a->source_file) || a->max_new < 0)
        return bad("needs DIR, --prompt (or --source or --source-file) and --max-new-tokens (usage: spyre %s)%s", generate_usage, "");
    if (!a->values && a->needs_values)
        return bad("%s needs the tokens, which --no-values does not compute (it simulates timing only)%s",
                   a->needs_values, "");
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

/* Is value v ids, i64[1, N]? */
static int is_ids(const gr_value *v)
{
    return v->type.dtype == GR_I64 && v->type.rank == 2 && v->type.shape[0] == 1;
}

/* Is v features: a float tensor [1, ...]? */
static int is_features(const gr_value *v)
{
    const gr_dtype d = v->type.dtype;
    return (d == GR_F32 || d == GR_F16 || d == GR_BF16) && v->type.rank >= 1 && v->type.shape[0] == 1;
}

/* Is the step a plain causal LM's (tools/export.py --generate): one input,
 * the ids i64[1, CONTEXT], the logits f32[1, CONTEXT, V] first, no state
 * (its positions are the module's own, 0..CONTEXT-1)? */
static int plain_shape(gen_step *s, const char *path)
{
    const gr_graph *g = s->g;
    const gr_value *ids = g->ninputs == 1 ? &g->values[g->inputs[0]] : NULL;
    if (!ids || !is_ids(ids))
        return bad("%s: needs one input, the ids i64[1, CONTEXT] (tools/export.py --generate)%s", path, "");
    s->seq = s->context = ids->type.shape[1];
    gr_tensor_name(ids->name, s->ids);
    if (logits_shape(s, path))
        return GEN_USAGE;
    if (g->nupdates)
        return bad("%s: has state; a plain step reruns the whole context and keeps none%s", path, "");
    return 0;
}

/* Does the step take the source, its ids i64[1, S] as its first input and
 * optionally its mask [1, S] as the second, or features (a float tensor
 * [1, ...], no mask), of `inputs` before the rest?  Sets the source's
 * tensors and length (its elements, for features). */
static int source_inputs(gen_step *s, int inputs)
{
    const gr_graph *g = s->g;
    if (inputs < 1 || inputs > 2)
        return -1;
    const gr_value *src = &g->values[g->inputs[0]], *mask = inputs == 2 ? &g->values[g->inputs[1]] : NULL;
    s->features = !mask && is_features(src);
    if (s->features) {
        s->source_len = gr_ttype_numel(&src->type);
        gr_tensor_name(src->name, s->source);
        return 0;
    }
    if (!is_ids(src) ||
        (mask && (mask->type.rank != 2 || mask->type.shape[0] != 1 || mask->type.shape[1] != src->type.shape[1])))
        return -1;
    s->source_len = src->type.shape[1];
    gr_tensor_name(src->name, s->source);
    if (mask)
        gr_tensor_name(mask->name, s->mask);
    return 0;
}

/* Does the step take the decoder ids, i64[1, CONTEXT], as its last input,
 * give the logits f32[1, CONTEXT, V] first and keep no state? */
static int decoder_outputs(gen_step *s, const char *path)
{
    const gr_graph *g = s->g;
    const gr_value *ids = &g->values[g->inputs[g->ninputs - 1]];
    s->seq = s->context = ids->type.shape[1];
    gr_tensor_name(ids->name, s->ids);
    if (logits_shape(s, path))
        return GEN_USAGE;
    if (g->nupdates)
        return bad("%s: has state; an encoder-decoder's step reruns the whole context and keeps none%s", path, "");
    return 0;
}

/* Is the step an encoder-decoder's (tools/export.py --generate of a
 * module with two or three inputs): the source ids i64[1, S], optionally
 * its mask [1, S], then the decoder ids i64[1, CONTEXT]; the logits f32[1,
 * CONTEXT, V] first, no state? */
static int seq2seq_shape(gen_step *s, const char *path)
{
    const gr_graph *g = s->g;
    if (g->ninputs < 2 || source_inputs(s, g->ninputs - 1) || !is_ids(&g->values[g->inputs[g->ninputs - 1]]))
        return bad("%s: needs inputs the source ids i64[1, S], optionally its mask [1, S] (or features, a float "
                   "[1, ...]), and the decoder ids i64[1, CONTEXT] (tools/export.py --generate)%s", path, "");
    return decoder_outputs(s, path);
}

/* Is the step an encoder run once (tools/export.py --generate
 * --encoder-once: DIR/encoder): the source ids i64[1, S], optionally its
 * mask [1, S], no state? */
static int encoder_shape(gen_step *s, const char *path)
{
    if (source_inputs(s, s->g->ninputs))
        return bad("%s: needs inputs the source ids i64[1, S], optionally its mask [1, S] (or features, a float "
                   "[1, ...]; tools/export.py --generate --encoder-once)%s", path, "");
    return s->g->nupdates ? bad("%s: an encoder keeps no state%s", path, "") : 0;
}

/* Is the step a decoder fed an encoder's outputs (DIR/decoder): the
 * decoder ids i64[1, CONTEXT] its last input, after those outputs (fits
 * checks them), the logits first, no state? */
static int decoder_shape(gen_step *s, const char *path)
{
    const gr_graph *g = s->g;
    if (g->ninputs < 2 || !is_ids(&g->values[g->inputs[g->ninputs - 1]]))
        return bad("%s: needs the encoder's outputs, then the decoder ids i64[1, CONTEXT] as inputs "
                   "(tools/export.py --generate --encoder-once)%s", path, "");
    return decoder_outputs(s, path);
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
        if (tp_load_split(s->g, k->n, k->dev, a->values, s->cards, &s->plan, err, sizeof err))
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

/* A failed launch of step s in one line: exit 2 when the runtime refused
 * the inputs or an op (a user error, as spyre run), else 3. */
static int launch_failed(const gen_step *s, const rt_run_result *res)
{
    char line[1024];
    rt_run_format(res, line, sizeof line);
    fprintf(stderr, "spyre generate: %s: %s\n", s->g->path, line);
    return res->status == RT_RUN_UNSUPPORTED ? GEN_USAGE : GEN_FAULT;
}

/* The next token at the end of q from the step's logits of its last token
 * (sample.c).  A draw needs logits softmax can weigh, as
 * torch.multinomial: not so as read back, the step's numbers are wrong
 * (exit 3); not so only after --repetition-penalty, the option is (exit 2). */
static int choose_token(const gen_args *a, const gen_step *s, const char *step, float *logits, gen_seq *q)
{
    const char *why = "the logits read back are not finite (NaN or +inf, or all -inf)";
    if (a->sampling.temperature > 0 && !sample_drawable(logits, s->vocab)) {
        fprintf(stderr, "spyre generate: %s: %s: %s, so no token can be sampled\n", s->g->path, step, why);
        return GEN_FAULT;
    }
    int64_t t = sample_token(&a->sampling, logits, s->vocab, q->ids, q->n, &q->rng);
    if (t == SAMPLE_NOT_FINITE) {
        char where[4200];
        snprintf(where, sizeof where, "%s: %s: --repetition-penalty %g", s->g->path, step,
                 a->sampling.repetition_penalty);
        return bad("%s makes the logits not finite (a logit overflows), so no token can be sampled%s", where, "");
    }
    q->ids[q->n] = t;
    return 0;
}

/* Run step s (named `step` in errors) on tokens ids[0..n) at positions
 * from start (the rest of its fixed length padded with token 0 at the
 * positions after; a step without %pos has its own, 0..); the run's result
 * goes to *res and the next token to the end of q: with values, chosen
 * from the logits of token n - 1 (choose_token), else 0. */
static int run_step(gen_step *s, const gen_args *a, const gen_cards *k, const int64_t *ids, int n, int64_t start,
                    const char *step, rt_run_result *res, gen_seq *q)
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
    if (!rc && launch(s, k, res))
        rc = launch_failed(s, res);
    q->ids[q->n] = 0;
    if (!rc && a->values) {
        logits = malloc((size_t)(s->seq * s->vocab) * sizeof *logits);
        if (!logits || rt_read_tensor(s->prog, s->logits, logits, err, sizeof err))
            rc = bad("%s: %s", s->g->path, logits ? err : "out of host memory");
        if (!rc)
            rc = choose_token(a, s, step, logits + (n - 1) * s->vocab, q);
    }
    q->n += !rc;
    free(logits);
    free(in);
    return rc;
}

/* Are the tokens of option o, ids[0..n), in the vocabulary? */
static int ids_in_vocabulary(const char *o, const int64_t *ids, int n, int64_t vocab)
{
    char t[128], m[64];
    for (int i = 0; i < n; i++)
        if (ids[i] >= vocab) {
            snprintf(t, sizeof t, "%s: token %lld", o, (long long)ids[i]);
            snprintf(m, sizeof m, "%lld", (long long)vocab);
            return bad("%s is not in the vocabulary [0, %s)", t, m);
        }
    return 0;
}

/* Are the prompt's tokens and the --eos ones in the vocabulary? */
static int in_vocabulary(const gen_args *a, int64_t vocab)
{
    return ids_in_vocabulary("--prompt", a->prompt, a->nprompt, vocab) ||
           ids_in_vocabulary("--eos", a->eos, a->neos, vocab);
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

/* The options of an encoder-decoder refused for a decoder-only model. */
static int decoder_only(const gen_args *a)
{
    if (a->nsource || a->source_file || a->decoder_start >= 0)
        return bad("%s is for an encoder-decoder (DIR/seq2seq); %s holds a decoder-only model",
                   a->nsource ? "--source" : a->source_file ? "--source-file" : "--decoder-start", a->dir);
    return a->nprompt ? 0 : bad("needs --prompt (the model is decoder-only)%s%s", "", "");
}

/* Do the prompt and the tokens asked for fit the steps, prefill and decode? */
static int cached_fits(gen_args *a, const gen_step *s)
{
    const gen_step *pre = &s[0], *dec = &s[1];
    char n[64], m[64];
    if (dec->seq != 1 || dec->vocab != pre->vocab || dec->context != pre->context)
        return bad("%s: the decode step must take one token and share the prefill's vocabulary and cache (%s)",
                   dec->g->path, pre->g->path);
    if (decoder_only(a))
        return GEN_USAGE;
    snprintf(n, sizeof n, "%d", a->nprompt);
    snprintf(m, sizeof m, "%lld", (long long)pre->seq);
    if (a->nprompt > pre->seq)
        return bad("--prompt has %s tokens, more than the prefill step's %s", n, m);
    if (in_vocabulary(a, pre->vocab))
        return GEN_USAGE;
    return context_fits(a, pre->context,
                        "the prompt and --max-new-tokens need %s cache positions, more than the model's context of %s");
}

/* Do the prompt and the tokens fed back (all but the last) fit the
 * step's context, that of a plain LM or an encoder-decoder's decoder? */
static int context_step_fits(const gen_args *a, const gen_step *s)
{
    if (in_vocabulary(a, s->vocab))
        return GEN_USAGE;
    return context_fits(a, s->context,
                        "the prompt and --max-new-tokens need %s positions, more than the step's context of %s");
}

static int plain_fits(gen_args *a, const gen_step *s)
{
    return decoder_only(a) || context_step_fits(a, s) ? GEN_USAGE : 0;
}

/* The decoder start token the export wrote beside the step's graph.txt
 * (DIR/seq2seq/decoder_start.txt), else -1. */
static int64_t model_decoder_start(const gen_step *s)
{
    char path[4096];
    long long id = -1;
    const char *slash = strrchr(s->g->path, '/');
    snprintf(path, sizeof path, "%.*sdecoder_start.txt", slash ? (int)(slash + 1 - s->g->path) : 0, s->g->path);
    FILE *f = fopen(path, "r");
    if (f && (fscanf(f, "%lld", &id) != 1 || id < 0))
        id = -1;
    if (f)
        fclose(f);
    return id;
}

/* Do --source's ids fit the step src that takes ids (at most its length,
 * exactly without a mask)? */
static int ids_fit(const gen_args *a, const gen_step *src)
{
    char n[64], m[64];
    snprintf(n, sizeof n, "%d", a->nsource);
    snprintf(m, sizeof m, "%lld", (long long)src->source_len);
    if (a->source_file)
        return bad("--source-file is for a features source; %s takes the source ids: give --source T1,T2,...%s",
                   src->g->path, "");
    if (!a->nsource)
        return bad("%s: an encoder-decoder needs --source T1,T2,... (the source ids)%s", src->g->path, "");
    if (a->nsource > src->source_len)
        return bad("--source has %s tokens, more than the step's source length %s", n, m);
    if (!src->mask[0] && a->nsource != src->source_len)
        return bad("--source has %s tokens; the step takes no source mask, so it needs exactly %s", n, m);
    return 0;
}

/* Is a features source given as --source-file (its size is checked as
 * it is read, against the step's shape: set_source)? */
static int features_fits(const gen_args *a, const gen_step *src)
{
    if (a->nsource)
        return bad("%s: the source is features, not ids: give --source-file FILE (raw little-endian fp32)%s",
                   src->g->path, " instead of --source");
    return a->source_file ? 0 : bad("%s: the source is features: give --source-file FILE (raw little-endian fp32)%s",
                                    src->g->path, "");
}

/* Does the source fit the step src that takes it?  The decoder's tokens
 * become the start token (default dec's), then --prompt's; they and the
 * tokens fed back must fit dec's context.  The source's ids are checked
 * against the logits' vocabulary (shared, as BART's, Marian's and T5's). */
static int source_fits(gen_args *a, const gen_step *src, const gen_step *dec)
{
    if (src->features ? features_fits(a, src) : ids_fit(a, src))
        return GEN_USAGE;
    if (a->decoder_start < 0)
        a->decoder_start = model_decoder_start(dec);
    if (a->decoder_start < 0)
        return bad("%s: the model declares no decoder start token (no decoder_start.txt): give --decoder-start ID%s",
                   dec->g->path, "");
    if (ids_in_vocabulary("--source", a->source, a->nsource, dec->vocab) ||
        ids_in_vocabulary("--decoder-start", &a->decoder_start, 1, dec->vocab))
        return GEN_USAGE;
    memmove(a->prompt + 1, a->prompt, (size_t)a->nprompt * sizeof *a->prompt);
    a->prompt[0] = a->decoder_start;
    a->nprompt++;
    return context_step_fits(a, dec);
}

static int seq2seq_fits(gen_args *a, const gen_step *s)
{
    return source_fits(a, s, s);
}

/* Are the decoder's inputs before its ids the encoder's outputs, in order
 * and of their types?  Then the source as source_fits. */
static int split_fits(gen_args *a, const gen_step *s)
{
    const gr_graph *enc = s[0].g, *dec = s[1].g;
    int same = dec->ninputs - 1 == enc->noutputs;
    for (int i = 0; same && i < enc->noutputs; i++) {
        const gr_ttype *o = &enc->values[enc->outputs[i]].type, *in = &dec->values[dec->inputs[i]].type;
        same = !enc->values[enc->outputs[i]].ntuple && o->dtype == in->dtype && o->rank == in->rank &&
               !memcmp(o->shape, in->shape, (size_t)o->rank * sizeof *o->shape);
    }
    if (!same)
        return bad("%s: its inputs before the decoder ids must be the outputs of %s, in order and of their types",
                   dec->path, enc->path);
    return source_fits(a, &s[0], &s[1]);
}

/* A token as printed: "-" when values are off (not computed). */
static const char *token_str(const gen_args *a, int64_t t, char buf[32])
{
    snprintf(buf, 32, "%" PRId64, t);
    return a->values ? buf : "-";
}

/* The sequence to generate: the prompt, room for the tokens, the
 * generator seeded; its sampling printed when not greedy.  0 or out of
 * host memory. */
static int seq_open(const gen_args *a, gen_seq *q)
{
    const sample_params *p = &a->sampling;
    q->ids = calloc((size_t)(a->nprompt + a->max_new), sizeof *q->ids);
    if (!q->ids)
        return bad("out of host memory%s%s", "", "");
    memcpy(q->ids, a->prompt, (size_t)a->nprompt * sizeof *q->ids);
    q->n = a->nprompt;
    sample_seed(&q->rng, a->seed);
    if (p->temperature > 0 || p->repetition_penalty != 1)
        printf("sampling: temperature=%g top_k=%" PRId64 " top_p=%g repetition_penalty=%g seed=%" PRIu64
               " (on the host, from %s logits)\n",
               p->temperature, p->top_k, p->top_p, p->repetition_penalty, a->seed,
               a->tp > 1 ? "card 0's" : "the step's");
    return 0;
}

/* Is the last token of q an --eos one? */
static int at_eos(const gen_args *a, const gen_seq *q)
{
    for (int i = 0; i < a->neos; i++)
        if (q->ids[q->n - 1] == a->eos[i])
            return 1;
    return 0;
}

/* The tokens generated, the first step's time and the mean of the later
 * ones (rest cycles in all, steps named as printed), at the cards' clock. */
static void report(const gen_args *a, const gen_seq *q, double ttft, double rest, const char *steps,
                   double clock_ghz)
{
    char tok[32];
    long n = q->n - a->nprompt;
    printf("tokens=");
    for (long i = 0; i < n; i++)
        printf("%s%s", i ? "," : "", token_str(a, q->ids[a->nprompt + i], tok));
    if (n < a->max_new)
        printf("\nstopped=eos (token %" PRId64 " after %ld of at most %ld tokens)", q->ids[q->n - 1], n, a->max_new);
    printf("\nttft_cycles=%.0f ttft_us=%.3f\n", ttft, ttft / clock_ghz / 1e3);
    if (n > 1) {
        double tpot = rest / (double)(n - 1);
        printf("tpot_cycles=%.0f tpot_us=%.3f (mean of %ld %s)\n", tpot, tpot / clock_ghz / 1e3, n - 1, steps);
    }
    printf("clock_ghz=%g (times are the device's: host transfers and the host's choice of token are not in them)\n",
           clock_ghz);
}

/* The steps: prefill, then decode steps until --max-new-tokens or --eos;
 * the report. */
static int generate_cached(const gen_args *a, const gen_cards *k, gen_step *s)
{
    gen_step *pre = &s[0], *dec = &s[1];
    gen_seq q = {0};
    double clock_ghz = rt_config(k->dev[0])->clock_ghz, decode_cycles = 0;
    char tok[32];
    rt_run_result *res = malloc(sizeof *res);
    int rc = res ? seq_open(a, &q) : bad("out of host memory%s%s", "", "");
    if (!rc)
        rc = run_step(pre, a, k, a->prompt, a->nprompt, 0, "prefill", res, &q);
    double ttft = rc ? 0 : res->stats.cycles;
    if (!rc)
        printf("prefill: prompt_tokens=%d cycles=%.0f token=%s uploaded=%" PRIu64 " state_written=%" PRIu64 "\n",
               a->nprompt, ttft, token_str(a, q.ids[q.n - 1], tok), res->xfer.bytes_uploaded, res->state_bytes);
    for (long i = 1; i < a->max_new && !rc && !at_eos(a, &q); i++) {
        int64_t pos = q.n - 1;
        char step[64];
        snprintf(step, sizeof step, "decode %ld", i);
        rc = run_step(dec, a, k, &q.ids[pos], 1, pos, step, res, &q);
        decode_cycles += rc ? 0 : res->stats.cycles;
        if (!rc)
            printf("decode %ld: pos=%" PRId64 " cycles=%.0f token=%s uploaded=%" PRIu64 " state_written=%" PRIu64 "\n",
                   i, pos, res->stats.cycles, token_str(a, q.ids[q.n - 1], tok), res->xfer.bytes_uploaded,
                   res->state_bytes);
    }
    if (!rc)
        report(a, &q, ttft, decode_cycles, "decode steps", clock_ghz);
    free(res);
    free(q.ids);
    return rc;
}

/* Each token a run of the plain step on the prompt and the tokens so far,
 * padded with token 0 to its context, until --max-new-tokens or --eos;
 * the report. */
static int rerun_context(const gen_args *a, const gen_cards *k, gen_step *s, double ttft)
{
    gen_seq q = {0};
    rt_run_result *res = malloc(sizeof *res);
    double clock_ghz = rt_config(k->dev[0])->clock_ghz, rest = 0;
    char tok[32];
    int rc = res ? 0 : bad("out of host memory%s%s", "", "");
    if (!rc)
        printf("context=%lld (no KV cache: each token reruns the step over the whole context)\n",
               (long long)s->context);
    if (!rc)
        rc = seq_open(a, &q);
    for (long i = 0; i < a->max_new && !rc && (!i || !at_eos(a, &q)); i++) {
        int n = q.n;
        char step[64];
        snprintf(step, sizeof step, "step %ld", i);
        rc = run_step(s, a, k, q.ids, n, 0, step, res, &q);
        if (rc)
            break;
        *(i ? &rest : &ttft) += res->stats.cycles;
        printf("step %ld: tokens=%d cycles=%.0f token=%s uploaded=%" PRIu64 "\n", i, n, res->stats.cycles,
               token_str(a, q.ids[n], tok), res->xfer.bytes_uploaded);
    }
    if (!rc)
        report(a, &q, ttft, rest, "later steps, each over the whole context", clock_ghz);
    free(res);
    free(q.ids);
    return rc;
}

static int generate_plain(const gen_args *a, const gen_cards *k, gen_step *s)
{
    return rerun_context(a, k, s, 0);
}

/* The features of --source-file, as spyre run --input reads them, set on
 * every card. */
static int set_features(const gen_args *a, const gen_cards *k, gen_step *s)
{
    char err[1024];
    for (int c = 0; c < k->n; c++)
        if (rt_load_input_file(s->cards[c], s->source, a->source_file, err, sizeof err))
            return bad("--source-file: %s%s", err, "");
    printf("source=%s (%lld features) decoder_start=%" PRId64 "\n", a->source_file, (long long)s->source_len,
           a->decoder_start);
    return 0;
}

/* The source, padded with token 0 to step s's length (its mask 1 over
 * the tokens, 0 after), set on every card; or its features. */
static int set_source(const gen_args *a, const gen_cards *k, gen_step *s)
{
    if (s->features)
        return set_features(a, k, s);
    char err[1024];
    float *in = calloc((size_t)s->source_len * 2, sizeof *in);
    int rc = in ? 0 : bad("out of host memory%s%s", "", "");
    for (int64_t i = 0; i < s->source_len && !rc; i++) {
        in[i] = i < a->nsource ? (float)a->source[i] : 0;
        in[s->source_len + i] = i < a->nsource;
    }
    for (int c = 0; c < k->n && !rc; c++)
        if (rt_set_input(s->cards[c], s->source, in, err, sizeof err) ||
            (s->mask[0] && rt_set_input(s->cards[c], s->mask, in + s->source_len, err, sizeof err)))
            rc = bad("%s%s", err, "");
    free(in);
    if (!rc)
        printf("source=%d of %lld tokens%s decoder_start=%" PRId64 "\n", a->nsource, (long long)s->source_len,
               s->mask[0] ? " (padded with token 0, mask 0)" : "", a->decoder_start);
    return rc;
}

/* The source set once, then each token as a plain LM's, the step rerun
 * on the source and the decoder's context. */
static int generate_seq2seq(const gen_args *a, const gen_cards *k, gen_step *s)
{
    return set_source(a, k, s) ? GEN_USAGE : rerun_context(a, k, s, 0);
}

/* Output i of the encoder e as the decoder d's input i on every card;
 * split for several cards (by the steps' plans), a cut output put
 * together from the cards' parts and each card given its shard of the
 * input (cc_tp_shard). */
static int pass_output(const gen_step *e, const gen_step *d, const gen_cards *k, int i)
{
    const cc_tp_plan *ep = e->plan, *dp = d->plan;
    char err[1024], out[GR_TENSOR_NAME_MAX], in[GR_TENSOR_NAME_MAX];
    int ov = e->g->outputs[i], iv = d->g->inputs[i];
    const gr_value *v = &e->g->values[ov];
    int64_t n = gr_ttype_numel(&v->type);
    gr_tensor_name(v->name, out);
    gr_tensor_name(d->g->values[iv].name, in);
    float *whole = malloc((size_t)(n ? n : 1) * sizeof *whole), *part = malloc((size_t)(n ? n : 1) * sizeof *part);
    int rc = whole && part ? 0 : bad("out of host memory%s%s", "", "");
    int cut_out = ep && cc_tp_is_cut(ep, ov);
    for (int c = 0; c < (cut_out ? k->n : 1) && !rc; c++) {
        if (rt_read_tensor(e->cards[c], out, cut_out ? part : whole, err, sizeof err))
            rc = bad("%s: %s", e->g->path, err);
        else if (cut_out)
            cc_tp_unshard(ep, ov, c, part, whole);
    }
    for (int c = 0; c < k->n && !rc; c++) {
        if (dp) /* as tp.c's shard_inputs: a cut input's part, a card-0-only one zero elsewhere */
            cc_tp_shard(dp, iv, c, whole, part);
        if (rt_set_input(d->cards[c], in, dp ? part : whole, err, sizeof err))
            rc = bad("%s: %s", d->g->path, err);
    }
    free(whole);
    free(part);
    return rc;
}

/* The encoder run once on the source, its outputs read back and set as
 * the decoder's first inputs; then each token a run of the decoder on its
 * context.  The time to first token counts the encoder's run. */
static int generate_split(const gen_args *a, const gen_cards *k, gen_step *s)
{
    rt_run_result *res = malloc(sizeof *res);
    int rc = res ? set_source(a, k, &s[0]) : bad("out of host memory%s%s", "", "");
    if (!rc && launch(&s[0], k, res))
        rc = launch_failed(&s[0], res);
    double encoder = rc ? 0 : res->stats.cycles;
    if (!rc)
        printf("encoder: cycles=%.0f us=%.3f uploaded=%" PRIu64 " (once; the decoder steps take its %d outputs)\n",
               encoder, encoder / rt_config(k->dev[0])->clock_ghz / 1e3, res->xfer.bytes_uploaded, s[0].g->noutputs);
    for (int i = 0; i < s[0].g->noutputs && !rc && a->values; i++)
        rc = pass_output(&s[0], &s[1], k, i);
    free(res);
    return rc ? rc : rerun_context(a, k, &s[1], encoder);
}

/* The forms of DIR (docs/serving.md): the one whose first step directory
 * exists (else the last, whose errors name it). */
typedef struct {
    const char *step[2]; /* the step directories; NULL after the last */
    int (*shape[2])(gen_step *s, const char *path); /* each step's */
    int (*fits)(gen_args *a, const gen_step *s); /* may complete a's prompt (the decoder start token) */
    int (*generate)(const gen_args *a, const gen_cards *k, gen_step *s);
} gen_form;

static const gen_form gen_forms[] = {
    {{"step", NULL}, {plain_shape}, plain_fits, generate_plain},
    {{"seq2seq", NULL}, {seq2seq_shape}, seq2seq_fits, generate_seq2seq},
    {{"encoder", "decoder"}, {encoder_shape, decoder_shape}, split_fits, generate_split},
    {{"prefill", "decode"}, {step_shape, step_shape}, cached_fits, generate_cached},
};
enum { GEN_NFORMS = sizeof gen_forms / sizeof gen_forms[0] };

/* DIR's form into *form; a DIR holding two forms is refused: which one
 * is current cannot be told (tools/export.py --generate leaves one). */
static int dir_form(const char *dir, const gen_form **form)
{
    *form = NULL;
    for (int f = 0; f < GEN_NFORMS; f++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, gen_forms[f].step[0]);
        if (stat(path, &st) || !S_ISDIR(st.st_mode))
            continue;
        if (*form) {
            char both[256];
            snprintf(both, sizeof both, "%s/ and %s/", (*form)->step[0], gen_forms[f].step[0]);
            return bad("%s holds two forms of a model, %s (which is current cannot be told): remove the stale one",
                       dir, both);
        }
        *form = &gen_forms[f];
    }
    if (!*form)
        *form = &gen_forms[GEN_NFORMS - 1];
    return 0;
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
    const gen_form *form = NULL;
    if (!rc)
        rc = dir_form(a->dir, &form);
    int nsteps = form && form->step[1] ? 2 : 1;
    for (int i = 0; i < nsteps && !rc; i++)
        rc = read_step(a, form->step[i], &s[i], form->shape[i]);
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
    for (int i = 0; i < 2; i++) {
        cc_tp_free(s[i].plan);
        gr_graph_free(s[i].g);
    }
    free(a);
    free(k);
    return rc;
}
