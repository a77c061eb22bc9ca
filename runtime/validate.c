/* validate.c: checking a program's outputs against a host reference.
 *
 * The program's graph text says what it computes, in one of two forms:
 *
 * - a full graph (docs/graph-format.md: typed values, `input`, `param`,
 *   `output` lines): it is parsed (compiler/graph.h) and run by the
 *   reference executor (runtime/ref_*.c) on the host copies of the
 *   program's tensors; every op the executor implements can be checked.
 *   rt_check_graph does the same for a graph already parsed.
 * - short lines, one op each, without types:
 *     %C = aten.mm(%A, %B)
 *     %Y = aten._softmax(%X, -1, False)
 *   Lines starting with '#' are comments.  Values flow by name: a line's
 *   arguments are the host copies of the program's tensors or the results
 *   of earlier lines.  Only these two ops are understood.
 *
 * Each output gets a per-element tolerance (docs/validation.md derives
 * them): for the short form the DL16 bounds of mm and softmax; for a full
 * graph the error bounds the reference executor propagates through the
 * whole graph (rt_ref_track_errors: every op's own DL16 rounding plus its
 * arguments' bounds carried through it), the smaller of the worst case
 * and RT_REF_LAMBDA times the probabilistic scale, plus 2^-30.  Every
 * output tensor of the program is read from the device and compared, with
 * the executor's values or (rt_check_expected) PyTorch's.
 */
#include "rt_internal.h"

#include <cblas.h>
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DL16_U 0x1p-10    /* DL16 unit roundoff: 9 stored fraction bits */
#define F32_EPS 0x1p-23   /* fp32 machine epsilon */
#define ABS_FLOOR 0x1p-30 /* absolute floor: values DL16 flushes to zero */
#define MAX_ARGS 8
#define DL16_INF 0x1p30   /* the device's stand-in for an infinity (docs/compiler.md) */
#define TORCH_REL 0x1p-10 /* PyTorch's fp32 outputs: the tolerance widened by this much of itself */

/* A named value of the reference computation. */
typedef struct {
    char name[ISA_NAME_MAX];
    int rank;
    int64_t shape[ISA_MAX_RANK];
    const float *val; /* host copy of a tensor, or owned below */
    float *owned;
    double *tol;      /* per-element tolerance of a computed value */
    int line;
    const char *op;
} ref_value;

typedef struct {
    rt_program *prog;
    ref_value *vals;
    size_t nvals, cap;
    int line; /* current graph line */
    char *err;
    size_t errlen;
} ref_ctx;

static int64_t count_of(const ref_value *v)
{
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++)
        n *= v->shape[i];
    return n;
}

static void dims_str(int rank, const int64_t *shape, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < rank && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (o < len)
        snprintf(buf + o, len - o, ")");
}

static ref_value *find_value(ref_ctx *c, const char *name)
{
    for (size_t i = c->nvals; i-- > 0;)
        if (strcmp(c->vals[i].name, name) == 0)
            return &c->vals[i];
    return NULL;
}

/* An argument "%NAME": a computed value, or the host copy of a tensor. */
static ref_value *arg_value(ref_ctx *c, const char *arg)
{
    if (arg[0] != '%' || !arg[1]) {
        isa_errf(c->err, c->errlen, "reference: expected a %%tensor argument, got '%s' at graph line %d", arg, c->line);
        return NULL;
    }
    const char *name = arg + 1;
    ref_value *v = find_value(c, name);
    if (v)
        return v;
    int i = isa_program_find_tensor(c->prog->p, name);
    if (i < 0) {
        isa_errf(c->err, c->errlen, "reference: unknown tensor %%%s at graph line %d", name, c->line);
        return NULL;
    }
    const isa_tensor *t = &c->prog->p->tensors[i];
    if (!c->prog->host[i]) {
        isa_errf(c->err, c->errlen,
                 "reference: tensor %s (graph line %d) has no host data: write it (rt_write_tensor) or fill "
                 "the inputs (rt_fill_inputs) first", name, c->line);
        return NULL;
    }
    if (c->nvals == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        ref_value *nv = realloc(c->vals, cap * sizeof *nv);
        if (!nv) {
            isa_errf(c->err, c->errlen, "reference: out of host memory");
            return NULL;
        }
        c->vals = nv;
        c->cap = cap;
    }
    v = &c->vals[c->nvals++];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->rank = t->rank;
    memcpy(v->shape, t->shape, sizeof v->shape);
    v->val = c->prog->host[i];
    return v;
}

