/* serve_sched.c: the serving policy of Spyre's vLLM plugin as a
 * discrete-event loop (docs/serving.md, "Policy"): FCFS admission up to
 * max_seqs sequences and the free KV blocks, one sequence prefilling at a
 * time in fixed chunks, prefill chunks alternating with decode steps of
 * every decoding sequence, 64-token KV blocks allocated as positions fill,
 * preemption (recompute) of the latest admitted sequence when blocks run
 * out, and whole shared-prefix chunks kept in a prefix cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

enum { WAITING, PREFILL, DECODE, DONE };

/* A cached chunk: chunk `index` of prefix_group's shared prefix. */
typedef struct {
    int group, index, refs;
    double last_use;
} sv_chunk;

typedef struct {
    int state, computed, target, generated, blocks, admitted;
    int *chunks, nchunks; /* cache entries this sequence shares */
} sv_seq;

typedef struct {
    const sv_policy *p;
    const sv_request *req;
    int n;
    sv_seq *s;
    int *queue, qhead, qlen; /* waiting sequences: a deque (preempted go first) */
    int *run, nrun;   /* running sequences (prefill or decode), in admission order */
    int *batch;       /* a decode step's sequences */
    int prefilling;   /* the sequence in prefill, or -1 */
    int free_blocks, admit_count, finished;
    sv_chunk *cache;
    int ncache;
    double t, start; /* the clock; the first arrival, where the reports' time begins */
    sv_run *out;
} sv_state;

int sv_blocks_for(int tokens) { return (tokens + SV_BLOCK_TOKENS - 1) / SV_BLOCK_TOKENS; }
static int chunk_blocks(const sv_state *st) { return st->p->chunk / SV_BLOCK_TOKENS; }

/* Blocks held by cache entries no sequence uses (evictable). */
static int evictable(const sv_state *st)
{
    int b = 0;
    for (int i = 0; i < st->ncache; i++)
        b += st->cache[i].refs ? 0 : chunk_blocks(st);
    return b;
}

/* Free n blocks by evicting unused cache entries, least recently used first. */
static int take_blocks(sv_state *st, int n)
{
    while (st->free_blocks < n) {
        int lru = -1;
        for (int i = 0; i < st->ncache; i++)
            if (!st->cache[i].refs && (lru < 0 || st->cache[i].last_use < st->cache[lru].last_use))
                lru = i;
        if (lru < 0)
            return -1;
        st->cache[lru] = st->cache[--st->ncache];
        for (int i = 0; i < st->n; i++) /* entries moved: renumber the references */
            for (int k = 0; k < st->s[i].nchunks; k++)
                if (st->s[i].chunks[k] == st->ncache)
                    st->s[i].chunks[k] = lru;
        st->free_blocks += chunk_blocks(st);
    }
    st->free_blocks -= n;
    return 0;
}

static void release(sv_state *st, sv_seq *q)
{
    for (int k = 0; k < q->nchunks; k++) {
        st->cache[q->chunks[k]].refs--;
        st->cache[q->chunks[k]].last_use = st->t;
    }
    st->free_blocks += q->blocks - q->nchunks * chunk_blocks(st);
    q->blocks = q->nchunks = 0;
}

static int find_chunk(const sv_state *st, int group, int index)
{
    for (int i = 0; i < st->ncache; i++)
        if (st->cache[i].group == group && st->cache[i].index == index)
            return i;
    return -1;
}

/* Is chunk k of request r all inside its shared prefix? */
static int shareable(const sv_state *st, const sv_request *r, int k)
{
    return r->prefix_group >= 0 && (k + 1) * st->p->chunk <= r->prefix;
}

/* Take sequence i off the running list and back to the front of the
 * queue: it recomputes its prompt and the tokens so far when admitted
 * again (vLLM's recompute preemption). */
static void preempt(sv_state *st, int i)
{
    sv_seq *q = &st->s[i];
    release(st, q);
    q->state = WAITING;
    q->computed = 0;
    if (st->prefilling == i)
        st->prefilling = -1;
    st->out->res[i].preemptions++;
    st->out->preemptions++;
    st->qhead = (st->qhead + st->n - 1) % st->n;
    st->queue[st->qhead] = i;
    st->qlen++;
    int k = 0;
    for (int a = 0; a < st->nrun; a++)
        if (st->run[a] != i)
            st->run[k++] = st->run[a];
    st->nrun = k;
}

/* A block for decoding sequence self, preempting the latest admitted
 * running sequences while none is free; 1 if self was the one preempted. */
static int reserve(sv_state *st, int self)
{
    while (st->free_blocks + evictable(st) < 1) {
        int victim = st->run[st->nrun - 1];
        preempt(st, victim);
        if (victim == self)
            return 1;
    }
    take_blocks(st, 1);
    st->s[self].blocks++;
    return 0;
}

/* Share the cached leading chunks of sequence i's prompt (the last token
 * is always computed: its step gives the next token); the count. */
