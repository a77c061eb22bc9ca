/* intexact.c: integer values the device cannot hold exactly are refused.
 * The device computes integers (index values, counts, casts of masks) in
 * DL16, which keeps every integer only up to 2^10: arange(1000) * 5 would
 * come back as 4104 for 4100, wrong with nothing to say so. After lowering,
 * an interval is propagated through every node's body, and an integer
 * result that may leave [-1024, 1024] stops the compile at its graph line.
 * An integer input is any value up to 2^24 unless its line declares a
 * range (which the runtime checks before each launch); a kernel reads
 * one in DL16, so a declared range past 1024 refuses its readers (they
 * run on the host, which gets the input exactly: backend.c dev_f32).
 * A cast to an integer of a float function of one small integer (the log
 * of a relative position in a T5 bucket) is tabulated here in fp32 as
 * PyTorch computes it, truncated, and becomes a chain of comparisons of
 * that integer: exact, where DL16's log would round across an integer. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>

#define EXACT ((double)IR_INT_EXACT)

typedef ir_ival ival;

typedef struct {
    ir_prog *p;
    const ir_node *n;
    ival *buf;     /* per buffer: the interval of its values */
    char *rounded; /* per buffer: an integer input a kernel reads rounded to DL16 (a gather's row numbers) */
    int compared;  /* the load being evaluated is compared with values DL16 keeps exactly */
    double worst;  /* the largest magnitude an integer result may reach */
    int from, to;  /* a cast tabulated: expression from becomes to */
} ictx;

#define TAB_MAX 2048 /* values of the integer a tabulated cast reads */
/* past 2^24 the values come from an integer input declared without a range */
#define UNRANGED_HINT "; an integer input without a range may hold any value up to 2^24: declare one " \
                      "(tools/export.py --int-range NAME=LO:HI)"

/* where an integer's interval is unbounded: a float cast to it untabulated */
#define UNBOUNDED_WHY "the cast of a float to an integer is bounded only where it is tabulated: a " \
                      "function of one integer of a known range and of constants, a weight's values unseen"

static const ival WIDE = {-INFINITY, INFINITY};

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
    const ir_opsem *s = ir_opsem_ir(op);
    return s->iv ? s->iv(a, b) : WIDE;
}

static ival eval(ictx *c, int e);

/* A plain load of buffer b: the kernel reads it in DL16.  An input whose
 * declared range reaches past DL16's exact integers would be rounded (3001
 * read as 3000), so it widens c->worst; an undeclared integer input's DL16
 * copy is refused at launch past them (rt_ranges_check). */
static ival load_ival(ictx *c, int b)
{
    const ir_buf *B = &c->p->bufs[b];
    if ((B->ranged || c->rounded[b]) && !c->compared)
        c->worst = fmax(c->worst, fmax(fabs(c->buf[b].lo), fabs(c->buf[b].hi)));
    return c->buf[b];
}

/* A gather's row numbers are fp32 on the device (exact up to 2^24); an
 * elementwise reader gets them rounded to DL16 (be_collect_load), exact
 * only up to 1024.  Rounding is monotone and keeps every integer in
 * [-1024, 1024], so an x past 1024 reads as some value >= 1024 (<= -1024
 * below): compared with any value strictly inside (-1024, 1024) it gives
 * x's answer.  Is e such a load (through casts)? */
static int rounded_load(const ictx *c, int e)
{
    const ir_arena *A = &c->p->A;
    while (A->e[e].kind == IR_E_CAST)
        e = A->e[e].a;
    return A->e[e].kind == IR_E_LOAD && c->rounded[A->e[e].buf];
}

/* A comparison's operands: a rounded load beside an operand strictly
 * inside DL16's exact integers is exact (rounded_load). */
static void compare_ivals(ictx *c, const ir_expr *x, ival *a, ival *b)
{
    const int ra = rounded_load(c, x->a), rb = rounded_load(c, x->b);
    *a = ra ? (ival){0, 0} : eval(c, x->a);
    *b = rb ? (ival){0, 0} : eval(c, x->b);
    const int a_in = !ra && a->lo > -EXACT && a->hi < EXACT, b_in = !rb && b->lo > -EXACT && b->hi < EXACT;
    if (ra) {
        c->compared = b_in;
        *a = eval(c, x->a);
    }
    if (rb) {
        c->compared = a_in;
        *b = eval(c, x->b);
    }
    c->compared = 0;
}