/* A new computed value for the current line (takes ownership of val, tol). */
static int define_value(ref_ctx *c, const char *name, const char *op, int rank, const int64_t *shape,
                        float *val, double *tol)
{
    if (c->nvals == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        ref_value *nv = realloc(c->vals, cap * sizeof *nv);
        if (!nv) {
            free(val);
            free(tol);
            return isa_errf(c->err, c->errlen, "reference: out of host memory");
        }
        c->vals = nv;
        c->cap = cap;
    }
    ref_value *v = &c->vals[c->nvals++];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->rank = rank;
    memcpy(v->shape, shape, (size_t)rank * sizeof *shape);
    v->val = v->owned = val;
    v->tol = tol;
    v->line = c->line;
    v->op = op;
    return 0;
}

static void free_values(ref_ctx *c)
{
    for (size_t i = 0; i < c->nvals; i++) {
        free(c->vals[i].owned);
        free(c->vals[i].tol);
    }
    free(c->vals);
}

/* ---- Ops: each computes reference values and tolerances ---- */

typedef int (*ref_fn)(ref_ctx *c, const char *out, char **args, int nargs);

/* The mm tolerance of C = A (M, K) x B (K, N) into tol (M x N), with
 * scratch absa (M x K), absb (K x N), ab (M x N):
 *   2u(1+u) (|A||B|)_ij + u |C_ij| + K 2^-23 (|A||B|)_ij + 2^-30. */
static void mm_tolerance(const float *a, const float *b, const float *ref, int64_t M, int64_t K, int64_t N,
                         float *absa, float *absb, float *ab, double *tol)
{
    size_t mn = (size_t)(M * N), mk = (size_t)(M * K), kn = (size_t)(K * N);
    for (size_t i = 0; i < mk; i++)
        absa[i] = fabsf(a[i]);
    for (size_t i = 0; i < kn; i++)
        absb[i] = fabsf(b[i]);
    if (mn && K)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, absa, (int)K, absb,
                    (int)N, 0.0f, ab, (int)N);
    else
        memset(ab, 0, mn * sizeof *ab);
    const double u = DL16_U;
    const double kab = 2 * u * (1 + u) + (double)K * F32_EPS;
    for (size_t i = 0; i < mn; i++)
        tol[i] = kab * ab[i] + u * fabs(ref[i]) + ABS_FLOOR;
}

/* %C = aten.mm(%A, %B): cblas_sgemm on the fp32 inputs; tolerance
 * mm_tolerance. */
static int ref_mm(ref_ctx *c, const char *out, char **args, int nargs)
{
    if (nargs != 2)
        return isa_errf(c->err, c->errlen, "reference: aten.mm takes 2 arguments, not %d, at graph line %d", nargs,
                        c->line);
    ref_value *a = arg_value(c, args[0]);
    ref_value *b = a ? arg_value(c, args[1]) : NULL;
    if (!b)
        return -1;
    a = arg_value(c, args[0]); /* the array may have moved */
    if (a->rank != 2 || b->rank != 2 || a->shape[1] != b->shape[0]) {
        char as[192], bs[192];
        dims_str(a->rank, a->shape, as, sizeof as);
        dims_str(b->rank, b->shape, bs, sizeof bs);
        return isa_errf(c->err, c->errlen, "reference: aten.mm of %s %s and %s %s: shapes do not multiply at graph line %d",
                        a->name, as, b->name, bs, c->line);
    }
    int64_t M = a->shape[0], K = a->shape[1], N = b->shape[1];
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
        return isa_errf(c->err, c->errlen, "reference: aten.mm too large for BLAS at graph line %d", c->line);
    size_t mn = (size_t)(M * N), mk = (size_t)(M * K), kn = (size_t)(K * N);
    float *ref = malloc((mn ? mn : 1) * sizeof *ref);
    float *ab = malloc((mn ? mn : 1) * sizeof *ab);
    float *absa = malloc((mk ? mk : 1) * sizeof *absa);
    float *absb = malloc((kn ? kn : 1) * sizeof *absb);
    double *tol = malloc((mn ? mn : 1) * sizeof *tol);
    if (!ref || !ab || !absa || !absb || !tol) {
        free(ref), free(ab), free(absa), free(absb), free(tol);
        return isa_errf(c->err, c->errlen, "reference: out of host memory at graph line %d", c->line);
    }
    if (mn && K)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a->val, (int)K,
                    b->val, (int)N, 0.0f, ref, (int)N);
    else
        memset(ref, 0, mn * sizeof *ref);
    mm_tolerance(a->val, b->val, ref, M, K, N, absa, absb, ab, tol);
    free(ab), free(absa), free(absb);
    int64_t shape[2] = {M, N};
    return define_value(c, out, "aten.mm", 2, shape, ref, tol);
}

