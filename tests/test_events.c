/* test_events.c: the event loop's queue (sim/events.c) pops events in the
 * order the engine relies on: by time, and among equal times in the order
 * they were scheduled, agents' and token events alike; an agent popped and
 * not scheduled again is gone, one scheduled again (at any time) runs at
 * its new time.  Checked on hand-made cases and against a plain list
 * searched for its least (time, order) over random schedules. */
#include <CUnit/CUnit.h>
#include <stdlib.h>

#include "events.h"
#include "testutil.h"

static void test_equal_times_pop_in_the_order_scheduled(void)
{
    sim_evq q;
    sim_evq_init(&q, 8);
    sim_evq_agent(&q, 5, 10);
    sim_evq_token(&q, 10, 3, 7);
    sim_evq_agent(&q, 1, 10);
    sim_evq_agent(&q, 2, 4.5);
    sim_event e;
    CU_ASSERT_EQUAL_FATAL(sim_evq_pop(&q, &e), 1);
    CU_ASSERT_EQUAL(e.agent, 2);
    CU_ASSERT_EQUAL(e.t, 4.5);
    CU_ASSERT_EQUAL_FATAL(sim_evq_pop(&q, &e), 1);
    CU_ASSERT_EQUAL(e.agent, 5);
    CU_ASSERT_EQUAL_FATAL(sim_evq_pop(&q, &e), 1);
    CU_ASSERT_EQUAL(e.agent, -1);
    CU_ASSERT_EQUAL(e.core, 3);
    CU_ASSERT_EQUAL(e.tok, 7);
    CU_ASSERT_EQUAL_FATAL(sim_evq_pop(&q, &e), 1);
    CU_ASSERT_EQUAL(e.agent, 1);
    CU_ASSERT_EQUAL(sim_evq_pop(&q, &e), 0);
    sim_evq_free(&q);
}

static void test_popped_agent_scheduled_again_runs_at_its_new_time(void)
{
    sim_evq q;
    sim_evq_init(&q, 3);
    sim_evq_agent(&q, 0, 1);
    sim_evq_agent(&q, 2, 3);
    sim_event e;
    CU_ASSERT_EQUAL_FATAL(sim_evq_pop(&q, &e), 1);
    CU_ASSERT_EQUAL(e.agent, 0);
    sim_evq_agent(&q, 0, 5); /* while it runs: later than agent 2 */
    CU_ASSERT_EQUAL_FATAL(sim_evq_pop(&q, &e), 1);
    CU_ASSERT_EQUAL(e.agent, 2);
    sim_evq_agent(&q, 2, 3); /* at the time it runs: next, before agent 0 */
    CU_ASSERT_EQUAL_FATAL(sim_evq_pop(&q, &e), 1);
    CU_ASSERT_EQUAL(e.agent, 2);
    CU_ASSERT_EQUAL(e.t, 3);
    CU_ASSERT_EQUAL_FATAL(sim_evq_pop(&q, &e), 1);
    CU_ASSERT_EQUAL(e.agent, 0);
    CU_ASSERT_EQUAL(e.t, 5);
    CU_ASSERT_EQUAL(sim_evq_pop(&q, &e), 0);
    sim_evq_free(&q);
}

/* New times just above the earliest pending ones (looked at before the
 * halving, events.c) and before them: each pops at its time, and one
 * scheduled at a pending time follows those scheduled there before it. */
static void test_times_near_the_earliest_pop_in_order(void)
{
    sim_evq q;
    sim_evq_init(&q, 8);
    sim_evq_agent(&q, 1, 6);
    sim_evq_agent(&q, 2, 4);    /* before every pending time */
    sim_evq_agent(&q, 6, 9);    /* after */
    sim_evq_token(&q, 4, 0, 9); /* the earliest time, scheduled after agent 2 */
    sim_evq_agent(&q, 7, 5);    /* just above the earliest */
    sim_evq_agent(&q, 0, 5);    /* the time just above, again */
    sim_evq_agent(&q, 3, 2);    /* before every pending time */
    sim_evq_agent(&q, 4, 4.5);  /* just above the second */
    sim_evq_agent(&q, 5, 7);    /* higher up: found by halving */
    sim_event e;
    const int want[] = {3, 2, -1, 4, 7, 0, 1, 5, 6};
    const double at[] = {2, 4, 4, 4.5, 5, 5, 6, 7, 9};
    for (int i = 0; i < 9; i++) {
        CU_ASSERT_EQUAL_FATAL(sim_evq_pop(&q, &e), 1);
        CU_ASSERT_EQUAL(e.agent, want[i]);
        CU_ASSERT_EQUAL(e.t, at[i]);
    }
    CU_ASSERT_EQUAL(sim_evq_pop(&q, &e), 0);
    sim_evq_free(&q);
}