static int use_cached_prefix(sv_state *st, int i, int dry)
{
    sv_seq *q = &st->s[i];
    const sv_request *r = &st->req[i];
    int k = 0;
    for (; shareable(st, r, k) && (k + 1) * st->p->chunk < q->target; k++) {
        int e = find_chunk(st, r->prefix_group, k);
        if (e < 0)
            break;
        if (dry)
            continue;
        st->cache[e].refs++;
        st->cache[e].last_use = st->t;
        q->chunks[q->nchunks++] = e;
        q->blocks += chunk_blocks(st);
        q->computed += st->p->chunk;
        st->out->cached_chunks++;
    }
    return k;
}

/* Admit the head of the queue when no sequence is prefilling, fewer than
 * max_seqs run and the blocks of its whole prefill can be had (FCFS: the
 * head waits, those behind it too); they are allocated now, as vLLM does. */
static void admit(sv_state *st)
{
    if (!st->qlen || st->prefilling >= 0 || st->nrun >= st->p->max_seqs)
        return;
    int i = st->queue[st->qhead];
    sv_seq *q = &st->s[i];
    q->target = st->req[i].prompt + q->generated;
    int shared = use_cached_prefix(st, i, 1), in_use = 0;
    for (int k = 0; k < shared; k++) /* unused entries count as evictable already */
        in_use += st->cache[find_chunk(st, st->req[i].prefix_group, k)].refs ? chunk_blocks(st) : 0;
    if (st->free_blocks + evictable(st) + in_use < sv_blocks_for(q->target))
        return;
    st->qhead = (st->qhead + 1) % st->n;
    st->qlen--;
    q->state = PREFILL;
    q->admitted = st->admit_count++;
    st->run[st->nrun++] = i;
    st->prefilling = i;
    use_cached_prefix(st, i, 0); /* referenced first: take_blocks evicts only unused entries */
    int need = sv_blocks_for(q->target) - q->blocks;
    take_blocks(st, need);
    q->blocks += need;
}

static void finish_token(sv_state *st, int i)
{
    sv_seq *q = &st->s[i];
    sv_result *r = &st->out->res[i];
    if (q->generated++ == 0)
        r->first = st->t;
    st->out->out_tokens++;
    if (q->generated == st->req[i].output) {
        q->state = DONE;
        r->done = st->t;
        release(st, q);
        st->finished++;
        int k = 0;
        for (int a = 0; a < st->nrun; a++)
            if (st->run[a] != i)
                st->run[k++] = st->run[a];
        st->nrun = k;
    }
}

static void sample(sv_state *st, int tokens, int prefill)
{
    sv_sample *s = &st->out->steps[st->out->nsteps++];
    s->t = st->t - st->start;
    s->kv_used = st->p->kv_blocks - st->free_blocks;
    s->tokens = tokens;
    s->prefill = prefill;
}

/* One prefill chunk of the prefilling sequence (its blocks are held). */
static int prefill_step(sv_state *st, sv_cost_fn cost, void *ctx)
{
    int i = st->prefilling;
    sv_seq *q = &st->s[i];
    const sv_request *r = &st->req[i];
    int k = q->computed / st->p->chunk;
    int tokens = q->target - q->computed < st->p->chunk ? q->target - q->computed : st->p->chunk;
    double c = cost(ctx, 1, 1, q->computed); /* the chunk padded to its compiled size */
    if (c < 0)
        return -1;
    st->t += c;
    q->computed += tokens;
    st->out->prefill_steps++;
    if (shareable(st, r, k) && find_chunk(st, r->prefix_group, k) < 0) { /* its blocks become shared */
        st->cache[st->ncache] = (sv_chunk){r->prefix_group, k, 1, st->t};
        q->chunks[q->nchunks++] = st->ncache++;
    }
    int produced = q->computed == q->target;
    if (produced) {
        q->state = DECODE;
        st->prefilling = -1;
        finish_token(st, i);
    }
    sample(st, produced, 1);
    return 0;
}

/* One decode step of every decoding sequence, oldest first. */
static int decode_step(sv_state *st, sv_cost_fn cost, void *ctx)
{
    for (int a = 0; a < st->nrun; a++) {
        int i = st->run[a];
        if (st->s[i].state == DECODE && sv_blocks_for(st->s[i].computed + 1) > st->s[i].blocks && reserve(st, i))
            a--; /* preempted itself: the list shrank at a */
    }
    int batch = 0, context = 0, *b = st->batch;
    for (int a = 0; a < st->nrun; a++)
        if (st->s[st->run[a]].state == DECODE) {
            b[batch++] = st->run[a];
            context = st->s[st->run[a]].computed > context ? st->s[st->run[a]].computed : context;
        }
    if (!batch)
        return 0;
    /* the step reads its caches in whole blocks (paged): charged at the
     * longest sequence's blocks */
    double c = cost(ctx, 0, batch, sv_blocks_for(context) * SV_BLOCK_TOKENS);
    if (c < 0)
        return -1;
    st->t += c;
    st->out->decode_steps++;
    for (int j = 0; j < batch; j++) {
        st->s[b[j]].computed++;
        finish_token(st, b[j]);
    }
    sample(st, batch, 0);
    return 0;
}