/* %Y = aten._softmax(%X, -1, False): in double over the last dim, then
 * fp32; tolerance per row
 *   u y_i (2 max_j|x_j| + 2 max_j|x_j - m| + 8) + 2^-30. */
static int ref_softmax(ref_ctx *c, const char *out, char **args, int nargs)
{
    if (nargs != 3)
        return isa_errf(c->err, c->errlen, "reference: aten._softmax takes 3 arguments, not %d, at graph line %d",
                        nargs, c->line);
    ref_value *x = arg_value(c, args[0]);
    if (!x)
        return -1;
    char *end;
    long dim = strtol(args[1], &end, 10);
    if (end == args[1] || *end)
        return isa_errf(c->err, c->errlen, "reference: aten._softmax dim '%s' is not an integer at graph line %d",
                        args[1], c->line);
    if (strcmp(args[2], "False") != 0 && strcmp(args[2], "True") != 0)
        return isa_errf(c->err, c->errlen, "reference: aten._softmax half_to_float '%s' is not False or True at graph line %d",
                        args[2], c->line);
    if (x->rank < 1)
        return isa_errf(c->err, c->errlen, "reference: aten._softmax of a rank-0 tensor %s at graph line %d", x->name,
                        c->line);
    if (dim != -1 && dim != x->rank - 1)
        return isa_errf(c->err, c->errlen,
                        "reference: unsupported op aten._softmax over dim %ld of rank-%d %s (only the last dim) at graph line %d",
                        dim, x->rank, x->name, c->line);
    int64_t n = x->shape[x->rank - 1], total = count_of(x);
    int64_t rows = n ? total / n : 0;
    float *ref = malloc((total ? (size_t)total : 1) * sizeof *ref);
    double *tol = malloc((total ? (size_t)total : 1) * sizeof *tol);
    if (!ref || !tol) {
        free(ref), free(tol);
        return isa_errf(c->err, c->errlen, "reference: out of host memory at graph line %d", c->line);
    }
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x->val + r * n;
        double m = -INFINITY, amax = 0;
        for (int64_t j = 0; j < n; j++) {
            if (xr[j] > m)
                m = xr[j];
            if (fabs(xr[j]) > amax)
                amax = fabs(xr[j]);
        }
        double s = 0, dmax = 0;
        for (int64_t j = 0; j < n; j++) {
            s += exp(xr[j] - m);
            if (fabs(xr[j] - m) > dmax)
                dmax = fabs(xr[j] - m);
        }
        double k = DL16_U * (2 * amax + 2 * dmax + 8);
        for (int64_t j = 0; j < n; j++) {
            double y = exp(xr[j] - m) / s;
            ref[r * n + j] = (float)y;
            tol[r * n + j] = k * y + ABS_FLOOR;
        }
    }
    int rank = x->rank; /* define_value may move x */
    int64_t shape[ISA_MAX_RANK];
    memcpy(shape, x->shape, sizeof shape);
    return define_value(c, out, "aten._softmax", rank, shape, ref, tol);
}

static const struct {
    const char *name;
    ref_fn fn;
} ref_ops[] = {
    {"aten.mm", ref_mm},
    {"aten._softmax", ref_softmax},
};

/* ---- Parsing one line: %OUT = OP(ARG, ARG, ...) ---- */

static char *skip_ws(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    return s;
}

