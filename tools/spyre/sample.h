/* sample.h: choosing the next token from a step's logits on the host, as
 * Hugging Face's generate and vLLM's SamplingParams do (sample.c;
 * docs/serving.md, "Sampling"). */
#ifndef SPYRE_SAMPLE_H
#define SPYRE_SAMPLE_H

#include <stdint.h>

/* How the next token is chosen; sample_defaults() is greedy. */
typedef struct {
    double temperature;        /* 0: greedy (the argmax) */
    int64_t top_k;             /* keep the k likeliest; 0: all */
    double top_p;              /* keep the smallest set whose probability reaches p; 1: all */
    double repetition_penalty; /* divide the positive logits of tokens seen (multiply the others); 1: none */
} sample_params;

/* The generator: splitmix64 (Steele, Lea and Flood, "Fast splittable
 * pseudorandom number generators", OOPSLA 2014), one 64-bit word of state,
 * so that a seed repeats the same draws on every host. */
typedef struct {
    uint64_t state;
} sample_rng;

void sample_defaults(sample_params *p);
void sample_seed(sample_rng *r, uint64_t seed);
/* A draw uniform in [0, 1): the generator's top 53 bits. */
double sample_uniform(sample_rng *r);

enum { SAMPLE_NOT_FINITE = -1 };

/* Can softmax weigh logits[0..vocab) for a draw: no NaN, no +inf, not all
 * -inf (a -inf token has probability 0)?  torch.multinomial raises
 * otherwise. */
int sample_drawable(const float *logits, int64_t vocab);

/* The next token from logits[0..vocab), in Hugging Face's order:
 * repetition penalty on the tokens of seen[0..nseen) (the prompt and the
 * tokens so far, each penalised once), temperature, top-k (every token
 * tied with the k-th kept, as TopKLogitsWarper), top-p, then one draw of r
 * from the softmax of what is kept; SAMPLE_NOT_FINITE when the penalised
 * logits are not sample_drawable.  Temperature 0 is greedy, torch.argmax
 * of the penalised logits (the first NaN, else the first of equal maxima),
 * and no draw.  logits is overwritten by the penalty. */
int64_t sample_token(const sample_params *p, float *logits, int64_t vocab, const int64_t *seen, int64_t nseen,
                     sample_rng *r);

#endif
