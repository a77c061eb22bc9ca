/* shortform.c: validation against a program's short-form graph text:
 * lines `%C = aten.mm(%A, %B)` and `%Y = aten._softmax(%X, -1, False)`
 * without types, their references and DL16 tolerances computed here
 * (docs/validation.md derives them), each output compared (compare.c). */
#include "rt_internal.h"

#include <cblas.h>
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DL16_U 0x1p-10  /* DL16 unit roundoff: 9 stored fraction bits */
#define F32_EPS 0x1p-23 /* fp32 machine epsilon */
#define MAX_ARGS 8

typedef struct {
    rt_program *prog;
    rt_refval *vals;
    size_t nvals, cap;
    int line; /* current graph line */
    char *err;
    size_t errlen;
} ref_ctx;

static int64_t count_of(const rt_refval *v)
{
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++)
        n *= v->shape[i];
    return n;
}

static rt_refval *find_value(ref_ctx *c, const char *name)
{
    for (size_t i = c->nvals; i-- > 0;)
        if (strcmp(c->vals[i].name, name) == 0)
            return &c->vals[i];
    return NULL;
}

/* An argument "%NAME": a computed value, or the host copy of a tensor. */
static rt_refval *arg_value(ref_ctx *c, const char *arg)
{
    if (arg[0] != '%' || !arg[1]) {
        isa_errf(c->err, c->errlen, "reference: expected a %%tensor argument, got '%s' at graph line %d", arg, c->line);
        return NULL;
    }
    const char *name = arg + 1;
    rt_refval *v = find_value(c, name);
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
        rt_refval *nv = realloc(c->vals, cap * sizeof *nv);
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
    v->val = rt_user_values(c->prog, i);
    return v;
}

/* A new computed value for the current line (takes ownership of val, tol). */
static int define_value(ref_ctx *c, const char *name, const char *op, int rank, const int64_t *shape,
                        float *val, double *tol)
{
    if (c->nvals == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        rt_refval *nv = realloc(c->vals, cap * sizeof *nv);
        if (!nv) {
            free(val);
            free(tol);
            return isa_errf(c->err, c->errlen, "reference: out of host memory");
        }
        c->vals = nv;
        c->cap = cap;
    }
    rt_refval *v = &c->vals[c->nvals++];
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
        tol[i] = kab * ab[i] + u * fabs(ref[i]) + RT_ABS_FLOOR;
}

/* %C = aten.mm(%A, %B): cblas_sgemm on the fp32 inputs; tolerance
 * mm_tolerance. */
static int ref_mm(ref_ctx *c, const char *out, char **args, int nargs)
{
    if (nargs != 2)
        return isa_errf(c->err, c->errlen, "reference: aten.mm takes 2 arguments, not %d, at graph line %d", nargs,
                        c->line);
    rt_refval *a = arg_value(c, args[0]);
    rt_refval *b = a ? arg_value(c, args[1]) : NULL;
    if (!b)
        return -1;
    a = arg_value(c, args[0]); /* the array may have moved */
    if (a->rank != 2 || b->rank != 2 || a->shape[1] != b->shape[0]) {
        char as[192], bs[192];
        rt_dims_str(a->rank, a->shape, as, sizeof as);
        rt_dims_str(b->rank, b->shape, bs, sizeof bs);
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
    rt_refval *x = arg_value(c, args[0]);
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
            tol[r * n + j] = k * y + RT_ABS_FLOOR;
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

int rt_check_short(rt_program *prog, rt_check_result **results, int *n, char *err, size_t errlen)
{
    const isa_program *p = prog->p;
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
            rc = rt_computed_as_data(p, c.vals[i].name, c.vals[i].line, err, errlen);
    /* Every output tensor must be defined by the graph; compare them in
     * the order of the tensor table. */
    int nres = 0, bad = 0;
    for (size_t i = 0; i < p->ntensors && !rc; i++) {
        const isa_tensor *t = &p->tensors[i];
        if (t->role != ISA_ROLE_OUTPUT)
            continue;
        rt_refval *v = find_value(&c, t->name);
        if (!v || !v->op) {
            rc = isa_errf(err, errlen, "reference: output %s is not computed by the graph", t->name);
            break;
        }
        rc = rt_compare(prog, v, (int)i, &res[nres], err, errlen);
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