static char *trim(char *s)
{
    s = skip_ws(s);
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

static int is_name_char(char ch)
{
    return ch && !isspace((unsigned char)ch) && !strchr("%=(),#", ch);
}

static int run_line(ref_ctx *c, char *line)
{
    char orig[160];
    snprintf(orig, sizeof orig, "%s", line);
    char *s = skip_ws(line);
    if (*s != '%')
        goto syntax;
    char *out = ++s;
    while (is_name_char(*s))
        s++;
    if (s == out)
        goto syntax;
    char *p = skip_ws(s);
    if (*p != '=')
        goto syntax;
    *s = 0;
    if (strlen(out) >= ISA_NAME_MAX)
        return isa_errf(c->err, c->errlen, "reference: name %%%s too long at graph line %d", out, c->line);
    char *op = skip_ws(p + 1);
    char *lp = strchr(op, '(');
    char *rp = strrchr(op, ')');
    if (!lp || !rp || rp < lp || *skip_ws(rp + 1))
        goto syntax;
    *lp = 0;
    *rp = 0;
    op = trim(op);
    char *args[MAX_ARGS];
    int nargs = 0;
    char *a = trim(lp + 1);
    if (*a) {
        for (;;) {
            char *comma = strchr(a, ',');
            if (comma)
                *comma = 0;
            if (nargs == MAX_ARGS)
                return isa_errf(c->err, c->errlen, "reference: too many arguments at graph line %d", c->line);
            args[nargs++] = trim(a);
            if (!comma)
                break;
            a = comma + 1;
        }
    }
    if (find_value(c, out) && find_value(c, out)->op)
        return isa_errf(c->err, c->errlen, "reference: %%%s is defined twice (graph lines %d and %d)", out,
                        find_value(c, out)->line, c->line);
    for (size_t i = 0; i < sizeof ref_ops / sizeof ref_ops[0]; i++)
        if (strcmp(op, ref_ops[i].name) == 0)
            return ref_ops[i].fn(c, out, args, nargs);
    return isa_errf(c->err, c->errlen, "reference: unsupported op %s at graph line %d", op, c->line);
syntax:
    return isa_errf(c->err, c->errlen, "reference: cannot parse graph line %d: '%s' (expected %%OUT = OP(ARGS))",
                    c->line, trim(orig));
}

/* ---- Comparison ---- */

static int compare(ref_ctx *c, const ref_value *v, int ti, rt_check_result *r)
{
    const isa_tensor *t = &c->prog->p->tensors[ti];
    if (t->rank != v->rank || memcmp(t->shape, v->shape, (size_t)v->rank * sizeof *v->shape) != 0) {
        char ts[192], vs[192];
        dims_str(t->rank, t->shape, ts, sizeof ts);
        dims_str(v->rank, v->shape, vs, sizeof vs);
        return isa_errf(c->err, c->errlen, "reference: output %s has shape %s but graph line %d computes shape %s",
                        t->name, ts, v->line, vs);
    }
    int64_t n = count_of(v);
    float *y = malloc((n ? (size_t)n : 1) * sizeof *y);
    if (!y)
        return isa_errf(c->err, c->errlen, "reference: out of host memory");
    if (rt_read_tensor(c->prog, t->name, y, c->err, c->errlen)) {
        free(y);
        return -1;
    }
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", t->name);
    snprintf(r->op, sizeof r->op, "%s", v->op);
    r->line = v->line;
    r->rank = v->rank;
    memcpy(r->shape, v->shape, sizeof r->shape);
    r->count = n;
    r->worst = -1;
    double worst_ratio = -1;
    for (int64_t i = 0; i < n; i++) {
        double ref = v->val[i], tol = v->tol[i];
        if (isnan(y[i]) && isnan(ref)) { /* NaN where the reference has one (a mean over no element) */
            r->within++;
            continue;
        }
        if (isnan(y[i])) {
            r->nans++;
            if (worst_ratio < INFINITY) {
                worst_ratio = INFINITY;
                r->worst = i;
            }
            continue;
        }
        /* an equal infinity is exact, and so is the device's stand-in for it
         * (+-2^30 or beyond, the same sign) */
        double e = (double)y[i] == ref || (isinf(ref) && fabs(y[i]) >= DL16_INF && (y[i] < 0) == (ref < 0))
                       ? 0
                       : fabs((double)y[i] - ref);
        if (e <= tol) /* false when ref is NaN */
            r->within++;
        if (e > r->max_abs_err)
            r->max_abs_err = e;
        double rel = e / fmax(fabs(ref), RT_REL_TINY);
        if (rel > r->max_rel_err)
            r->max_rel_err = rel;
        double ratio = isnan(e) ? INFINITY : e / tol;
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            r->worst = i;
        }
    }
    r->worst_ratio = worst_ratio < 0 ? 0 : worst_ratio;
    if (r->worst >= 0) {
        r->worst_value = y[r->worst];
        r->worst_ref = v->val[r->worst];
        r->worst_tol = (float)v->tol[r->worst];
    }
    r->ok = r->within == n && r->nans == 0;
    free(y);
    return 0;
}

