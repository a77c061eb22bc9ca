/* state.c: a program's state (docs/graph-format.md, "State"): tensors of its
 * weights region that persist across runs and that the graph's `update`
 * lines change.  The program writes its own copy by dma.scatter
 * (compiler/back/be_update.c); after a launch the runtime brings the
 * state's host copy up to date and gives the same slices to every other
 * loaded program holding that state in its own weights region. */
#include "rt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One update of a loaded program: tensor indices into its table. */
struct rt_update {
    int state, src, index;
    int dim;
    int line;
};

/* Does some core of p scatter into tensor S (at its first byte)? */
static int scatters_into(const isa_program *p, const isa_tensor *S)
{
    for (int c = 0; c < p->ncores; c++)
        for (size_t i = 0; i < p->cores[c].n; i++) {
            const isa_insn *in = &p->cores[c].insns[i];
            if (in->op == ISA_OP_DMA_SCATTER && in->d.reg == 0 && (uint64_t)in->d.off == S->dram_off)
                return 1;
        }
    return 0;
}

/* One update line of g as tensors of p. */
static int update_tensors(const isa_program *p, const gr_graph *g, const gr_update *u, rt_update *out, char *err,
                          size_t errlen)
{
    out->state = rt_value_tensor(p, g->values[u->state].name);
    out->src = rt_value_tensor(p, g->values[u->src].name);
    out->index = rt_value_tensor(p, g->values[u->index].name);
    out->dim = u->dim;
    out->line = u->line;
    const char *missing = out->state < 0 ? g->values[u->state].name
                          : out->src < 0 ? g->values[u->src].name
                                         : out->index < 0 ? g->values[u->index].name : NULL;
    if (missing)
        return isa_errf(err, errlen, "graph line %d: update: %%%s is not a tensor of the program", u->line, missing);
    const isa_tensor *S = &p->tensors[out->state];
    if (S->role != ISA_ROLE_WEIGHT || !rt_in_weights(p, S) || p->tensors[out->src].role != ISA_ROLE_OUTPUT)
        return isa_errf(err, errlen, "graph line %d: update: state %s must be in the weights region and its "
                        "source %s an output", u->line, S->name, p->tensors[out->src].name);
    if (!scatters_into(p, S))
        return isa_errf(err, errlen, "graph line %d: update of %s: the program has no dma.scatter into it (a program "
                        "compiled before the compiler wrote state updates: compile it again)", u->line, S->name);
    return 0;
}

int rt_state_init(rt_program *prog, char *err, size_t errlen)
{
    const isa_program *p = prog->p;
    if (!p->graph || !strstr(p->graph, "\nupdate %"))
        return 0;
    char msg[1024];
    gr_graph *g = gr_graph_parse(p->graph, "<program graph>", msg, sizeof msg);
    if (!g)
        return isa_errf(err, errlen, "%s", msg);
    int rc = 0;
    prog->upd = calloc((size_t)g->nupdates + 1, sizeof *prog->upd);
    prog->before = calloc(p->ntensors ? p->ntensors : 1, sizeof *prog->before);
    if (!prog->upd || !prog->before)
        rc = isa_errf(err, errlen, "out of host memory");
    for (int i = 0; i < g->nupdates && !rc; i++)
        rc = update_tensors(p, g, &g->updates[i], &prog->upd[prog->nupd++], err, errlen);
    gr_graph_free(g);
    return rc;
}

void rt_state_free(rt_program *prog)
{
    for (size_t i = 0; prog->before && i < prog->p->ntensors; i++)
        free(prog->before[i]);
    free(prog->before);
    free(prog->upd);
}

const float *rt_state_before(const rt_program *prog, int ti)
{
    return prog->before ? prog->before[ti] : NULL;
}

/* The positions of an update: the index tensor's host copy, each an
 * integer in [0, size of the state along dim) (the program's scatter
 * faulted on any other).  A timing-only run has no data to hold to that
 * (its inputs are random): a position that is not one is taken as k, its
 * place in the index, for the sticks counted. */
static int positions(rt_program *prog, const rt_update *u, int values, int64_t *pos, int64_t n, char *err,
                     size_t errlen)
{
    const isa_tensor *S = &prog->p->tensors[u->state], *I = &prog->p->tensors[u->index];
    const float *h = prog->host[u->index];
    for (int64_t k = 0; k < n; k++) {
        double x = h ? h[k] : 0;
        int bad = x != floor(x) || x < 0 || x >= (double)S->shape[u->dim];
        if (bad && !values)
            x = (double)(k % S->shape[u->dim]);
        else if (bad)
            return isa_errf(err, errlen, "graph line %d: update of %s: position %g (%s[%lld]) is not in [0, %lld)",
                            u->line, S->name, x, I->name, (long long)k, (long long)S->shape[u->dim]);
        pos[k] = (int64_t)x;
    }
    return 0;
}

/* Each element of source X goes to state S at its index with pos[i] for
 * i along dim: its value into S's host copy (when both have one), its
 * stick of S's device layout marked dirty. */
