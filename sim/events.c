/* events.c: the event loop's queue of pending events, in the order (time,
 * then first scheduled first).
 *
 * Events at one time run in the order they were scheduled, so each
 * distinct pending time keeps a FIFO of its events, and the times sit in
 * an array sorted ascending.  The cores of a program mostly move in step,
 * so few distinct times are pending at once (a 1024^3 GEMM's 256 agents:
 * about 90) and a new event mostly lands at or near the earliest (the
 * GEMM: on it 29 %, just before it 15 %, just above it 20 %) or on or
 * after the latest (4 %): those are checked first, the earliest first, the
 * rest (31 %) found by a forward scan.  A pop takes the head of the
 * earliest time's FIFO.  Earlier rounds kept one key per event, (time,
 * order) in 128 bits, in a binary heap and then in a tournament tree over
 * the agents: a schedule walked log2(agents) levels of 128-bit compares;
 * a calendar of one bucket per cycle (nearly every event lands within
 * 4096 cycles) cost more per schedule and pop than this array. */
#include "events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EVQ_END SIM_EVQ_END

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
    q->cap = nagents > 8 ? (size_t)nagents : 8;
    q->times = grow(NULL, q->cap, sizeof *q->times);
    q->nagents = nagents > 0 ? (uint32_t)nagents : 0;
    q->nnode = q->nagents;
    q->nodecap = q->nagents + 8;
    q->node = grow(NULL, q->nodecap, sizeof *q->node);
    q->spare = EVQ_END;
}

void sim_evq_free(sim_evq *q)
{
    free(q->times);
    free(q->node);
    memset(q, 0, sizeof *q);
}

static uint32_t token_node(sim_evq *q, int32_t core, int64_t tok)
{
    uint32_t n = q->spare;
    if (n != EVQ_END)
        q->spare = q->node[n].next;
    else {
        if (q->nnode == q->nodecap) {
            q->nodecap *= 2;
            q->node = grow(q->node, q->nodecap, sizeof *q->node);
        }
        n = q->nnode++;
    }
    q->node[n] = (sim_evnode){EVQ_END, core, tok};
    return n;
}

/* time_insert when entries must move by memmove: out of line, so that
 * the common inserts (below) need not save the registers its calls do. */
static __attribute__((noinline)) sim_evtime *time_insert_moving(sim_evq *q, size_t i, double t)
{
    if (q->lo > 0 && i - q->lo < q->hi - i) {
        memmove(&q->times[q->lo - 1], &q->times[q->lo], (i - q->lo) * sizeof *q->times);
        q->lo--;
        i--;
    } else {
        if (q->hi == q->cap) {
            if (q->lo > q->cap / 2) { /* the popped half is free: slide down */
                size_t shift = q->lo;
                memmove(q->times, &q->times[shift], (q->hi - shift) * sizeof *q->times);
                q->lo = 0;
                q->hi -= shift;
                i -= shift;
            } else {
                q->cap *= 2;
                q->times = grow(q->times, q->cap, sizeof *q->times);
            }
        }
        memmove(&q->times[i + 1], &q->times[i], (q->hi - i) * sizeof *q->times);
        q->hi++;
    }
    q->times[i] = (sim_evtime){t + 0.0, EVQ_END, EVQ_END}; /* -0.0 pops as +0.0 */
    return &q->times[i];
}

/* A new time at position i of the array (lo <= i <= hi), the times from i
 * on moved up one, or those before it down one when there is room below. */
static inline sim_evtime *time_insert(sim_evq *q, size_t i, double t)
{
    if (q->lo > 0 && i - q->lo < 2) { /* a new earliest or second earliest time (a third of the schedules) */
        q->times[q->lo - 1] = q->times[q->lo];
        q->lo--;
        q->times[i - 1] = (sim_evtime){t + 0.0, EVQ_END, EVQ_END};
        return &q->times[i - 1];
    }
    return time_insert_moving(q, i, t);
}

sim_evtime *sim_evq_time(sim_evq *q, double t)
{
    size_t lo = q->lo, hi = q->hi;
    if (lo == hi)
        return time_insert(q, hi, t);
    if (t <= q->times[lo].t)
        return t == q->times[lo].t ? &q->times[lo] : time_insert(q, lo, t);
    if (t > q->times[hi - 1].t)
        return time_insert(q, hi, t);
    if (t == q->times[hi - 1].t)
        return &q->times[hi - 1];
    /* times[lo].t < t < times[hi - 1].t, so hi - lo >= 2: the last time
     * <= t.  Two in five such events land just above the earliest time or
     * the next (a 1024^3 GEMM: about 100 times pending, the new one after
     * the first in 23%, after the second in 18%), so those two are looked
     * at first, the rest found by a scan, sixteen times at a stride and
     * then the times <= t among the next fifteen counted without a
     * branch, by blocks of four and then in the block (six compares,
     * two steps: a four-step halving of the sixteen, its loads each
     * waiting on the last, took 3% more host time a launch): its loads
     * do not wait on each other much and its branches are
     * mispredicted about once, where halving (about 7 steps for the
     * GEMM) made a chain of dependent loads, the times' lines often out
     * of L1 by then (a launch streams its slots and instructions through
     * it), and a one-by-one scan's exit was a second misprediction (a
     * stride of 4 and then one by one: 4% more host time a launch) */
    const sim_evtime *at = &q->times[lo];
    if (t < at[1].t)
        return time_insert(q, lo + 1, t);
    if (t == at[1].t)
        return &q->times[lo + 1];
    at += 2; /* times[lo + 1].t < t < times[hi - 1].t: lo + 2 < hi */
    if (t < at->t)
        return time_insert(q, lo + 2, t);
    const sim_evtime *last = &q->times[hi - 1]; /* last->t > t stops both scans */
    /* the last scan's place, if it is still before t, is a nearer start
     * (only the order of the times makes a start right) */
    if (q->hint > lo + 2 && q->hint < hi - 1 && q->times[q->hint].t <= t)
        at = &q->times[q->hint];
    while (at + 16 <= last && at[16].t <= t)
        at += 16;
    if (at + 16 <= last) { /* at[16].t > t: the place is one of the next sixteen */
        at += 4 * ((at[4].t <= t) + (at[8].t <= t) + (at[12].t <= t)); /* its block of four */
        at += (at[1].t <= t) + (at[2].t <= t) + (at[3].t <= t);
    } else
        while (at[1].t <= t)
            at++;
    size_t i = (size_t)(at - q->times);
    q->hint = i;
    return at->t == t ? &q->times[i] : time_insert(q, i + 1, t);
}

void sim_evq_token(sim_evq *q, double t, int core, int64_t tok)
{
    sim_evq_add(q, sim_evq_time(q, t), token_node(q, core, tok));
}