/* A value the graph computes that the program holds as data it reads (an
 * input or a weight) would be filled, not computed, and --check would
 * compare nothing: refused, naming the tensor. */
static int computed_as_data(const isa_program *p, const char *name, int line, char *err, size_t errlen)
{
    int i = isa_program_find_tensor(p, name);
    if (i < 0 || (p->tensors[i].role != ISA_ROLE_INPUT && p->tensors[i].role != ISA_ROLE_WEIGHT))
        return 0;
    return isa_errf(err, errlen, "reference: %%%s is computed by the graph (line %d) but the program's tensor %s is %s %s, "
                    "not an output", name, line, name, p->tensors[i].role == ISA_ROLE_INPUT ? "an" : "a",
                    isa_role_names[p->tensors[i].role]);
}

/* ---- Full graphs: the reference executor ---- */

/* A full graph has typed values or declaration lines; the short form has
 * neither. */
static int is_full_graph(const char *text)
{
    static const char *const words[] = {"graph", "weights", "input", "param", "output", "hint"};
    for (const char *l = text; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        while (*l == ' ' || *l == '\t')
            l++;
        for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
            size_t k = strlen(words[w]);
            if (strncmp(l, words[w], k) == 0 && (l[k] == ' ' || l[k] == '\t' || l[k] == '%'))
                return 1;
        }
        if (*l == '%') { /* %name: TYPE = ... */
            const char *q = l + 1;
            while (*q && !strchr(" \t:=(\n", *q))
                q++;
            while (*q == ' ' || *q == '\t')
                q++;
            if (*q == ':')
                return 1;
        }
    }
    return 0;
}

/* The tolerance of every element of output value v (n elements) into
 * tol: the smaller of the two error bounds the executor propagated to it
 * (rt_ref_error: the worst case, and RT_REF_LAMBDA times the probabilistic
 * scale) plus the absolute floor 2^-30. */
static int graph_tolerance(rt_ref *r, const cc_graph *g, int v, const float *ref, int64_t n, double *tol,
                           char *err, size_t errlen)
{
    const float *w = rt_ref_error(r, v, 0), *s = rt_ref_error(r, v, 1);
    if (!w || !s)
        return isa_errf(err, errlen, "reference: output %%%s has no error bound", g->values[v].name);
    for (int64_t i = 0; i < n; i++) {
        /* a NaN bound is a bug of the bound rules, never a verdict: fmin
         * would drop it, and a NaN tolerance would fail the element as a
         * MISMATCH (rt_ref_run reports it first; this is the last guard) */
        if ((isnan(w[i]) || isnan(s[i])) && !isnan(ref[i]))
            return isa_errf(err, errlen, "reference: internal error: output %%%s element %lld has a NaN error bound",
                            g->values[v].name, (long long)i);
        tol[i] = fmin((double)w[i], RT_REF_LAMBDA * s[i]) + ABS_FLOOR;
    }
    return 0;
}

/* The graph value an output tensor of the program stands for: the value of
 * the same name, else "outputN" is the graph's output N. */
static int output_value(const cc_graph *g, const char *name)
{
    int v = cc_graph_find_tensor(g, name);
    if (v >= 0)
        return v;
    char *end;
    if (strncmp(name, "output", 6) == 0 && name[6] >= '0' && name[6] <= '9') {
        long i = strtol(name + 6, &end, 10);
        if (!*end && i < g->noutputs)
            return g->outputs[i];
    }
    return -1;
}

