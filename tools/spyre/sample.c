/* sample.c: the next token from a step's logits read back to the host
 * (as vLLM's Spyre plugin samples on the host): repetition penalty,
 * temperature, top-k, top-p and a seeded draw, in Hugging Face's order. */
#include <math.h>
#include <stdlib.h>

#include "sample.h"

/* A candidate: its logit and id, sorted likeliest first. */
typedef struct {
    float logit;
    int64_t id;
} candidate;

void sample_defaults(sample_params *p)
{
    *p = (sample_params){.temperature = 0, .top_k = 0, .top_p = 1, .repetition_penalty = 1};
}

void sample_seed(sample_rng *r, uint64_t seed)
{
    r->state = seed;
}

static uint64_t splitmix64(sample_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double sample_uniform(sample_rng *r)
{
    return (double)(splitmix64(r) >> 11) * 0x1.0p-53;
}

/* Hugging Face's RepetitionPenaltyLogitsProcessor: each token seen once,
 * however often it occurs (done marks them). */
static void penalise(float *logits, int64_t vocab, const int64_t *seen, int64_t nseen, double penalty)
{
    unsigned char *done = calloc((size_t)vocab, 1);
    if (!done)
        abort(); /* out of host memory */
    for (int64_t i = 0; i < nseen; i++) {
        int64_t t = seen[i];
        if (t < 0 || t >= vocab || done[t])
            continue;
        done[t] = 1;
        logits[t] = (float)(logits[t] > 0 ? logits[t] / penalty : logits[t] * penalty);
    }
    free(done);
}

/* torch.argmax: the first NaN, else the first of equal maxima (+inf
 * being the largest). */
static int64_t argmax(const float *logits, int64_t vocab)
{
    int64_t best = 0;
    for (int64_t v = 1; v < vocab && !isnan(logits[best]); v++)
        if (isnan(logits[v]) || logits[v] > logits[best])
            best = v;
    return best;
}

int sample_drawable(const float *logits, int64_t vocab)
{
    int some = 0;
    for (int64_t v = 0; v < vocab; v++) {
        if (isnan(logits[v]) || logits[v] == INFINITY)
            return 0;
        some |= logits[v] != -INFINITY;
    }
    return some;
}

static int likelier(const void *x, const void *y)
{
    const candidate *a = x, *b = y;
    if (a->logit != b->logit)
        return a->logit > b->logit ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* How many of the sorted candidates c[0..n) top-p keeps: the fewest whose
 * weights w (unnormalised, of sum total) reach p of the total, at least one. */
static int64_t nucleus(const double *w, int64_t n, double total, double p)
{
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        sum += w[i];
        if (sum >= p * total)
            return i + 1;
    }
    return n;
}

/* One draw among candidates c[0..n) of weights w[0..n) (sum total). */
static int64_t draw(const candidate *c, const double *w, int64_t n, double total, sample_rng *r)
{
    double u = sample_uniform(r) * total, sum = 0;
    for (int64_t i = 0; i < n; i++) {
        sum += w[i];
        if (u < sum)
            return c[i].id;
    }
    return c[n - 1].id; /* u rounded up to the total */
}

int64_t sample_token(const sample_params *p, float *logits, int64_t vocab, const int64_t *seen, int64_t nseen,
                     sample_rng *r)
{
    if (p->repetition_penalty != 1)
        penalise(logits, vocab, seen, nseen, p->repetition_penalty);
    if (p->temperature == 0)
        return argmax(logits, vocab);
    if (!sample_drawable(logits, vocab))
        return SAMPLE_NOT_FINITE;
    candidate *c = malloc((size_t)vocab * sizeof *c);
    double *w = malloc((size_t)vocab * sizeof *w), total = 0;
    if (!c || !w)
        abort(); /* out of host memory */
    for (int64_t v = 0; v < vocab; v++)
        c[v] = (candidate){logits[v], v};
    qsort(c, (size_t)vocab, sizeof *c, likelier);
    int64_t n = p->top_k > 0 && p->top_k < vocab ? p->top_k : vocab;
    while (n < vocab && c[n].logit == c[n - 1].logit) /* ties with the k-th stay, as TopKLogitsWarper's */
        n++;
    for (int64_t i = 0; i < n; i++) /* softmax(logits / T), unnormalised: exp(0) for the likeliest */
        total += w[i] = exp(((double)c[i].logit - c[0].logit) / p->temperature);
    if (p->top_p < 1) {
        n = nucleus(w, n, total, p->top_p);
        total = 0;
        for (int64_t i = 0; i < n; i++)
            total += w[i];
    }
    int64_t token = draw(c, w, n, total, r);
    free(w);
    free(c);
    return token;
}
