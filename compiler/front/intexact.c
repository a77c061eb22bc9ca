/* intexact.c: integer values the device cannot hold exactly are refused.
 * The device computes integers (index values, counts, casts of masks) in
 * DL16, which keeps every integer only up to 2^10: arange(1000) * 5 would
 * come back as 4104 for 4100, wrong with nothing to say so. After lowering,
 * an interval is propagated through every node's body, and an integer
 * result that may leave [-1024, 1024] stops the compile at its graph line. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>

#define EXACT ((double)IR_INT_EXACT)

typedef struct {
    double lo, hi;
} ival;

typedef struct {
    ir_prog *p;
    const ir_node *n;
    ival *buf;    /* per buffer: the interval of its values */
    double worst; /* the largest magnitude an integer result may reach */
} ictx;

static const ival WIDE = {-INFINITY, INFINITY};

static ival span(double a, double b) { return (ival){fmin(a, b), fmax(a, b)}; }

static ival mul(ival a, ival b)
{
    double c[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
    ival r = {INFINITY, -INFINITY};
    for (int i = 0; i < 4; i++) {
        double v = isnan(c[i]) ? 0 : c[i]; /* 0 times an infinity: an exact zero */
        r.lo = fmin(r.lo, v);
        r.hi = fmax(r.hi, v);
    }
    return r;
}

/* The values of index idx over the node's loops. */
static ival index_ival(const ir_node *n, const ir_index *idx)
{
    ival r = {(double)idx->offset, (double)idx->offset};
    for (int v = 0; v < n->nvars && v < IR_MAX_VARS; v++) {
        double s = (double)idx->coef[v] * (double)(n->ranges[v] - 1);
        r.lo += fmin(s, 0);
        r.hi += fmax(s, 0);
    }
    return r;
}

static ival op_ival(ir_op op, ival a, ival b)
{
    switch (op) {
    case IR_NEG: return span(-a.lo, -a.hi);
    case IR_ABS: return (ival){a.lo > 0 ? a.lo : a.hi < 0 ? -a.hi : 0, fmax(fabs(a.lo), fabs(a.hi))};
    case IR_RELU: return (ival){fmax(a.lo, 0), fmax(a.hi, 0)};
    case IR_ADD: return (ival){a.lo + b.lo, a.hi + b.hi};
    case IR_SUB: return (ival){a.lo - b.hi, a.hi - b.lo};
    case IR_MUL: return mul(a, b);
    case IR_MAX: return (ival){fmax(a.lo, b.lo), fmax(a.hi, b.hi)};
    case IR_MIN: return (ival){fmin(a.lo, b.lo), fmin(a.hi, b.hi)};
    default: return WIDE;
    }
}

/* The interval of expression e; integer results widen c->worst. */
static ival eval(ictx *c, int e)
{
    const ir_expr *x = &c->p->A.e[e];
    ival r = WIDE;
    switch (x->kind) {
    case IR_E_CONST: r = (ival){x->value, x->value}; break;
    case IR_E_INDEX: r = index_ival(c->n, &x->idx); break;
    case IR_E_LOAD:
    case IR_E_ILOAD: r = c->buf[x->buf]; break; /* a gather's index is read as fp32 */
    case IR_E_CAST: r = ir_dtype_is_float(x->dtype) ? WIDE : eval(c, x->a); break;
    case IR_E_WHERE: {
        ival b = eval(c, x->b), d = eval(c, x->c);
        (void)eval(c, x->a);
        r = (ival){fmin(b.lo, d.lo), fmax(b.hi, d.hi)};
        break;
    }
    case IR_E_OP: {
        ival a = eval(c, x->a), b = ir_ops[x->op].arity == 2 ? eval(c, x->b) : a;
        r = op_ival(x->op, a, b);
        if (x->dtype == GR_I64 || x->dtype == GR_I32)
            c->worst = fmax(c->worst, fmax(fabs(r.lo), fabs(r.hi)));
        break;
    }
    default: break;
    }
    if (x->dtype == GR_BOOL)
        r = (ival){0, 1};
    return r;
}

/* The interval of a constant's n values, widened to hold 0 */
static ival const_ival(const float *v, int64_t n)
{
    ival r = {0, 0};
    for (int64_t i = 0; i < n; i++)
        r = (ival){fmin(r.lo, v[i]), fmax(r.hi, v[i])};
    return r;
}

/* A node's result: its body's interval, a sum over its reduced loops
 * times their count. */
static ival node_ival(ictx *c)
{
    const ir_node *n = c->n;
    if (n->kind == IR_MATMUL)
        return WIDE;
    if (n->kind == IR_HOST) /* its integers go to the device in fp32, checked there */
        return ir_dtype_is_float(c->p->bufs[n->out].type.dtype) ? WIDE : (ival){-0x1p24, 0x1p24};
    ival r = eval(c, n->body);
    if (n->kind == IR_REDUCTION && n->rop == IR_RSUM) {
        double count = 1;
        for (int v = n->nvars - n->nred; v < n->nvars; v++)
            count *= (double)n->ranges[v];
        r = mul(r, (ival){count, count});
        if (!ir_dtype_is_float(c->p->bufs[n->out].type.dtype))
            c->worst = fmax(c->worst, fmax(fabs(r.lo), fabs(r.hi)));
    }
    return r;
}

/* The last source op of node n (the one giving its result) and its line. */
static int node_line(const ir_prog *p, const ir_node *n, const char **op)
{
    const int s = ir_node_op(n);
    *op = s >= 0 ? p->src[s].op : "an op";
    return s >= 0 ? p->src[s].line : -1;
}

int ir_check_int_exact(ir_prog *p)
{
    ictx c = {p, NULL, ir_xalloc((size_t)(p->nbufs + 1) * sizeof *c.buf), 0};
    for (int b = 0; b < p->nbufs; b++) {
        gr_dtype d = p->bufs[b].type.dtype;
        /* integer inputs are fp32 on the device, exact up to 2^24 */
        c.buf[b] = d == GR_BOOL ? (ival){0, 1} : ir_dtype_is_float(d) ? WIDE : (ival){-0x1p24, 0x1p24};
        if (p->bufs[b].cdata && !ir_dtype_is_float(d)) /* a compiler-made constant: its own values */
            c.buf[b] = const_ival(p->bufs[b].cdata, gr_ttype_numel(&p->bufs[b].type));
    }
    int rc = 0;
    for (int i = 0; i < p->nnodes && !rc; i++) {
        c.n = &p->nodes[i];
        c.worst = 0;
        c.buf[c.n->out] = node_ival(&c);
        if (c.worst > EXACT) {
            const char *op;
            int line = node_line(p, c.n, &op);
            if (c.n->nops)
                p->fail_src = ir_node_op(c.n);
            rc = ir_error(p, line, "%s: integer values up to %g are not exact on the device (DL16 keeps every "
                          "integer up to %g; not supported yet)", op, c.worst, EXACT);
        }
    }
    free(c.buf);
    return rc;
}