/* The one integer expression the float expression e reads (through casts
 * to float), in *leaf; 0 if it reads anything else (loads, positions as
 * floats) or two of them. */
static int float_leaf(const ir_arena *A, int e, int *leaf)
{
    const ir_expr *x = &A->e[e];
    if (!ir_dtype_is_float(x->dtype) && x->dtype != GR_BOOL) {
        if (*leaf >= 0 && *leaf != e)
            return 0;
        *leaf = e;
        return 1;
    }
    if (x->dtype != GR_F32 && x->dtype != GR_BOOL)
        return 0;
    switch (x->kind) {
    case IR_E_CONST: return 1;
    case IR_E_CAST: return float_leaf(A, x->a, leaf);
    case IR_E_WHERE: return float_leaf(A, x->a, leaf) && float_leaf(A, x->b, leaf) && float_leaf(A, x->c, leaf);
    case IR_E_OP: return float_leaf(A, x->a, leaf) && (ir_ops[x->op].arity == 1 || float_leaf(A, x->b, leaf));
    default: return 0;
    }
}

/* Whether op's result at a is the same in every libm (glibc's, PyTorch's
 * SLEEF): the log of a power of two is k ln2 rounded once, an op at 0 is
 * exactly 0, 1 or 1/2. */
static int same_everywhere(ir_op op, float a)
{
    int k;
    return a == 0 || (op == IR_LOG && a > 0 && frexpf(a, &k) == 0.5f);
}

/* op's result r at a moved one ulp toward nudge's sign when op is a
 * transcendental whose last bit another libm may round the other way. */
static float moved(ir_op op, float a, float r, int nudge)
{
    const int libm = (ir_opsem_ir(op)->flags & IR_SEM_LIBM) != 0;
    return libm && nudge && !same_everywhere(op, a) ? nextafterf(r, nudge * INFINITY) : r;
}

/* A cast of f to dt as PyTorch's: a bool is f != 0, an integer the
 * truncation (NaN, refused, where it is not finite). */
static float cast_to(gr_dtype dt, float f)
{
    if (dt == GR_BOOL)
        return f != 0;
    if (ir_dtype_is_float(dt))
        return f;
    return isfinite(f) ? truncf(f) : NAN;
}

/* e at leaf = v, in fp32 op by op as PyTorch's CPU kernels compute it (a
 * scalar operand in fp32; an op's fp32 function, else its double result
 * rounded once, within the nudge of a float libm's); nudge (+-1) moves
 * each transcendental's result one ulp that way. */
static float fval(const ir_arena *A, int e, int leaf, double v, int nudge)
{
    const ir_expr *x = &A->e[e];
    if (e == leaf)
        return (float)v;
    switch (x->kind) {
    case IR_E_CONST: return (float)x->value;
    case IR_E_CAST: return cast_to(x->dtype, fval(A, x->a, leaf, v, nudge));
    case IR_E_WHERE:
        return fval(A, x->a, leaf, v, nudge) != 0 ? fval(A, x->b, leaf, v, nudge) : fval(A, x->c, leaf, v, nudge);
    case IR_E_OP: {
        float a = fval(A, x->a, leaf, v, nudge);
        float b = ir_ops[x->op].arity == 1 ? 0 : fval(A, x->b, leaf, v, nudge);
        const ir_opsem *s = ir_opsem_ir(x->op);
        float r = s->f32 ? s->f32(a, b) : (float)s->f64(a, b);
        return moved(x->op, a, r, nudge);
    }
    default: return NAN;
    }
}

/* The truncation of cast at leaf = v toward zero, as PyTorch's cast, in
 * *t; 0 when it is not finite, lies so near an integer that another
 * division than ours could put it across, or truncates otherwise with any
 * transcendental one ulp off (another libm's log of 1000 is 3 or just
 * under: never guess). */
static int trunc_sure(const ir_arena *A, int cast, int leaf, double v, double *t)
{
    float f = fval(A, cast, leaf, v, 0);
    if (!isfinite(f))
        return 0;
    double r = nearbyint(f);
    if (r != f && fabs(f - r) <= 1e-5 * fmax(1.0, fabs(r)))
        return 0;
    *t = trunc(f);
    for (int nudge = -1; nudge <= 1; nudge += 2) {
        float g = fval(A, cast, leaf, v, nudge);
        if (!isfinite(g) || trunc(g) != *t)
            return 0;
    }
    return 1;
}

