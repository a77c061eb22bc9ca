/* be_host.c: the host-op kernel kind (be_kind.c's "host fallback" row): a
 * source op the device does not run (docs/compiler.md, "Host ops").  Its
 * inputs and its result go through DRAM; its code is one `host`
 * instruction on every core, a barrier at which the runtime runs the op
 * on the host (docs/runtime.md, "Host fallback"). */
#include "backend.h"

#include <inttypes.h>

static const ir_node *host_node(const be_ctx *c, int pos)
{
    const ir_kernel *K = &c->p->kernels[c->p->order[pos]];
    return &c->p->nodes[K->nodes[0]];
}


/* It reads its inputs and writes its result in DRAM, none aligned with
 * any core's rows: nothing it touches stays in LX. */
int be_host_access(be_ctx *c, int pos, be_access **out, int *n)
{
    const ir_node *N = host_node(c, pos);
    be_access *a = ir_xalloc((size_t)(N->nhin + N->nhout + 1) * sizeof *a);
    *n = 0;
    for (int i = 0; i < N->nhin; i++)
        a[(*n)++] = (be_access){.buf = N->hin[i]};
    a[(*n)++] = (be_access){.buf = N->out, .write = 1};
    for (int i = 0; i < N->nhout; i++)
        a[(*n)++] = (be_access){.buf = N->hout[i], .write = 1};
    *out = a;
    return 0;
}

/* A buffer's bytes in device layout: what crosses the link. */
static int64_t dev_bytes(const be_ctx *c, int b)
{
    return c->lay[b].groups * c->lay[b].rows * c->t.stick;
}

int be_host_coll(const ir_prog *p, const ir_node *N)
{
    return N->kind == IR_HOST && N->nops && gr_coll_of(p->src[N->ops[0]].op) >= 0;
}

int be_host_result(const ir_prog *p, int b)
{
    const ir_buf *B = &p->bufs[b];
    return B->kind == IR_BUF_COMPUTED && B->node >= 0 && p->nodes[B->node].kind == IR_HOST &&
           !be_host_coll(p, &p->nodes[B->node]);
}

/* Bytes a host op moves each way: its inputs' and its results'.  An
 * input another host op wrote is on the host already, and a result only
 * host ops read stays there (runtime/fallback.c). */
static void host_bytes(const be_ctx *c, int pos, int64_t *in, int64_t *out)
{
    const ir_node *N = host_node(c, pos);
    const int coll = be_host_coll(c->p, N);
    *in = 0;
    for (int i = 0; i < N->nhin; i++)
        *in += !coll && be_host_result(c->p, N->hin[i]) ? 0 : dev_bytes(c, N->hin[i]);
    *out = be_host_only(c->p, N->out) ? 0 : dev_bytes(c, N->out);
    for (int i = 0; i < N->nhout; i++)
        *out += be_host_only(c->p, N->hout[i]) ? 0 : dev_bytes(c, N->hout[i]);
}

/* The runtime's model (docs/runtime.md, "Host fallback"): each way one
 * link transfer, the host's dispatch and its pass over the bytes. */
double be_host_estimate(be_ctx *c, int pos)
{
    int64_t in, out;
    host_bytes(c, pos, &in, &out);
    const chip_config *k = c->cfg;
    double ns = 2 * k->pcie_latency_ns + (double)(in + out) / k->pcie_bytes_per_s * 1e9 + k->host_op_ns +
                (double)(in + out) / k->host_bytes_per_s * 1e9;
    return ns * k->clock_ghz;
}

/* Every core takes part: the chip stops while the host works.  The
 * estimate is kept for the report. */
int be_host_plan(be_ctx *c, int pos)
{
    be_work *w = &c->work[pos];
    w->cores = (int)c->cfg->cores;
    w->rows = w->cols = 0;
    w->est_cycles = be_host_estimate(c, pos);
    return 0;
}

int64_t be_host_need(be_ctx *c, int pos)
{
    (void)c;
    (void)pos;
    return 0;
}

/* `host node=S` on every core, S the op's node in the program's graph. */
int be_host_emit(be_ctx *c, int pos)
{
    const ir_kernel *K = &c->p->kernels[c->p->order[pos]];
    for (int core = 0; core < (int)c->cfg->cores; core++) {
        cc_emit *e = &c->em[core];
        isa_insn in;
        isa_insn_init(&in, ISA_OP_HOST);
        in.val = host_node(c, pos)->ops[0];
        cc_kernel_begin(e, K->name);
        cc_push(e, &in);
        cc_kernel_end(e);
    }
    return 0;
}

/* A host op takes no work_div SPEC. */
int64_t be_host_split(const char **q, be_work *w)
{
    (void)q;
    (void)w;
    return -1;
}

void be_host_print_work(const be_ctx *c, int pos, FILE *f)
{
    const ir_node *N = host_node(c, pos);
    fprintf(f, "kernel %s: host op %s (graph line %d)\n", c->p->kernels[c->p->order[pos]].name,
            c->p->src[N->ops[0]].op, c->p->src[N->ops[0]].line);
}

void be_host_print_report(const be_ctx *c, int pos, int forced, FILE *f)
{
    (void)forced;
    const ir_node *N = host_node(c, pos);
    int64_t in, out;
    host_bytes(c, pos, &in, &out);
    fprintf(f, "%s: host fallback %s (graph line %d) on the host, every core waits; %" PRId64
            " bytes to the host, %" PRId64 " back, estimate %.0f cycles\n",
            c->p->kernels[c->p->order[pos]].name, c->p->src[N->ops[0]].op, c->p->src[N->ops[0]].line, in, out,
            c->work[pos].est_cycles);
}