/* The reference: every pending event in a list with its order number. */
typedef struct {
    double t;
    uint64_t order;
    int agent, tok;
} ref_event;

static int ref_pop(ref_event *v, int *n, ref_event *out)
{
    if (!*n)
        return 0;
    int best = 0;
    for (int i = 1; i < *n; i++)
        if (v[i].t < v[best].t || (v[i].t == v[best].t && v[i].order < v[best].order))
            best = i;
    *out = v[best];
    v[best] = v[--*n];
    return 1;
}

/* Random schedules of `agents` agents whose times lie `spread` steps of 0.5
 * after now: a few steps make many times equal, many make many distinct
 * times pending. */
enum { MAX_AGENTS = 300, STEPS = 20000 };
static void random_schedules(int agents, int spread)
{
    sim_evq q;
    sim_evq_init(&q, agents);
    static ref_event ref[MAX_AGENTS + STEPS];
    int nref = 0, pending[MAX_AGENTS] = {0};
    uint64_t order = 0;
    srand(7);
    double now = 0;
    for (int a = 0; a < agents; a += 3) {
        sim_evq_agent(&q, a, 0);
        ref[nref++] = (ref_event){0, order++, a, -1};
        pending[a] = 1;
    }
    for (int step = 0; step < STEPS; step++) {
        sim_event e;
        ref_event r = {0};
        int got = sim_evq_pop(&q, &e), want = ref_pop(ref, &nref, &r);
        CU_ASSERT_EQUAL_FATAL(got, want);
        if (!got)
            break;
        CU_ASSERT_EQUAL_FATAL(e.t, r.t);
        CU_ASSERT_EQUAL_FATAL(e.agent, r.agent);
        CU_ASSERT_EQUAL_FATAL(e.agent < 0 ? e.tok : -1, r.tok);
        now = e.t;
        if (e.agent >= 0)
            pending[e.agent] = 0;
        /* what an agent does when it runs: wake itself or others, at now or
         * later (times on a coarse grid, so that many are equal), and now
         * and then a token event */
        for (int k = rand() % 4; k > 0; k--) {
            int a = k == 1 && e.agent >= 0 ? e.agent : rand() % agents;
            double t = now + (rand() % spread) * 0.5;
            if (rand() % 8 == 0) {
                sim_evq_token(&q, t, 0, step);
                ref[nref++] = (ref_event){t, order++, -1, step};
            } else if (!pending[a]) {
                sim_evq_agent(&q, a, t);
                ref[nref++] = (ref_event){t, order++, a, -1};
                pending[a] = 1;
            }
        }
    }
    sim_evq_free(&q);
}

static void test_random_schedules_pop_as_a_sorted_list(void) { random_schedules(37, 5); }

/* Many distinct pending times (a few dozen, then a few hundred): new times
 * land before, between and after the pending ones, found by counting and by
 * halving, and the arrays of times grow and slide. */
static void test_random_spread_schedules_pop_as_a_sorted_list(void)
{
    random_schedules(37, 4000);
    random_schedules(MAX_AGENTS, 4000);
}

int main(void)
{
    static const tu_test tests[] = {
        {"equal_times_pop_in_the_order_scheduled", test_equal_times_pop_in_the_order_scheduled},
        {"popped_agent_scheduled_again_runs_at_its_new_time",
         test_popped_agent_scheduled_again_runs_at_its_new_time},
        {"times_near_the_earliest_pop_in_order", test_times_near_the_earliest_pop_in_order},
        {"random_schedules_pop_as_a_sorted_list", test_random_schedules_pop_as_a_sorted_list},
        {"random_spread_schedules_pop_as_a_sorted_list", test_random_spread_schedules_pop_as_a_sorted_list},
        {NULL, NULL},
    };
    return tu_run("events", tests);
}