/* Cast e (to an integer, of a float function of one integer s over a few
 * values) as where(s < b1, T(lo), where(s < b2, T(b1), ...)) over the
 * values b where the truncated table T changes; -1 if it is not one. */
static int tabulate(ictx *c, int e)
{
    ir_arena *A = &c->p->A;
    const ir_expr *x = &A->e[e];
    int cast = x->a, leaf = -1;
    gr_dtype dt = x->dtype;
    if (!float_leaf(A, cast, &leaf) || leaf < 0)
        return -1;
    ival s = eval(c, leaf);
    if (!isfinite(s.lo) || !isfinite(s.hi) || s.hi - s.lo >= TAB_MAX)
        return -1;
    int64_t lo = (int64_t)ceil(s.lo), hi = (int64_t)floor(s.hi), n = hi - lo + 1;
    double *tab = malloc((size_t)(n > 0 ? n : 1) * sizeof *tab);
    int ok = n > 0 && tab;
    int64_t defined = -1; /* an entry whose float is finite */
    for (int64_t v = lo; ok && v <= hi; v++) {
        tab[v - lo] = NAN;
        if (isfinite(fval(A, cast, leaf, (double)v, 0))) {
            ok = trunc_sure(A, cast, leaf, (double)v, &tab[v - lo]);
            defined = v - lo;
        }
    }
    /* PyTorch's cast of an infinity is undefined (x86 gives INT64_MIN; T5
     * takes log(0) at distance 0 and discards it by a where): it takes a
     * defined neighbour's value, so --check sees any use of it */
    ok = ok && defined >= 0;
    for (int64_t i = 0; ok && i < n; i++)
        if (isnan(tab[i]))
            tab[i] = i > 0 ? tab[i - 1] : tab[defined];
    int r = -1;
    if (ok) {
        gr_dtype sd = A->e[leaf].dtype;
        r = ir_const(A, tab[n - 1], dt);
        for (int64_t v = hi; v > lo; v--)
            if (tab[v - lo] != tab[v - lo - 1])
                r = ir_where(A, ir_op2(A, IR_LT, leaf, ir_const(A, (double)v, sd)), ir_const(A, tab[v - lo - 1], dt), r);
    }
    free(tab);
    return r;
}

