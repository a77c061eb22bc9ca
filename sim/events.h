/* events.h: the event loop's queue (events.c; private to the simulator,
 * here on its own so that a test can drive it). */
#ifndef SIM_EVENTS_H
#define SIM_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#define SIM_EVQ_END UINT32_MAX

/* Pending events in (time, order scheduled) order.  Each agent (the engine
 * numbers them core * (ISA_NUNITS + 1) + unit, the sequencer last) has at
 * most one event pending; token events any number.  Times are never
 * negative and never NaN. */
/* An event's node: agent a's is node a (an agent has at most one event
 * pending, so its node needs no allocation), token events' lie above. */
typedef struct {
    uint32_t next; /* the next event of its time, or SIM_EVQ_END */
    int32_t core;  /* a token event's core and token */
    int64_t tok;
} sim_evnode;
typedef struct {
    double t;
    uint32_t head, tail; /* its events, first scheduled first */
} sim_evtime;
typedef struct {
    sim_evtime *times; /* the distinct pending times, ascending, in [lo, hi) */
    size_t lo, hi, cap;
    size_t hint;       /* where the last search ended (sim_evq_time) */
    sim_evnode *node;  /* every event's node; unused token nodes chained from `spare` */
    uint32_t nagents, nnode, nodecap, spare;
} sim_evq;
typedef struct {
    double t;
    int agent; /* its agent, or -1 for a token event */
    int core;  /* a token event's core and token */
    int64_t tok;
} sim_event;
void sim_evq_init(sim_evq *q, int nagents);
void sim_evq_free(sim_evq *q);
/* The entry of time t, made if none is pending. */
sim_evtime *sim_evq_time(sim_evq *q, double t);
/* Event node n, last of time entry at. */
static inline void sim_evq_add(sim_evq *q, sim_evtime *at, uint32_t n)
{
    if (at->tail == SIM_EVQ_END)
        at->head = n;
    else
        q->node[at->tail].next = n;
    at->tail = n;
}
/* Schedule agent `agent` (which has no event pending) at t.  Inline, as
 * the pop: most events are an agent's. */
static inline void sim_evq_agent(sim_evq *q, int agent, double t)
{
    q->node[agent].next = SIM_EVQ_END;
    sim_evq_add(q, sim_evq_time(q, t), (uint32_t)agent);
}
void sim_evq_token(sim_evq *q, double t, int core, int64_t tok);
/* 1 when an event scheduled at t now would be the next one popped: it
 * comes before every pending time. */
static inline int sim_evq_first(const sim_evq *q, double t)
{
    return q->lo == q->hi || t < q->times[q->lo].t;
}
/* The earliest event into *e and out of the queue: 1, or 0 when none is
 * pending.  Inline: the event loop pops every event, and a call costs a
 * third of what a pop does. */
static inline int sim_evq_pop(sim_evq *q, sim_event *e)
{
    if (q->lo == q->hi)
        return 0;
    sim_evtime *at = &q->times[q->lo];
    uint32_t n = at->head;
    sim_evnode *v = &q->node[n];
    at->head = v->next;
    /* the time's last event: a step without a branch (whether a time has
     * more events has no pattern, the step's test mispredicted often) */
    q->lo += at->head == SIM_EVQ_END;
    if (q->lo == q->hi)
        q->lo = q->hi = 0;
    if (n < q->nagents) {
        *e = (sim_event){at->t, (int)n, -1, -1};
        return 1;
    }
    *e = (sim_event){at->t, -1, v->core, v->tok};
    v->next = q->spare;
    q->spare = n;
    return 1;
}

#endif