/* The program tensor holding graph leaf v: by name, or by weight key. */
static int leaf_tensor(const isa_program *p, const cc_value *val)
{
    char tn[CC_TENSOR_NAME_MAX];
    cc_tensor_name(val->name, tn);
    int i = isa_program_find_tensor(p, tn);
    if (i < 0 && val->param_key) {
        cc_tensor_name(val->param_key, tn);
        i = isa_program_find_tensor(p, tn);
    }
    return i;
}

/* The graph's output index of value v, or -1. */
static int output_index(const cc_graph *g, int v)
{
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return i;
    return -1;
}

/* PyTorch's value of graph output v ("outputN" of want) as fp32 into out
 * (cnt elements). */
static int expected_values(const rt_st_file *want, const cc_graph *g, int v, int64_t cnt, float *out, char *err,
                           size_t errlen)
{
    char key[32];
    int i = output_index(g, v);
    snprintf(key, sizeof key, "output%d", i);
    const rt_st_tensor *t = i >= 0 ? rt_st_find(want, key) : NULL;
    if (!t)
        return isa_errf(err, errlen, "%s: no tensor %s for %%%s", want->path, key, g->values[v].name);
    if (rt_st_check_type(t, want->path, &g->values[v], "expected output", err, errlen))
        return -1;
    if (t->numel != cnt)
        return isa_errf(err, errlen, "%s: %s has %lld elements but %%%s has %lld", want->path, key,
                        (long long)t->numel, g->values[v].name, (long long)cnt);
    rt_st_to_f32(t, out);
    return 0;
}

/* Every output of graph g is an output tensor of the program (outv[i]:
 * the graph value tensor i stands for), so --check compares them all. */
static int outputs_covered(const isa_program *p, const cc_graph *g, const int *outv, char *err, size_t errlen)
{
    for (int k = 0; k < g->noutputs; k++) {
        int v = g->outputs[k], found = 0;
        for (size_t i = 0; i < p->ntensors && !found; i++)
            found = outv[i] == v;
        if (found)
            continue;
        const cc_value *val = &g->values[v];
        if (computed_as_data(p, val->name, val->line, err, errlen))
            return -1;
        return isa_errf(err, errlen, "reference: output %d of the graph, %%%s (graph line %d), is not an output tensor "
                        "of the program", k, val->name, val->line);
    }
    return 0;
}