static int sv_step(sv_state *st, sv_cost_fn cost, void *ctx, int *last_prefill)
{
    int decoding = st->nrun - (st->prefilling >= 0);
    if (st->prefilling >= 0 && (!decoding || !*last_prefill)) {
        *last_prefill = 1;
        return prefill_step(st, cost, ctx);
    }
    *last_prefill = 0;
    return decode_step(st, cost, ctx);
}

static int grow_samples(sv_run *out, long *cap)
{
    if (out->nsteps + 1 < *cap)
        return 0;
    *cap = *cap ? 2 * *cap : 1024;
    sv_sample *s = realloc(out->steps, (size_t)*cap * sizeof *s);
    if (!s)
        return -1;
    out->steps = s;
    return 0;
}

static int check_fits(const sv_policy *p, const sv_request *req, int n)
{
    for (int i = 0; i < n; i++)
        if (sv_blocks_for(req[i].prompt + req[i].output - 1) > p->kv_blocks) {
            fprintf(stderr, "spyre serve: the request of line %ld needs %d KV blocks of %d tokens, more than the %d there are\n",
                    req[i].line, sv_blocks_for(req[i].prompt + req[i].output - 1), SV_BLOCK_TOKENS, p->kv_blocks);
            return -2;
        }
    return 0;
}

static int alloc_state(sv_state *st, const sv_policy *p, const sv_request *req, int n, sv_run *out)
{
    memset(st, 0, sizeof *st);
    memset(out, 0, sizeof *out);
    st->p = p, st->req = req, st->n = n, st->out = out;
    st->free_blocks = p->kv_blocks;
    st->prefilling = -1;
    if (n < 1)
        return -1;
    long chunks = 0;
    for (int i = 0; i < n; i++)
        chunks += req[i].prompt / p->chunk + 1;
    st->s = calloc((size_t)n, sizeof *st->s);
    st->queue = calloc((size_t)n, sizeof *st->queue);
    st->run = calloc((size_t)n, sizeof *st->run);
    st->batch = calloc((size_t)n, sizeof *st->batch);
    st->cache = calloc((size_t)chunks, sizeof *st->cache);
    out->res = calloc((size_t)n, sizeof *out->res);
    if (!st->s || !st->queue || !st->run || !st->batch || !st->cache || !out->res)
        return -1;
    for (int i = 0; i < n; i++) {
        st->s[i].chunks = calloc((size_t)(req[i].prompt / p->chunk + 1), sizeof(int));
        if (!st->s[i].chunks)
            return -1;
    }
    return 0;
}

static void free_state(sv_state *st)
{
    for (int i = 0; st->s && i < st->n; i++)
        free(st->s[i].chunks);
    free(st->s);
    free(st->queue);
    free(st->run);
    free(st->batch);
    free(st->cache);
}

static void results(sv_state *st)
{
    for (int i = 0; i < st->n; i++) {
        sv_result *r = &st->out->res[i];
        r->ttft = r->first - st->req[i].arrival;
        r->e2e = r->done - st->req[i].arrival;
        r->tpot = st->req[i].output > 1 ? (r->done - r->first) / (st->req[i].output - 1) : 0;
    }
    st->out->makespan = st->t - st->start;
}

int sv_simulate(const sv_policy *p, const sv_request *req, int n, sv_cost_fn cost, void *ctx, sv_run *out,
                void (*progress)(void *, int, int))
{
    sv_state st;
    memset(&st, 0, sizeof st);
    memset(out, 0, sizeof *out); /* freed by the caller even when no step ran */
    long cap = 0;
    int rc = check_fits(p, req, n), last_prefill = 0, next = 0;
    if (!rc && alloc_state(&st, p, req, n, out))
        rc = -1, fprintf(stderr, "spyre serve: out of host memory\n");
    st.start = n ? req[0].arrival : 0; /* a file's clock may start anywhere (a log's timestamps) */
    while (!rc && st.finished < n) {
        for (; next < n && req[next].arrival <= st.t; next++)
            st.queue[(st.qhead + st.qlen++) % n] = next;
        admit(&st);
        if (!st.nrun) { /* idle until the next arrival (the queue's head always fits an empty device) */
            st.t = req[next].arrival;
            continue;
        }
        rc = grow_samples(out, &cap) ? -1 : sv_step(&st, cost, ctx, &last_prefill);
        if (progress && out->nsteps % 256 == 0)
            progress(ctx, st.finished, n);
    }
    if (!rc)
        results(&st);
    free_state(&st);
    return rc;
}

void sv_run_free(sv_run *r)
{
    free(r->res);
    free(r->steps);
}
