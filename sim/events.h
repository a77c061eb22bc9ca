/* events.h: the event loop's queue (events.c; private to the simulator,
 * here on its own so that a test can drive it). */
#ifndef SIM_EVENTS_H
#define SIM_EVENTS_H

#include <stddef.h>
#include <stdint.h>

/* Pending events in (time, order scheduled) order.  Each agent (the engine
 * numbers them core * (ISA_NUNITS + 1) + unit, the sequencer last; at most
 * 65536) has at most one event pending; token events any number.  Times
 * are never negative.  The order holds for 2^48 events a run. */
__extension__ typedef unsigned __int128 sim_evkey;
typedef struct {
    sim_evkey key;
    int core;
    int64_t tok;
} sim_tokev;
typedef struct {
    sim_evkey *tree; /* [2 * nleaf]: leaves at nleaf + agent, tree[n] the least of tree[2n], tree[2n + 1] */
    size_t nleaf;
    sim_tokev *tok;  /* token events: a binary heap */
    size_t ntok, tokcap;
    uint64_t seq;    /* events scheduled so far */
    int cur;         /* the agent whose event was popped last, or -1 */
    sim_evkey curkey;
} sim_evq;
typedef struct {
    double t;
    int agent; /* its leaf, or -1 for a token event */
    int core;  /* a token event's core and token */
    int64_t tok;
} sim_event;
void sim_evq_init(sim_evq *q, int nagents);
void sim_evq_free(sim_evq *q);
/* Schedule agent `agent` (which has no event pending, or is the one popped
 * last) at t. */
void sim_evq_agent(sim_evq *q, int agent, double t);
void sim_evq_token(sim_evq *q, double t, int core, int64_t tok);
/* The earliest event into *e: 1, or 0 when none is pending.  The event
 * popped before it is gone unless its agent was scheduled again since. */
int sim_evq_pop(sim_evq *q, sim_event *e);

#endif