/* rt_check_graph, against the executor (want NULL) or PyTorch's outputs. */
static int check_graph(rt_program *prog, const cc_graph *g, const rt_st_file *want, rt_check_result **results, int *n,
                       char *err, size_t errlen)
{
    *results = NULL;
    *n = 0;
    const isa_program *p = prog->p;
    char rerr[1024];
    rt_ref *r = rt_ref_new(g, rerr, sizeof rerr);
    if (!r)
        return isa_errf(err, errlen, "reference: %s", rerr);
    rt_ref_track_errors(r, 1);
    rt_check_result *res = calloc(p->ntensors ? p->ntensors : 1, sizeof *res);
    int rc = res ? 0 : isa_errf(err, errlen, "reference: out of host memory");
    /* Parameters the program does not hold come from the weights file. */
    int need_file = 0;
    for (int i = 0; i < g->nparams; i++)
        need_file |= leaf_tensor(p, &g->values[g->params[i]]) < 0;
    if (!rc && need_file && g->weights && rt_ref_load_weights(r, NULL, rerr, sizeof rerr))
        rc = isa_errf(err, errlen, "reference: %s", rerr);
    for (int k = 0; k < g->ninputs + g->nparams && !rc; k++) {
        int v = k < g->ninputs ? g->inputs[k] : g->params[k - g->ninputs];
        const cc_value *val = &g->values[v];
        int ti = leaf_tensor(p, val);
        if (ti < 0) {
            if (val->kind == CC_VAL_PARAM && g->weights)
                continue; /* loaded from the file */
            rc = isa_errf(err, errlen, "reference: %s %%%s (graph line %d) is not a tensor of the program",
                          val->kind == CC_VAL_INPUT ? "input" : "param", val->name, val->line);
            break;
        }
        if (!prog->host[ti]) {
            rc = isa_errf(err, errlen,
                          "reference: tensor %s (graph line %d) has no host data: write it (rt_write_tensor) or fill "
                          "the inputs (rt_fill_inputs) first", p->tensors[ti].name, val->line);
            break;
        }
        if (rt_ref_set(r, val->name, prog->host[ti], rt_tensor_elems(&p->tensors[ti]), rerr, sizeof rerr))
            rc = isa_errf(err, errlen, "reference: %s", rerr);
    }
    /* Outputs, in the order of the tensor table. */
    int *outv = malloc((p->ntensors ? p->ntensors : 1) * sizeof *outv);
    if (!rc && !outv)
        rc = isa_errf(err, errlen, "reference: out of host memory");
    for (size_t i = 0; i < p->ntensors && !rc; i++) {
        const isa_tensor *t = &p->tensors[i];
        outv[i] = -1;
        if (t->role != ISA_ROLE_OUTPUT)
            continue;
        int v = output_value(g, t->name);
        if (v < 0 || g->values[v].ntuple) {
            rc = isa_errf(err, errlen, "reference: output %s is not computed by the graph", t->name);
            break;
        }
        outv[i] = v;
        rt_ref_keep(r, v);
    }
    if (!rc)
        rc = outputs_covered(p, g, outv, err, errlen);
    if (!rc && rt_ref_run(r, rerr, sizeof rerr))
        rc = isa_errf(err, errlen, "reference: %s", rerr);
    int nres = 0, bad = 0;
    ref_ctx c = {.prog = prog, .err = err, .errlen = errlen};
    for (size_t i = 0; i < p->ntensors && !rc; i++) {
        if (outv[i] < 0)
            continue;
        int v = outv[i];
        const cc_value *val = &g->values[v];
        cc_ttype ty;
        const float *ref = rt_ref_value(r, v, &ty);
        if (!ref || ty.rank > ISA_MAX_RANK) {
            rc = isa_errf(err, errlen, "reference: output %s has no reference value", p->tensors[i].name);
            break;
        }
        int64_t cnt = cc_ttype_numel(&ty);
        double *tol = malloc((cnt ? (size_t)cnt : 1) * sizeof *tol);
        if (!tol) {
            rc = isa_errf(err, errlen, "reference: out of host memory");
            break;
        }
        float *torch = want ? malloc((cnt ? (size_t)cnt : 1) * sizeof *torch) : NULL;
        if (want && !torch)
            rc = isa_errf(err, errlen, "reference: out of host memory");
        if (!rc && want)
            rc = expected_values(want, g, v, cnt, torch, err, errlen);
        if (!rc)
            rc = graph_tolerance(r, g, v, ref, cnt, tol, err, errlen);
        if (rc) {
            free(tol);
            free(torch);
            break;
        }
        if (torch) { /* PyTorch's fp32 value for the reference, the tolerance widened by 2^-10 of itself */
            ref = torch;
            for (int64_t k = 0; k < cnt; k++)
                tol[k] += TORCH_REL * (tol[k] - ABS_FLOOR);
        }
        ref_value rv;
        memset(&rv, 0, sizeof rv);
        snprintf(rv.name, sizeof rv.name, "%s", val->name);
        rv.rank = ty.rank;
        memcpy(rv.shape, ty.shape, (size_t)ty.rank * sizeof *ty.shape);
        rv.val = ref;
        rv.tol = tol;
        rv.line = val->line;
        rv.op = val->node >= 0 ? g->nodes[val->node].op : val->kind == CC_VAL_INPUT ? "input" : "param";
        rc = compare(&c, &rv, (int)i, &res[nres]);
        free(tol);
        free(torch);
        if (!rc && !res[nres].ok)
            bad++;
        nres++;
    }
    free(outv);
    rt_ref_free(r);
    if (rc) {
        free(res);
        return -1;
    }
    *results = res;
    *n = nres;
    return bad;
}

int rt_check_graph(rt_program *prog, const cc_graph *g, rt_check_result **results, int *n, char *err, size_t errlen)
{
    return check_graph(prog, g, NULL, results, n, err, errlen);
}

int rt_check_expected(rt_program *prog, const cc_graph *g, const char *path, rt_check_result **results, int *n,
                      char *err, size_t errlen)
{
    *results = NULL;
    *n = 0;
    rt_st_file *want = rt_st_read(path, err, errlen);
    if (!want)
        return -1;
    int rc = check_graph(prog, g, want, results, n, err, errlen);
    rt_st_free(want);
    return rc;
}