/* The interval of expression e; integer results widen c->worst. */
static ival eval(ictx *c, int e)
{
    /* a copy: tabulate adds expressions, and the arena may move (a pointer into it would dangle) */
    const ir_expr x = c->p->A.e[e];
    ival r = WIDE;
    switch (x.kind) {
    case IR_E_CONST: r = (ival){x.value, x.value}; break;
    case IR_E_INDEX: r = index_ival(c->n, &x.idx); break;
    case IR_E_LOAD: r = load_ival(c, x.buf); break;
    case IR_E_ILOAD: r = c->buf[x.buf]; break; /* a gather's index is read as fp32 */
    case IR_E_CAST: {
        int t = !ir_dtype_is_float(x.dtype) && x.dtype != GR_BOOL && ir_dtype_is_float(c->p->A.e[x.a].dtype)
                    ? tabulate(c, e)
                    : -1;
        if (t >= 0 && c->from < 0) {
            c->from = e;
            c->to = t;
        }
        r = eval(c, t >= 0 ? t : x.a); /* integers under a cast to float are computed too */
        if (ir_dtype_is_float(x.dtype))
            r = WIDE;
        break;
    }
    case IR_E_WHERE: {
        ival b = eval(c, x.b), d = eval(c, x.c);
        (void)eval(c, x.a);
        r = (ival){fmin(b.lo, d.lo), fmax(b.hi, d.hi)};
        if (x.dtype == GR_I64 || x.dtype == GR_I32) /* a tabulated cast's values */
            c->worst = fmax(c->worst, fmax(fabs(r.lo), fabs(r.hi)));
        break;
    }
    case IR_E_OP: {
        ival a, b;
        if (x.op >= IR_EQ && x.op <= IR_GE) {
            compare_ivals(c, &x, &a, &b);
        } else {
            a = eval(c, x.a);
            b = ir_ops[x.op].arity == 2 ? eval(c, x.b) : a;
        }
        r = op_ival(x.op, a, b);
        if (x.dtype == GR_I64 || x.dtype == GR_I32)
            c->worst = fmax(c->worst, fmax(fabs(r.lo), fabs(r.hi)));
        break;
    }
    default: break;
    }
    if (x.dtype == GR_BOOL)
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
        r = op_ival(IR_MUL, r, (ival){count, count});
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
    ictx c = {p, NULL, ir_xalloc((size_t)(p->nbufs + 1) * sizeof *c.buf), ir_xalloc((size_t)p->nbufs + 1), 0, 0,
              -1, -1};
    for (int b = 0; b < p->nbufs; b++) {
        gr_dtype d = p->bufs[b].type.dtype;
        c.rounded[b] = p->bufs[b].kind != IR_BUF_COMPUTED && !ir_dtype_is_float(d) && d != GR_BOOL &&
                       ir_gather_rows(p, b);
        /* integer inputs are fp32 on the device, exact up to 2^24, or within the range declared */
        c.buf[b] = d == GR_BOOL ? (ival){0, 1} : ir_dtype_is_float(d) ? WIDE : (ival){-0x1p24, 0x1p24};
        if (p->bufs[b].ranged)
            c.buf[b] = (ival){(double)p->bufs[b].lo, (double)p->bufs[b].hi};
        if (p->bufs[b].cdata && !ir_dtype_is_float(d)) /* a compiler-made constant: its own values */
            c.buf[b] = const_ival(p->bufs[b].cdata, gr_ttype_numel(&p->bufs[b].type));
    }
    int rc = 0;
    for (int i = 0; i < p->nnodes && !rc; i++) {
        c.n = &p->nodes[i];
        do {
            if (c.from >= 0)
                p->nodes[i].body = ir_replace(&p->A, c.n->body, c.from, c.to);
            c.from = -1;
            c.worst = 0;
            c.buf[c.n->out] = node_ival(&c);
        } while (c.from >= 0);
        if (c.worst > EXACT) {
            const char *op;
            int line = node_line(p, c.n, &op);
            if (c.n->nops)
                p->fail_src = ir_node_op(c.n);
            if (!isfinite(c.worst))
                rc = ir_error(p, line, "%s: integer values without a bound are not exact on the device (DL16 "
                              "keeps every integer up to %.0f; %s)", op, EXACT, UNBOUNDED_WHY);
            else
                rc = ir_error(p, line, "%s: integer values up to %.0f are not exact on the device (DL16 keeps "
                              "every integer up to %.0f; not supported yet)%s", op, c.worst, EXACT,
                              c.worst >= 0x1p24 ? UNRANGED_HINT : "");
        }
    }
    free(c.buf);
    free(c.rounded);
    return rc;
}

int ir_gather_ids(const ir_arena *A, const ir_expr *x)
{
    int ids = x->a;
    while (ids >= 0 && A->e[ids].kind == IR_E_CAST && !ir_dtype_is_float(A->e[ids].dtype))
        ids = A->e[ids].a;
    return ids;
}

/* Whether e reads buffer b as a gather's row numbers (through casts).
 * Its own marks, not ir_expr_walk's: be_collect_load asks in the middle of
 * a walk, and a nested walk restarted that walk's marks (LayoutLM's box
 * coordinates, gathered and subtracted: a load left uncollected). */
static int reads_rows(const ir_arena *A, int e, int b, char *seen)
{
    if (e < 0 || seen[e])
        return 0;
    seen[e] = 1;
    const ir_expr *x = &A->e[e];
    if (x->kind == IR_E_ILOAD) {
        const int ids = ir_gather_ids(A, x);
        if (ids >= 0 && A->e[ids].kind == IR_E_LOAD && A->e[ids].buf == b)
            return 1;
    }
    return reads_rows(A, x->a, b, seen) || reads_rows(A, x->b, b, seen) || reads_rows(A, x->c, b, seen);
}

int ir_gather_rows(const ir_prog *p, int b)
{
    char *seen = calloc((size_t)p->A.n + 1, 1);
    if (!seen)
        abort();
    int found = 0;
    for (int n = 0; n < p->nnodes && !found; n++)
        found = !p->nodes[n].dead && reads_rows(&p->A, p->nodes[n].body, b, seen);
    free(seen);
    return found;
}
