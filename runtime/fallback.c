/* fallback.c: host fallback ops (docs/runtime.md, "Host fallback").  A
 * program's `host node=N` instruction stops every core at a barrier;
 * the simulator then calls rt_fallback_host below, which reads the inputs of
 * node N of the program's graph back from device DRAM (device layout,
 * transfer.c), runs the op with the reference executor and writes its
 * result to its tensor, and charges the time the chip waits: each way one
 * PCIe transfer, and the host's time (the chip configuration's pcie_ and
 * host_ keys). */
#include "rt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rt_fallback {
    rt_program *prog;
    rt_run_result *res;
    gr_graph *g;
    rt_ref *ref;
    int values; /* the run computes values (else only timing: the host op moves and computes nothing) */
    int failed; /* a host op failed: the run stops, the op refused */
    char why[512]; /* its message (the op and a reason of up to 400 bytes), located by fb->res->refused_line */
};

int rt_fallback_failed(const rt_fallback *fb, char *why, size_t len)
{
    if (fb && fb->failed)
        snprintf(why, len, "%s", fb->why);
    return fb && fb->failed;
}

/* A host op refused: the run stops (err, for the simulator's fault) and
 * the launch reports why at the op's graph line, as a user error. */
static int refuse(rt_fallback *fb, const gr_node *n, const char *msg, int located, char *err, size_t errlen)
{
    if (located) /* the reference's own messages name the op after the line */
        snprintf(fb->why, sizeof fb->why, "%s", rt_ref_reason(fb->g, (int)(n - fb->g->nodes), msg));
    else
        snprintf(fb->why, sizeof fb->why, "%s: %s", n->op, msg);
    fb->failed = 1;
    fb->res->refused_line = n->line;
    return isa_errf(err, errlen, "graph line %d: %s", n->line, fb->why);
}

/* The host ops' nodes must be in the graph and known to the reference
 * executor: checked before the run, so that a missing op stops it at
 * once, naming the op (*line its graph line). */
static int check_host_ops(const isa_program *p, const gr_graph *g, int linked, int *line, char *err, size_t errlen)
{
    for (int c = 0; c < p->ncores; c++)
        for (size_t i = 0; i < p->cores[c].n; i++) {
            const isa_insn *in = &p->cores[c].insns[i];
            if (in->op != ISA_OP_HOST)
                continue;
            if (in->val < 0 || in->val >= g->nnodes)
                return isa_errf(err, errlen, "core %d insn %zu: host op of graph node %lld, which the graph lacks", c,
                                i, (long long)in->val);
            const gr_node *n = &g->nodes[in->val];
            const char *why = gr_coll_of(n->op) >= 0
                                  ? (linked ? NULL
                                            : "is a collective between cards, but this device is not a card of "
                                              "a system (spyre run --tp N)")
                                  : (rt_ref_supports(n) ? NULL
                                                        : "runs on the host, but the host (the reference executor) "
                                                          "has no such op");
            if (why) {
                *line = n->line;
                return isa_errf(err, errlen, "%s %s", n->op, why);
            }
        }
    return 0;
}

static int has_host_ops(const isa_program *p)
{
    for (int c = 0; c < p->ncores; c++)
        for (size_t i = 0; i < p->cores[c].n; i++)
            if (p->cores[c].insns[i].op == ISA_OP_HOST)
                return 1;
    return 0;
}

