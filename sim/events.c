/* events.c: the event loop's queue of pending events, in the order (time,
 * then first scheduled first).
 *
 * An agent (a core's sequencer or one of its units) has at most one event
 * pending, so agents' events sit in a tournament tree with one leaf per
 * agent: each inner node holds the least event below it.  Changing a leaf
 * walks one fixed path to the root, comparing with the sibling at each
 * level; the addresses do not depend on the comparisons (unlike a heap's
 * sift-down), so the host loads them all at once.  The earliest event is
 * the root.  An agent's event stays in its leaf while the agent runs, and
 * the next pop retires it unless the agent scheduled itself again: an
 * agent that does so changes its leaf once, not twice.  Token events (a
 * ring instruction's signal to another core) can be several per core and
 * are rare: they wait in a small binary heap beside the tree. */
#include "events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A key: the bits of the (never negative) time above, the sequence number
 * and the agent's leaf below.  Compared as one unsigned integer it orders
 * events by time, then by the order they were scheduled (numbers are
 * unique), as the engine requires. */
#define LEAF_BITS 16
#define KEY_NONE (~(sim_evkey)0)

static sim_evkey make_key(double t, uint64_t seq, unsigned leaf)
{
    uint64_t bits;
    t += 0.0; /* -0.0 becomes +0.0, whose bits sort first */
    memcpy(&bits, &t, sizeof bits);
    return (sim_evkey)bits << 64 | (sim_evkey)(seq << LEAF_BITS | leaf);
}

static double key_time(sim_evkey k)
{
    uint64_t bits = (uint64_t)(k >> 64);
    double t;
    memcpy(&t, &bits, sizeof t);
    return t;
}

static void *grow(void *p, size_t n, size_t size)
{
    p = realloc(p, n * size);
    if (!p) {
        fprintf(stderr, "spyre: out of host memory\n");
        abort();
    }
    return p;
}

void sim_evq_init(sim_evq *q, int nagents)
{
    memset(q, 0, sizeof *q);
    q->nleaf = 1;
    while (q->nleaf < (size_t)nagents)
        q->nleaf *= 2;
    q->tree = grow(NULL, 2 * q->nleaf, sizeof *q->tree);
    for (size_t i = 0; i < 2 * q->nleaf; i++)
        q->tree[i] = KEY_NONE;
    q->cur = -1;
}

void sim_evq_free(sim_evq *q)
{
    free(q->tree);
    free(q->tok);
    memset(q, 0, sizeof *q);
}

/* Leaf `leaf` holds k now: the path above it takes the least of each pair. */
static void set_leaf(sim_evq *q, size_t leaf, sim_evkey k)
{
    size_t n = q->nleaf + leaf;
    q->tree[n] = k;
    for (; n > 1; n >>= 1) {
        sim_evkey s = q->tree[n ^ 1];
        k = s < k ? s : k;
        q->tree[n >> 1] = k;
    }
}

void sim_evq_agent(sim_evq *q, int agent, double t)
{
    set_leaf(q, (size_t)agent, make_key(t, q->seq++, (unsigned)agent));
}

void sim_evq_token(sim_evq *q, double t, int core, int64_t tok)
{
    if (q->ntok == q->tokcap) {
        q->tokcap = q->tokcap ? 2 * q->tokcap : 64;
        q->tok = grow(q->tok, q->tokcap, sizeof *q->tok);
    }
    sim_tokev e = {make_key(t, q->seq++, 0), core, tok};
    size_t i = q->ntok++;
    while (i && e.key < q->tok[(i - 1) / 2].key) {
        q->tok[i] = q->tok[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->tok[i] = e;
}

static sim_tokev token_pop(sim_evq *q)
{
    sim_tokev top = q->tok[0], last = q->tok[--q->ntok];
    size_t i = 0;
    for (size_t c; (c = 2 * i + 1) < q->ntok; i = c) {
        if (c + 1 < q->ntok && q->tok[c + 1].key < q->tok[c].key)
            c++;
        if (!(q->tok[c].key < last.key))
            break;
        q->tok[i] = q->tok[c];
    }
    if (q->ntok)
        q->tok[i] = last;
    return top;
}

int sim_evq_pop(sim_evq *q, sim_event *e)
{
    if (q->cur >= 0 && q->tree[q->nleaf + (size_t)q->cur] == q->curkey)
        set_leaf(q, (size_t)q->cur, KEY_NONE);
    q->cur = -1;
    sim_evkey root = q->tree[1];
    if (q->ntok && q->tok[0].key < root) {
        sim_tokev k = token_pop(q);
        *e = (sim_event){key_time(k.key), -1, k.core, k.tok};
        return 1;
    }
    if (root == KEY_NONE)
        return 0;
    q->cur = (int)(root & ((1u << LEAF_BITS) - 1));
    q->curkey = root;
    *e = (sim_event){key_time(root), q->cur, -1, -1};
    return 1;
}