int rt_check(rt_program *prog, rt_check_result **results, int *n, char *err, size_t errlen)
{
    *results = NULL;
    *n = 0;
    const isa_program *p = prog->p;
    if (!p->graph)
        return isa_errf(err, errlen, "reference: the program has no graph, so there is nothing to validate against");
    if (is_full_graph(p->graph)) {
        char perr[1024];
        cc_graph *g = cc_graph_parse(p->graph, "graph", perr, sizeof perr);
        if (!g)
            return isa_errf(err, errlen, "reference: %s", perr);
        int rc = rt_check_graph(prog, g, results, n, err, errlen);
        cc_graph_free(g);
        return rc;
    }
    char *text = malloc(strlen(p->graph) + 1);
    rt_check_result *res = calloc(p->ntensors ? p->ntensors : 1, sizeof *res);
    if (!text || !res) {
        free(text);
        free(res);
        return isa_errf(err, errlen, "reference: out of host memory");
    }
    strcpy(text, p->graph);
    ref_ctx c = {.prog = prog, .err = err, .errlen = errlen};
    int rc = 0;
    char *line = text;
    for (c.line = 1; line && !rc; c.line++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        char *s = skip_ws(line);
        if (*s && *s != '#')
            rc = run_line(&c, s);
        line = nl ? nl + 1 : NULL;
    }
    for (size_t i = 0; i < c.nvals && !rc; i++)
        if (c.vals[i].op)
            rc = computed_as_data(p, c.vals[i].name, c.vals[i].line, err, errlen);
    /* Every output tensor must be defined by the graph; compare them in
     * the order of the tensor table. */
    int nres = 0, bad = 0;
    for (size_t i = 0; i < p->ntensors && !rc; i++) {
        const isa_tensor *t = &p->tensors[i];
        if (t->role != ISA_ROLE_OUTPUT)
            continue;
        ref_value *v = find_value(&c, t->name);
        if (!v || !v->op) {
            rc = isa_errf(err, errlen, "reference: output %s is not computed by the graph", t->name);
            break;
        }
        rc = compare(&c, v, (int)i, &res[nres]);
        if (!rc && !res[nres].ok)
            bad++;
        nres++;
    }
    if (!rc && !nres)
        rc = isa_errf(err, errlen, "reference: the program has no output tensor, so --check has nothing to compare");
    free_values(&c);
    free(text);
    if (rc) {
        free(res);
        return -1;
    }
    *results = res;
    *n = nres;
    return bad;
}

void rt_check_format(const rt_check_result *r, char *buf, size_t len)
{
    int o = snprintf(buf, len, "check %s: max_abs_err=%.1e max_rel_err=%.1e within_tol=%.6f (%lld/%lld)", r->name,
                     r->max_abs_err, r->max_rel_err, r->count ? (double)r->within / (double)r->count : 1.0,
                     (long long)r->within, (long long)r->count);
    if (o < 0 || (size_t)o >= len)
        return;
    o += snprintf(buf + o, len - (size_t)o, " worst_err_over_tol=%.2g", r->worst_ratio);
    if (o < 0 || (size_t)o >= len)
        return;
    if (r->ok) {
        snprintf(buf + o, len - (size_t)o, " ok");
        return;
    }
    char idx[160] = "";
    if (r->worst >= 0) {
        int64_t rest = r->worst, sub[ISA_MAX_RANK];
        for (int d = r->rank; d-- > 0;) {
            sub[d] = r->shape[d] ? rest % r->shape[d] : 0;
            rest = r->shape[d] ? rest / r->shape[d] : 0;
        }
        size_t k = 0;
        for (int d = 0; d < r->rank && k < sizeof idx; d++)
            k += (size_t)snprintf(idx + k, sizeof idx - k, "%s%lld", d ? "," : "", (long long)sub[d]);
    }
    if (r->nans)
        o += snprintf(buf + o, len - (size_t)o, " nan=%lld", (long long)r->nans);
    if (o < 0 || (size_t)o >= len)
        return;
    if (r->worst >= 0)
        snprintf(buf + o, len - (size_t)o, " worst[%s]=%.6g ref=%.6g tol=%.2e MISMATCH", idx,
                 (double)r->worst_value, (double)r->worst_ref, (double)r->worst_tol);
    else
        snprintf(buf + o, len - (size_t)o, " MISMATCH");
}