rt_fallback *rt_fallback_begin(rt_program *prog, rt_run_result *res, char *err, size_t errlen)
{
    if (errlen)
        err[0] = 0;
    const isa_program *p = prog->p;
    if (prog->host_ops < 0) /* a walk of every instruction: once a program */
        prog->host_ops = has_host_ops(p);
    if (!prog->host_ops)
        return NULL;
    if (!p->graph) {
        isa_errf(err, errlen, "the program has host ops but no graph to run them from");
        return NULL;
    }
    rt_fallback *fb = calloc(1, sizeof *fb);
    if (!fb) {
        isa_errf(err, errlen, "out of host memory");
        return NULL;
    }
    fb->prog = prog;
    fb->res = res;
    fb->g = gr_graph_parse(p->graph, "graph", err, errlen);
    if (!fb->g || check_host_ops(p, fb->g, prog->dev->link != NULL, &res->refused_line, err, errlen) || !(fb->ref = rt_ref_new_partial(fb->g, err, errlen))) {
        rt_fallback_end(fb);
        return NULL;
    }
    rt_ref_seed(fb->ref, prog->seed);
    return fb;
}

void rt_fallback_end(rt_fallback *fb)
{
    if (!fb)
        return;
    rt_ref_free(fb->ref);
    gr_graph_free(fb->g);
    free(fb);
}

/* The tensor of value v (by gr_tensor_name), or -1 with a message. */
static int tensor_of(const rt_fallback *fb, int v, char *err, size_t errlen)
{
    const char *name = fb->g->values[v].name;
    int i = rt_value_tensor(fb->prog->p, name);
    return i >= 0 ? i : isa_errf(err, errlen, "no tensor of %%%s in the program", name);
}

/* Value v from its tensor in device DRAM into the executor; *bytes += its
 * device bytes.  A host op's result the compiler marked for host ops
 * (ISA_TF_HOST) is taken as the executor holds it, in fp32, with no
 * transfer: the device's copy, if it has one, is rounded to DL16 and the
 * host computes in fp32 (docs/runtime.md, "Host fallback"). */
static int fetch(rt_fallback *fb, int v, uint64_t *bytes, char *err, size_t errlen)
{
    const gr_value *val = &fb->g->values[v];
    int i = tensor_of(fb, v, err, errlen);
    if (i < 0)
        return -1;
    const isa_tensor *t = &fb->prog->p->tensors[i];
    if (t->flags & ISA_TF_HOST)
        return 0;
    int64_t n = gr_ttype_numel(&val->type);
    if (!fb->values) { /* timing only: the transfer, not the values */
        *bytes += t->bytes;
        return 0;
    }
    float *buf = malloc((n ? (size_t)n : 1) * sizeof *buf);
    if (!buf)
        return isa_errf(err, errlen, "out of host memory for %s", val->name);
    int rc = rt_tensor_elems(t) != n ? isa_errf(err, errlen, "tensor %s does not hold %%%s", t->name, val->name)
                                     : rt_read_tensor(fb->prog, t->name, buf, err, errlen);
    if (!rc)
        rc = rt_ref_set_value(fb->ref, v, buf, n, err, errlen);
    free(buf);
    *bytes += t->bytes;
    return rc;
}

static int fetch_args(rt_fallback *fb, const gr_arg *a, uint64_t *bytes, char *err, size_t errlen)
{
    if (a->kind == GR_ARG_VALUE && fetch(fb, a->value, bytes, err, errlen))
        return -1;
    for (int i = 0; i < a->nitems; i++)
        if (fetch_args(fb, &a->items[i], bytes, err, errlen))
            return -1;
    return 0;
}

/* x into device tensor i; in DL16 an infinity or a finite value DL16
 * cannot hold becomes its stand-in, as for uploads (isa_dl16_standin):
 * DeBERTa's masked_fill(finfo.min) on the host became NaN on the device,
 * and a fully masked row's softmax NaN where PyTorch's is uniform. */
static int write_standin(rt_program *prog, int i, const float *x, int64_t n, char *err, size_t errlen)
{
    if (prog->p->tensors[i].dev_dtype != ISA_T_DL16)
        return rt_write_f32(prog, i, x, err, errlen);
    float *v = malloc((n ? (size_t)n : 1) * sizeof *v);
    if (!v)
        return isa_errf(err, errlen, "out of host memory for tensor %s", prog->p->tensors[i].name);
    for (int64_t k = 0; k < n; k++)
        v[k] = isa_dl16_standin(x[k]);
    int rc = rt_write_f32(prog, i, v, err, errlen);
    free(v);
    return rc;
}