static void place(const isa_tensor *S, uint32_t sb, const isa_tensor *X, int dim, const int64_t *pos, const float *src,
                  float *host, uint8_t *dirty)
{
    int64_t n = rt_tensor_elems(X), idx[ISA_MAX_RANK] = {0};
    for (int64_t e = 0; e < n; e++) {
        int64_t at[ISA_MAX_RANK], flat = 0;
        for (int d = 0; d < S->rank; d++) {
            at[d] = d == dim ? pos[idx[d]] : idx[d];
            flat = flat * S->shape[d] + at[d];
        }
        if (host && src)
            host[flat] = src[e];
        dirty[isa_layout_offset(S, sb, at) / sb] = 1;
        for (int d = X->rank - 1; d >= 0 && ++idx[d] == X->shape[d]; d--)
            idx[d] = 0;
    }
}

/* Write the dirty sticks of state tensor ti of q (another program than the
 * one that ran) from its host copy, where q's weights are on the device;
 * the bytes written. */
static uint64_t write_sticks(rt_program *q, int ti, const uint8_t *dirty, char *err, size_t errlen, int *rc)
{
    const isa_tensor *S = &q->p->tensors[ti];
    uint32_t sb = q->p->stick_bytes;
    uint64_t nst = S->bytes / sb, bytes = 0;
    uint8_t *buf = NULL;
    if (q->host[ti] && rt_region_present(q, S) && !(buf = malloc((size_t)S->bytes))) {
        *rc = isa_errf(err, errlen, "state %s: out of host memory", S->name);
        return 0;
    }
    if (buf)
        isa_layout_pack(S, sb, q->host[ti], buf);
    for (uint64_t k = 0; k < nst; k++) {
        if (!dirty[k])
            continue;
        bytes += sb;
        if (buf && sim_dram_write(q->dev->sim, rt_tensor_dev_addr(q, S) + k * sb, buf + k * sb, sb))
            *rc = isa_errf(err, errlen, "state %s: device DRAM write failed", S->name);
    }
    free(buf);
    return bytes;
}

/* Update u of prog into state tensor ti of q (prog itself, whose scatter
 * wrote the device's copy: its host copy only; or another loaded program
 * holding the same state: both); the device bytes the update writes. */
static uint64_t update_one(rt_program *prog, const rt_update *u, rt_program *q, int ti, const int64_t *pos, int values,
                           char *err, size_t errlen, int *rc)
{
    const isa_tensor *S = &q->p->tensors[ti], *X = &prog->p->tensors[u->src];
    uint32_t sb = q->p->stick_bytes;
    uint8_t *dirty = calloc((size_t)(S->bytes / sb) + 1, 1);
    if (!dirty) {
        *rc = isa_errf(err, errlen, "state %s: out of host memory", S->name);
        return 0;
    }
    float *host = values ? q->host[ti] : NULL;
    if (q == prog && host) { /* the values this run read, for rt_check_graph */
        size_t n = (size_t)rt_tensor_elems(S) * sizeof *host;
        free(prog->before[ti]);
        if ((prog->before[ti] = malloc(n ? n : 1)))
            memcpy(prog->before[ti], host, n);
    }
    place(S, sb, X, u->dim, pos, values ? prog->host[u->src] : NULL, host, dirty);
    if (host)
        rt_host_changed(q, ti);
    uint64_t bytes = 0;
    if (q != prog)
        bytes = write_sticks(q, ti, dirty, err, errlen, rc);
    else
        for (uint64_t k = 0; k < S->bytes / sb; k++)
            bytes += dirty[k] ? sb : 0;
    free(dirty);
    return bytes;
}

/* The same state in another program: a tensor of that name and shape. */
static int same_state(const rt_program *q, const isa_tensor *S)
{
    int ti = isa_program_find_tensor(q->p, S->name);
    if (ti < 0 || q->p->tensors[ti].role != ISA_ROLE_WEIGHT || q->p->tensors[ti].rank != S->rank)
        return -1;
    return memcmp(q->p->tensors[ti].shape, S->shape, (size_t)S->rank * sizeof *S->shape) ? -1 : ti;
}

int rt_state_apply(rt_program *prog, rt_run_result *r, char *err, size_t errlen)
{
    int rc = 0, values = sim_get_options(prog->dev->sim)->values;
    for (int i = 0; i < prog->nupd && !rc; i++) {
        const rt_update *u = &prog->upd[i];
        const isa_tensor *S = &prog->p->tensors[u->state], *X = &prog->p->tensors[u->src];
        int64_t n = rt_tensor_elems(&prog->p->tensors[u->index]);
        int64_t *pos = malloc((size_t)(n ? n : 1) * sizeof *pos);
        if (!pos)
            return isa_errf(err, errlen, "state %s: out of host memory", S->name);
        if (n != X->shape[u->dim])
            rc = isa_errf(err, errlen, "graph line %d: update of %s: %lld positions for %lld slices of %s", u->line,
                          S->name, (long long)n, (long long)X->shape[u->dim], X->name);
        if (!rc)
            rc = positions(prog, u, values, pos, n, err, errlen);
        /* every program holding this state gets the slices: the running
         * one's scatter wrote its copy (in the run's cycles); another's copy
         * stands in for the one buffer a real runtime would share, so its
         * write is not charged */
        for (rt_program *q = prog->dev->programs; q && !rc; q = q->next) {
            int ti = q == prog ? u->state : same_state(q, S);
            if (ti < 0)
                continue;
            uint64_t b = update_one(prog, u, q, ti, pos, values, err, errlen, &rc);
            if (q == prog)
                r->state_bytes += b;
        }
        free(pos);
    }
    return rc;
}
