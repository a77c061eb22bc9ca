/* be_planmemo.c: plans remembered by the bytes of what they read.  A
 * planner writes every input its plan reads into a key (be_key_put and
 * its kin), position-free, and a plan whose key is a remembered one's is
 * that plan: cc_compile plans its kernels twice (products fused and
 * apart), most of them on the same inputs.  The key's writer is the
 * planner's own (be_rows.c's rk_plan_key); SPYRE_CHECK_PLANS=1 makes each
 * planner plan again a kernel it finds and abort where the two differ. */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

struct be_planent {
    unsigned char *key;
    size_t n;
    void *plan;
};

void be_key_put(be_key *q, const void *v, size_t n)
{
    if (q->n + n > q->cap) {
        q->cap = 2 * (q->n + n);
        q->b = realloc(q->b, q->cap);
        if (!q->b)
            abort();
    }
    memcpy(q->b + q->n, v, n);
    q->n += n;
}

void be_key_i64(be_key *q, int64_t v)
{
    be_key_put(q, &v, sizeof v);
}

void be_key_f64(be_key *q, double v)
{
    be_key_put(q, &v, sizeof v);
}

/* (A few dozen plans a compile: a list, compared by memcmp.) */
void *be_planmemo_next(const be_planmemo *m, int *i)
{
    for (; *i < m->n; ++*i) {
        const struct be_planent *x = &m->e[*i];
        if (x->n == m->key.n && !memcmp(x->key, m->key.b, m->key.n))
            return m->e[(*i)++].plan;
    }
    return NULL;
}

void be_planmemo_keep(be_planmemo *m, const void *plan, size_t size)
{
    m->e = ir_xgrow(m->e, &m->cap, m->n + 1, sizeof *m->e);
    struct be_planent *x = &m->e[m->n++];
    x->key = ir_xmemdup(m->key.b, m->key.n);
    x->n = m->key.n;
    x->plan = ir_xmemdup(plan, size);
}

void be_planmemo_free(be_planmemo *m)
{
    for (int i = 0; i < m->n; i++) {
        free(m->e[i].key);
        free(m->e[i].plan);
    }
    free(m->e);
    free(m->key.b);
    *m = (be_planmemo){0};
}

int be_check_plans(void)
{
    static int check = -1;
    if (check < 0)
        check = getenv("SPYRE_CHECK_PLANS") && !strcmp(getenv("SPYRE_CHECK_PLANS"), "1");
    return check;
}