/* The result into its tensor, as the device holds it; one only host ops
 * read (ISA_TF_HOSTONLY) stays on the host.  Integers must be exact on
 * the device (fp32 up to 2^24, DL16 up to 2^11). */
static int store(rt_fallback *fb, int v, uint64_t *bytes, char *err, size_t errlen)
{
    const gr_value *val = &fb->g->values[v];
    int i = tensor_of(fb, v, err, errlen);
    if (i < 0)
        return -1;
    const isa_tensor *t = &fb->prog->p->tensors[i];
    if (t->flags & ISA_TF_HOSTONLY)
        return 0;
    if (!fb->values) {
        *bytes += t->bytes;
        return 0;
    }
    const float *x = rt_ref_value(fb->ref, v, NULL);
    if (!x || rt_tensor_elems(t) != gr_ttype_numel(&val->type))
        return isa_errf(err, errlen, "tensor %s does not hold the result %%%s", t->name, val->name);
    if (val->type.dtype != GR_F32 && val->type.dtype != GR_F16 && val->type.dtype != GR_BF16 &&
        val->type.dtype != GR_F64 && val->type.dtype != GR_BOOL) {
        float lim = t->dev_dtype == ISA_T_F32 ? 0x1p24f : 0x1p11f;
        for (int64_t k = 0; k < gr_ttype_numel(&val->type); k++)
            if (x[k] > lim || x[k] < -lim)
                return isa_errf(err, errlen, "%%%s: the integer %g is not exact on the device", val->name, x[k]);
    }
    *bytes += t->bytes;
    return write_standin(fb->prog, i, x, gr_ttype_numel(&val->type), err, errlen);
}

/* The results of node n into their tensors: its value, or for a tuple
 * each element the graph takes with getitem (run here too; an element
 * nothing reads has no tensor: the compiler dropped it). */
static int store_results(rt_fallback *fb, int node, uint64_t *bytes, char *err, size_t errlen)
{
    const gr_graph *g = fb->g;
    int tuple = g->nodes[node].out;
    if (!g->values[tuple].ntuple)
        return store(fb, tuple, bytes, err, errlen);
    for (int k = node + 1; k < g->nnodes; k++) {
        const gr_node *x = &g->nodes[k];
        const gr_arg *a = x->nargs ? &x->args[0] : NULL;
        if (strcmp(x->op, "getitem") || !a || a->kind != GR_ARG_VALUE || a->value != tuple ||
            rt_value_tensor(fb->prog->p, g->values[x->out].name) < 0)
            continue;
        if ((fb->values && rt_ref_run_node(fb->ref, k, err, errlen)) || store(fb, x->out, bytes, err, errlen))
            return -1;
    }
    return 0;
}

/* The time the chip waits (docs/runtime.md, "Host fallback"), in cycles. */
static double host_cycles(const chip_config *k, uint64_t in, uint64_t out)
{
    double ns = 2 * k->pcie_latency_ns + (double)(in + out) / k->pcie_bytes_per_s * 1e9 + k->host_op_ns +
                (double)(in + out) / k->host_bytes_per_s * 1e9;
    return ns * k->clock_ghz;
}

/* Collective node n of a card (rt_set_link): its input from device DRAM,
 * the meeting with the other cards, its result back; *cycles from the
 * card's arrival to the collective's end on every card. */
static int run_collective(rt_fallback *fb, const gr_node *n, double at, double *cycles, char *msg, size_t len)
{
    rt_device *dev = fb->prog->dev;
    if (n->nargs < 1 || n->args[0].kind != GR_ARG_VALUE)
        return isa_errf(msg, len, "the collective's first argument must be a tensor");
    const gr_value *x = &fb->g->values[n->args[0].value], *y = &fb->g->values[n->out];
    int ti = tensor_of(fb, n->args[0].value, msg, len), to = ti < 0 ? -1 : tensor_of(fb, n->out, msg, len);
    if (to < 0)
        return -1;
    rt_coll c = {.kind = (rt_coll_kind)gr_coll_of(n->op), .card = dev->card, .nin = gr_ttype_numel(&x->type),
                 .nout = gr_ttype_numel(&y->type), .at_ns = at / dev->cfg.clock_ghz};
    const isa_tensor *tin = &fb->prog->p->tensors[ti], *tout = &fb->prog->p->tensors[to];
    c.bytes = c.kind == RT_COLL_ALLGATHER ? tout->bytes : tin->bytes;
    float *in = NULL, *out = NULL;
    int rc = 0;
    if (fb->values) {
        in = malloc((size_t)(c.nin ? c.nin : 1) * sizeof *in);
        out = malloc((size_t)(c.nout ? c.nout : 1) * sizeof *out);
        if (!in || !out)
            abort();
        rc = rt_read_tensor(fb->prog, tin->name, in, msg, len);
        c.in = in;
        c.out = out;
    }
    if (!rc)
        rc = dev->link->collective(dev->link_ctx, &c, msg, len);
    if (!rc && fb->values)
        rc = rt_write_f32(fb->prog, to, out, msg, len);
    free(in);
    free(out);
    if (rc)
        return -1;
    *cycles = (c.done_ns - c.at_ns) * dev->cfg.clock_ghz;
    rt_run_result *r = fb->res;
    r->coll_ops++;
    r->coll_cycles += *cycles;
    double wait = *cycles - c.cost_ns * dev->cfg.clock_ghz;
    r->coll_wait_cycles += wait > 0 ? wait : 0; /* 0 for the last to arrive, up to rounding */
    return 0;
}

int rt_fallback_host(void *ctx, sim *s, const isa_program *p, int64_t node, double at, double *cycles, char *err,
                    size_t errlen)
{
    (void)at;
    rt_fallback *fb = ctx;
    const gr_node *n = &fb->g->nodes[node];
    char msg[400];
    uint64_t in = 0, out = 0;
    int rc = 0;
    fb->values = sim_get_options(s)->values;
    if (gr_coll_of(n->op) >= 0) {
        if (run_collective(fb, n, at, cycles, msg, sizeof msg))
            return refuse(fb, n, msg, 0, err, errlen);
        return 0;
    }
    for (int i = 0; i < n->nargs && !rc; i++)
        rc = fetch_args(fb, &n->args[i], &in, msg, sizeof msg);
    int located = 0; /* the reference's messages name the graph line and op themselves */
    if (!rc && fb->values)
        located = rc = rt_ref_run_node(fb->ref, (int)node, msg, sizeof msg);
    if (!rc)
        rc = store_results(fb, (int)node, &out, msg, sizeof msg);
    /* an argument the op also writes (rrelu_with_noise's noise) goes back too, where the device holds it */
    int wrote = fb->values ? rt_ref_written(fb->ref) : -1;
    if (!rc && wrote >= 0 && rt_value_tensor(p, fb->g->values[wrote].name) >= 0)
        rc = store(fb, wrote, &out, msg, sizeof msg);
    if (rc)
        return refuse(fb, n, msg, located, err, errlen);
    *cycles = host_cycles(&fb->prog->dev->cfg, in, out);
    rt_run_result *r = fb->res;
    if (r->fallback_ops < RT_MAX_FALLBACK) {
        rt_fallback_op *f = &r->fallback[r->fallback_ops];
        f->node = (int)node;
        f->line = n->line;
        snprintf(f->op, sizeof f->op, "%s", n->op);
        f->bytes_to_host = in;
        f->bytes_to_device = out;
        f->cycles = *cycles;
    }
    r->fallback_ops++;
    return 0;
}
