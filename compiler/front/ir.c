/* ir.c: construction, rewriting and printing of the compiler's IR
 * (ir.h): affine indices, the hash-consed expression arena, buffers,
 * nodes, loop structures, dtype rules, and the text form of every pass. */
#include "ir.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- Allocation ---- */

/* Small blocks by malloc and memset: glibc's calloc skips the per-thread
 * cache that malloc takes them from (BERT-base: about 340 instructions a
 * call against some 80).  Large ones by calloc, which need not clear fresh
 * pages. */
enum { IR_SMALL_ALLOC = 1024 };

void *ir_xalloc(size_t n)
{
    if (n > IR_SMALL_ALLOC) {
        void *p = calloc(1, n);
        if (!p) {
            fprintf(stderr, "cc: out of memory\n");
            abort();
        }
        return p;
    }
    return memset(ir_xmalloc(n), 0, n + !n); /* n + !n, not n ? n : 1: gcc folds that back into calloc */
}

void *ir_xlines(size_t n)
{
    const size_t line = 64, size = (n + line - 1) / line * line;
    void *p = aligned_alloc(line, size ? size : line);
    if (!p) {
        fprintf(stderr, "cc: out of memory\n");
        abort();
    }
    memset(p, 0, size ? size : line);
    return p;
}

void *ir_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "cc: out of memory\n");
        abort();
    }
    return p;
}

void *ir_xgrow(void *p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return p;
    int c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    void *q = realloc(p, (size_t)c * elem);
    if (!q) {
        fprintf(stderr, "cc: out of memory\n");
        abort();
    }
    memset((char *)q + (size_t)*cap * elem, 0, (size_t)(c - *cap) * elem);
    *cap = c;
    return q;
}

char *ir_xstrdup(const char *s)
{
    return ir_xmemdup(s, strlen(s) + 1);
}

void *ir_xmemdup(const void *p, size_t n)
{
    if (!p)
        return NULL;
    void *d = ir_xmalloc(n); /* (every byte copied) */
    memcpy(d, p, n);
    return d;
}

char *ir_xsprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = ir_xalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

char *ir_xdotted(const char *a, const char *b)
{
    const size_t na = strlen(a), nb = strlen(b);
    char *s = ir_xmalloc(na + nb + 2);
    memcpy(s, a, na);
    s[na] = '.';
    memcpy(s + na + 1, b, nb + 1);
    return s;
}

const ir_op_info ir_ops[IR_NOPS] = {
#define X(name, arity, text, prec) {text, arity, prec},
    IR_OPS(X)
#undef X
};

const char *const ir_node_kind_names[] = {"pointwise", "reduction", "matmul", "host"};
const char *const ir_reduce_names[] = {"sum", "max", "min"};

/* ---- Affine indices ---- */

ir_index ir_idx_const(int64_t c)
{
    ir_index x;
    memset(&x, 0, sizeof x);
    x.offset = c;
    return x;
}

ir_index ir_idx_var(int v)
{
    assert(v >= 0 && v < IR_MAX_VARS);
    ir_index x = ir_idx_const(0);
    x.coef[v] = 1;
    return x;
}

ir_index ir_idx_compose(const ir_index *row, int nvars, const ir_index *coords)
{
    ir_index r = ir_idx_const(row->offset);
    for (int v = 0; v < nvars; v++) {
        int64_t c = row->coef[v];
        if (!c)
            continue;
        r.offset += c * coords[v].offset;
        if (c == 1) /* the most: an add gcc vectorizes (no 64-bit multiply in AVX2) */
            for (int w = 0; w < IR_MAX_VARS; w++)
                r.coef[w] += coords[v].coef[w];
        else
            for (int w = 0; w < IR_MAX_VARS; w++)
                r.coef[w] += c * coords[v].coef[w];
    }
    return r;
}

enum { RS = IR_OP_RESHAPE | IR_OP_VIEW, MV = IR_OP_VIEW };
static const struct {
    const char *name;
    unsigned attrs;
} OP_ATTRS[] = {
    {"view", RS},
    {"_unsafe_view", RS},
    {"reshape", RS},
    {"_reshape_alias", RS},
    {"unsqueeze", RS},
    {"squeeze", RS},
    {"flatten", RS},
    {"unflatten", RS},
    {"alias", IR_OP_ALIAS | MV},
    {"detach", IR_OP_ALIAS | MV},
    {"clone", IR_OP_COPY},
    {"contiguous", IR_OP_COPY},
    {"lift_fresh_copy", IR_OP_COPY},
    {"_to_copy", IR_OP_CAST},
    {"to", IR_OP_CAST},
    {"t", IR_OP_PERMUTE | MV},
    {"transpose", IR_OP_PERMUTE | MV},
    {"permute", IR_OP_PERMUTE | MV},
    {"movedim", IR_OP_PERMUTE | MV},
    {"slice", IR_OP_SLICE | MV},
    {"narrow", IR_OP_SLICE | MV},
    {"select", IR_OP_SELECT | MV},
    {"split", IR_OP_SPLIT | MV},
    {"split_with_sizes", IR_OP_SPLIT | MV},
    {"chunk", IR_OP_SPLIT | MV},
    {"unbind", IR_OP_SPLIT | MV},
    {"expand", IR_OP_EXPAND | MV},
    {"diagonal", MV},
    {"unfold", MV},
    {"as_strided", MV},
    {"getitem", MV},
    {"view_as_real", MV},
    {"view_as_complex", MV},
};

/* A row is name's when their first characters, then their len, match and
 * the row ends there: no strlen of every row per lookup (kernel_name asks
 * for each source op of every kernel). */
unsigned ir_op_attrs_n(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof OP_ATTRS / sizeof *OP_ATTRS; i++) {
        const char *r = OP_ATTRS[i].name;
        if (r[0] == name[0] && !strncmp(r, name, len) && !r[len])
            return OP_ATTRS[i].attrs;
    }
    return 0;
}

unsigned ir_op_attrs(const char *name)
{
    return ir_op_attrs_n(name, strlen(name));
}

static int is_view(const gr_node *n)
{
    return (ir_op_attrs(n->base) & (IR_OP_RESHAPE | IR_OP_SLICE | IR_OP_EXPAND)) && n->nargs &&
           n->args[0].kind == GR_ARG_VALUE;
}

int ir_view_root(const gr_graph *g, int v)
{
    while (g->values[v].kind == GR_VAL_NODE && is_view(&g->nodes[g->values[v].node]))
        v = g->nodes[g->values[v].node].args[0].value;
    return v;
}

/* Whether node n reads value v only as the row numbers of a gather from
 * a 2-D table of rows rows. */
static int row_gather_of(const gr_graph *g, const gr_node *n, int v, int64_t rows)
{
    const gr_arg *t = gr_node_arg(n, 0, NULL), *ix = gr_node_arg(n, 1, "indices");
    if (!t || t->kind != GR_ARG_VALUE || t->value == v || !ix)
        return 0;
    const gr_ttype *tt = &g->values[t->value].type;
    if (tt->rank != 2 || tt->shape[0] != rows)
        return 0;
    if (!strcmp(n->base, "embedding"))
        return ix->kind == GR_ARG_VALUE && ix->value == v;
    return !strcmp(n->base, "index") && ix->kind == GR_ARG_LIST && ix->nitems == 1 &&
           ix->items[0].kind == GR_ARG_VALUE && ix->items[0].value == v;
}

int ir_only_row_gathers(const gr_graph *g, int param, int64_t rows)
{
    for (int i = 0; i < g->noutputs; i++)
        if (ir_view_root(g, g->outputs[i]) == param)
            return 0;
    for (int k = 0; k < g->nnodes; k++) {
        const gr_node *n = &g->nodes[k];
        for (int a = 0; a < n->nargs; a++) {
            const gr_arg *x = &n->args[a];
            int one = x->kind != GR_ARG_LIST, m = one ? 1 : x->nitems;
            for (int i = 0; i < m; i++) {
                const gr_arg *y = one ? x : &x->items[i];
                if (y->kind == GR_ARG_VALUE && ir_view_root(g, y->value) == param &&
                    !(a == 0 && is_view(n)) && !row_gather_of(g, n, y->value, rows))
                    return 0;
            }
        }
    }
    return 1;
}

int ir_idx_equal(const ir_index *a, const ir_index *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

static int idx_terms(const ir_index *x)
{
    int t = x->offset != 0;
    for (int v = 0; v < IR_MAX_VARS; v++)
        t += x->coef[v] != 0;
    return t;
}

void ir_idx_print(const ir_index *x, int nvars, const char *const *names, FILE *f)
{
    int first = 1;
    for (int v = 0; v < nvars; v++) {
        int64_t c = x->coef[v];
        if (!c)
            continue;
        if (first)
            fputs(c < 0 ? "-" : "", f);
        else
            fputs(c < 0 ? " - " : " + ", f);
        int64_t m = c < 0 ? -c : c;
        if (m != 1)
            fprintf(f, "%lld*", (long long)m);
        fputs(names[v], f);
        first = 0;
    }
    if (first)
        fprintf(f, "%lld", (long long)x->offset);
    else if (x->offset)
        fprintf(f, " %c %lld", x->offset < 0 ? '-' : '+', (long long)(x->offset < 0 ? -x->offset : x->offset));
}

/* ---- The expression arena ---- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t expr_hash(const ir_expr *x)
{
    uint64_t h = mix(0, (uint64_t)x->kind);
    h = mix(h, (uint64_t)x->op);
    h = mix(h, (uint64_t)x->dtype);
    h = mix(h, (uint64_t)(int64_t)x->a);
    h = mix(h, (uint64_t)(int64_t)x->b);
    h = mix(h, (uint64_t)(int64_t)x->c);
    h = mix(h, (uint64_t)(int64_t)x->buf);
    h = mix(h, (uint64_t)x->stride);
    uint64_t bits;
    memcpy(&bits, &x->value, sizeof bits);
    h = mix(h, bits);
    h = mix(h, (uint64_t)x->idx.offset);
    for (int v = 0; v < IR_MAX_VARS; v++) /* most are 0: mixed in are the others, with their place */
        if (x->idx.coef[v])
            h = mix(h, (uint64_t)x->idx.coef[v] * 31 + (uint64_t)v);
    return h;
}

static int expr_equal(const ir_expr *x, const ir_expr *y)
{
    return x->kind == y->kind && x->op == y->op && x->dtype == y->dtype && x->a == y->a && x->b == y->b &&
           x->c == y->c && x->buf == y->buf && x->stride == y->stride &&
           memcmp(&x->value, &y->value, sizeof x->value) == 0 && ir_idx_equal(&x->idx, &y->idx);
}

static void rehash(ir_arena *A)
{
    free(A->hash);
    A->hcap = A->hcap ? A->hcap * 2 : 1024;
    A->hash = ir_xalloc((size_t)A->hcap * sizeof *A->hash);
    for (int i = 0; i < A->n; i++) {
        size_t s = (size_t)(expr_hash(&A->e[i]) & (uint64_t)(A->hcap - 1));
        while (A->hash[s])
            s = (s + 1) & (size_t)(A->hcap - 1);
        A->hash[s] = i + 1;
    }
}

/* The id of x, added if new. */
static int intern(ir_arena *A, const ir_expr *x)
{
    if (2 * (A->n + 1) > A->hcap)
        rehash(A);
    size_t s = (size_t)(expr_hash(x) & (uint64_t)(A->hcap - 1));
    while (A->hash[s]) {
        if (expr_equal(&A->e[A->hash[s] - 1], x))
            return A->hash[s] - 1;
        s = (s + 1) & (size_t)(A->hcap - 1);
    }
    int cap = A->cap;
    A->e = ir_xgrow(A->e, &A->cap, A->n + 1, sizeof *A->e);
    if (A->cap != cap) {
        int c2 = cap;
        A->memo = ir_xgrow(A->memo, &c2, A->cap, sizeof *A->memo);
        c2 = cap;
        A->stamp = ir_xgrow(A->stamp, &c2, A->cap, sizeof *A->stamp);
    }
    A->e[A->n] = *x;
    A->hash[s] = A->n + 1;
    return A->n++;
}

static ir_expr blank(ir_expr_kind k, gr_dtype dt)
{
    ir_expr x;
    memset(&x, 0, sizeof x);
    x.kind = k;
    x.dtype = dt;
    x.a = x.b = x.c = x.buf = -1;
    return x;
}

int ir_load(ir_arena *A, int buf, gr_dtype dt, const ir_index *idx)
{
    ir_expr x = blank(IR_E_LOAD, dt);
    x.buf = buf;
    x.idx = *idx;
    return intern(A, &x);
}

int ir_iload(ir_arena *A, int buf, gr_dtype dt, const ir_index *idx, int64_t stride, int sub)
{
    ir_expr x = blank(IR_E_ILOAD, dt);
    x.buf = buf;
    x.idx = *idx;
    x.stride = stride;
    x.a = sub;
    return intern(A, &x);
}

int ir_const(ir_arena *A, double v, gr_dtype dt)
{
    ir_expr x = blank(IR_E_CONST, dt);
    if (dt == GR_BOOL)
        v = v != 0;
    else if (!ir_dtype_is_float(dt))
        v = trunc(v);
    x.value = v;
    return intern(A, &x);
}

int ir_indexval(ir_arena *A, const ir_index *idx)
{
    ir_expr x = blank(IR_E_INDEX, GR_I64);
    x.idx = *idx;
    return intern(A, &x);
}

int ir_acc(ir_arena *A, gr_dtype dt)
{
    ir_expr x = blank(IR_E_ACC, dt);
    return intern(A, &x);
}

static int is_bool_op(ir_op op)
{
    return op == IR_NOT || (op >= IR_EQ && op <= IR_OR);
}

int ir_op1(ir_arena *A, ir_op op, int a)
{
    assert(ir_ops[op].arity == 1);
    ir_expr x = blank(IR_E_OP, is_bool_op(op) ? GR_BOOL : A->e[a].dtype);
    x.op = op;
    x.a = a;
    return intern(A, &x);
}

int ir_op2(ir_arena *A, ir_op op, int a, int b)
{
    assert(ir_ops[op].arity == 2);
    assert(A->e[a].dtype == A->e[b].dtype);
    ir_expr x = blank(IR_E_OP, is_bool_op(op) ? GR_BOOL : A->e[a].dtype);
    x.op = op;
    x.a = a;
    x.b = b;
    return intern(A, &x);
}

int ir_where(ir_arena *A, int c, int a, int b)
{
    assert(A->e[c].dtype == GR_BOOL && A->e[a].dtype == A->e[b].dtype);
    ir_expr x = blank(IR_E_WHERE, A->e[a].dtype);
    x.a = c;
    x.b = a;
    x.c = b;
    return intern(A, &x);
}

int ir_cast(ir_arena *A, int a, gr_dtype dt)
{
    if (A->e[a].dtype == dt)
        return a;
    if (A->e[a].kind == IR_E_CONST)
        return ir_const(A, A->e[a].value, dt);
    ir_expr x = blank(IR_E_CAST, dt);
    x.a = a;
    return intern(A, &x);
}

void ir_arena_free(ir_arena *A)
{
    free(A->e);
    free(A->hash);
    free(A->memo);
    free(A->stamp);
    memset(A, 0, sizeof *A);
}

/* Start a walk: stamps of an earlier walk no longer count. */
static void walk_begin(ir_arena *A)
{
    A->gen++;
}

static int seen(ir_arena *A, int e)
{
    return A->stamp[e] == A->gen;
}

static void mark(ir_arena *A, int e, int memo)
{
    A->stamp[e] = A->gen;
    A->memo[e] = memo;
}

/* A load's replacement (ir_map_loads), when there is one. */
typedef struct {
    int (*fn)(void *ctx, ir_arena *A, const ir_expr *x);
    void *ctx;
    int from, to; /* ir_replace: expression from becomes to */
} load_map;

static int subst_rec(ir_arena *A, int e, int nvars, const ir_index *vars, const int *repl, const load_map *lm)
{
    if (seen(A, e))
        return A->memo[e];
    if (lm && e == lm->from)
        return lm->to;
    ir_expr x = A->e[e]; /* a copy: interning may move the arena */
    int r = e;
    switch (x.kind) {
    case IR_E_LOAD:
        if (lm && lm->fn && (r = lm->fn(lm->ctx, A, &x)) >= 0) {
            break;
        } else if (repl && repl[x.buf] >= 0) {
            r = repl[x.buf];
        } else {
            ir_index i = ir_idx_compose(&x.idx, nvars, vars);
            r = ir_load(A, x.buf, x.dtype, &i);
        }
        break;
    case IR_E_ILOAD: {
        int sub = subst_rec(A, x.a, nvars, vars, repl, lm);
        ir_index i = ir_idx_compose(&x.idx, nvars, vars);
        r = ir_iload(A, x.buf, x.dtype, &i, x.stride, sub);
        break;
    }
    case IR_E_CONST:
    case IR_E_ACC:
        break;
    case IR_E_INDEX: {
        ir_index i = ir_idx_compose(&x.idx, nvars, vars);
        r = ir_indexval(A, &i);
        break;
    }
    case IR_E_OP: {
        int a = subst_rec(A, x.a, nvars, vars, repl, lm);
        r = x.b < 0 ? ir_op1(A, x.op, a) : ir_op2(A, x.op, a, subst_rec(A, x.b, nvars, vars, repl, lm));
        break;
    }
    case IR_E_WHERE: {
        int c = subst_rec(A, x.a, nvars, vars, repl, lm);
        int a = subst_rec(A, x.b, nvars, vars, repl, lm);
        r = ir_where(A, c, a, subst_rec(A, x.c, nvars, vars, repl, lm));
        break;
    }
    case IR_E_CAST:
        r = ir_cast(A, subst_rec(A, x.a, nvars, vars, repl, lm), x.dtype);
        break;
    }
    mark(A, e, r);
    return r;
}

int ir_subst(ir_arena *A, int e, int nvars, const ir_index *vars, const int *repl)
{
    walk_begin(A);
    return subst_rec(A, e, nvars, vars, repl, NULL);
}

int ir_map_loads(ir_arena *A, int e, int (*fn)(void *ctx, ir_arena *A, const ir_expr *x), void *ctx)
{
    ir_index vars[IR_MAX_VARS];
    for (int v = 0; v < IR_MAX_VARS; v++)
        vars[v] = ir_idx_var(v);
    load_map lm = {fn, ctx, -1, -1};
    walk_begin(A);
    return subst_rec(A, e, IR_MAX_VARS, vars, NULL, &lm);
}

int ir_replace(ir_arena *A, int e, int from, int to)
{
    ir_index vars[IR_MAX_VARS];
    for (int v = 0; v < IR_MAX_VARS; v++)
        vars[v] = ir_idx_var(v);
    load_map lm = {NULL, NULL, from, to};
    walk_begin(A);
    return subst_rec(A, e, IR_MAX_VARS, vars, NULL, &lm);
}

static int size_rec(ir_arena *A, int e)
{
    if (e < 0 || seen(A, e))
        return 0;
    mark(A, e, 0);
    const ir_expr *x = &A->e[e];
    return 1 + size_rec(A, x->a) + size_rec(A, x->b) + size_rec(A, x->c);
}

int ir_expr_size(ir_arena *A, int e)
{
    walk_begin(A);
    return size_rec(A, e);
}

static void walk_rec(ir_arena *A, int e, void (*fn)(void *, const ir_expr *), void *ctx)
{
    if (e < 0 || seen(A, e))
        return;
    mark(A, e, 0);
    const ir_expr *x = &A->e[e];
    fn(ctx, x);
    walk_rec(A, x->a, fn, ctx);
    walk_rec(A, x->b, fn, ctx);
    walk_rec(A, x->c, fn, ctx);
}

void ir_expr_walk(ir_arena *A, int e, void (*fn)(void *ctx, const ir_expr *x), void *ctx)
{
    walk_begin(A);
    walk_rec(A, e, fn, ctx);
}

void ir_print_double(double v, FILE *f)
{
    if (isnan(v)) {
        fputs("nan", f);
        return;
    }
    if (isinf(v)) {
        fputs(v < 0 ? "-inf" : "inf", f);
        return;
    }
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    if (!strpbrk(buf, ".en"))
        strcat(buf, ".0");
    fputs(buf, f);
}

/* Precedence of e as an operand: infix operators bind by their table
 * precedence; a sum-like index or a negative constant binds like +. */
static int prec_of(const ir_arena *A, int e)
{
    const ir_expr *x = &A->e[e];
    if (x->kind == IR_E_OP)
        return ir_ops[x->op].prec ? ir_ops[x->op].prec : 9;
    if (x->kind == IR_E_INDEX && (idx_terms(&x->idx) > 1 || x->idx.offset < 0))
        return 1;
    if (x->kind == IR_E_CONST && (x->value < 0 || signbit(x->value)))
        return 1;
    return 9;
}

static void print_rec(const ir_arena *A, int e, const char *const *vars, const char *const *bufs, FILE *f);

static void print_operand(const ir_arena *A, int e, int paren, const char *const *vars, const char *const *bufs,
                          FILE *f)
{
    if (paren)
        fputc('(', f);
    print_rec(A, e, vars, bufs, f);
    if (paren)
        fputc(')', f);
}

static void print_rec(const ir_arena *A, int e, const char *const *vars, const char *const *bufs, FILE *f)
{
    const ir_expr *x = &A->e[e];
    switch (x->kind) {
    case IR_E_LOAD:
        fprintf(f, "load(%s, ", bufs[x->buf]);
        ir_idx_print(&x->idx, IR_MAX_VARS, vars, f);
        fputc(')', f);
        break;
    case IR_E_ILOAD:
        fprintf(f, "load(%s, ", bufs[x->buf]);
        if (idx_terms(&x->idx)) {
            ir_idx_print(&x->idx, IR_MAX_VARS, vars, f);
            fputs(" + ", f);
        }
        if (x->stride != 1)
            fprintf(f, "%lld*", (long long)x->stride);
        print_operand(A, x->a, prec_of(A, x->a) < 9 && x->stride != 1, vars, bufs, f);
        fputc(')', f);
        break;
    case IR_E_CONST:
        if (x->dtype == GR_BOOL)
            fputs(x->value ? "True" : "False", f);
        else if (!ir_dtype_is_float(x->dtype))
            fprintf(f, "%lld", (long long)x->value);
        else
            ir_print_double(x->value, f);
        break;
    case IR_E_INDEX:
        ir_idx_print(&x->idx, IR_MAX_VARS, vars, f);
        break;
    case IR_E_ACC:
        fputs("acc", f);
        break;
    case IR_E_OP: {
        const ir_op_info *o = &ir_ops[x->op];
        if (o->prec) {
            int pa = prec_of(A, x->a), pb = prec_of(A, x->b);
            int rassoc = x->op == IR_ADD || x->op == IR_MUL;
            print_operand(A, x->a, pa < o->prec, vars, bufs, f);
            fprintf(f, " %s ", o->text);
            print_operand(A, x->b, rassoc ? pb < o->prec : pb <= o->prec, vars, bufs, f);
        } else {
            fprintf(f, "%s(", o->text);
            print_rec(A, x->a, vars, bufs, f);
            if (x->b >= 0) {
                fputs(", ", f);
                print_rec(A, x->b, vars, bufs, f);
            }
            fputc(')', f);
        }
        break;
    }
    case IR_E_WHERE:
        fputs("where(", f);
        print_rec(A, x->a, vars, bufs, f);
        fputs(", ", f);
        print_rec(A, x->b, vars, bufs, f);
        fputs(", ", f);
        print_rec(A, x->c, vars, bufs, f);
        fputc(')', f);
        break;
    case IR_E_CAST:
        fprintf(f, "to_%s(", gr_dtype_names[x->dtype]);
        print_rec(A, x->a, vars, bufs, f);
        fputc(')', f);
        break;
    }
}

void ir_expr_print(const ir_arena *A, int e, const char *const *vars, const char *const *bufs, FILE *f)
{
    print_rec(A, e, vars, bufs, f);
}

/* ---- Dtypes ---- */

int64_t ir_dtype_size(gr_dtype dt)
{
    static const int64_t size[GR_NDTYPES] = {4, 2, 2, 8, 8, 4, 1};
    return size[dt];
}

int64_t ir_buf_bytes(const ir_buf *b)
{
    return gr_ttype_numel(&b->type) * ir_dtype_size(b->type.dtype);
}

int ir_dtype_is_float(gr_dtype dt)
{
    return dt == GR_F32 || dt == GR_F16 || dt == GR_BF16 || dt == GR_F64;
}

/* 0 bool, 1 integer, 2 floating point */
static int category(gr_dtype dt)
{
    return dt == GR_BOOL ? 0 : ir_dtype_is_float(dt) ? 2 : 1;
}

/* The promotion of two dtypes of one kind of operand. */
static gr_dtype promote2(gr_dtype a, gr_dtype b)
{
    if (a == b)
        return a;
    int ca = category(a), cb = category(b);
    if (ca != cb)
        return ca > cb ? a : b;
    if (ca == 1)
        return (a == GR_I64 || b == GR_I64) ? GR_I64 : GR_I32;
    if (a == GR_F64 || b == GR_F64)
        return GR_F64;
    return GR_F32; /* f16 with bf16, or either with f32 */
}

gr_dtype ir_promote(int n, const gr_dtype *dt, const int *cls)
{
    int have[3] = {0, 0, 0};
    gr_dtype res[3] = {GR_BOOL, GR_BOOL, GR_BOOL};
    for (int i = 0; i < n; i++) {
        res[cls[i]] = have[cls[i]] ? promote2(res[cls[i]], dt[i]) : dt[i];
        have[cls[i]] = 1;
    }
    /* The highest category wins; among operands of that category,
     * tensors with dimensions come first, then 0-d tensors, then scalars. */
    int best = -1;
    for (int c = 0; c < 3; c++)
        if (have[c] && category(res[c]) > best)
            best = category(res[c]);
    for (int c = 0; c < 3; c++) {
        if (!have[c] || category(res[c]) != best)
            continue;
        if (c < 2)
            return res[c];
        return best == 2 ? GR_F32 : best == 1 ? GR_I64 : GR_BOOL; /* Python scalars: default dtypes */
    }
    assert(0);
    return GR_F32;
}

int ir_broadcast(const gr_ttype *a, const gr_ttype *b, gr_ttype *out)
{
    int r = a->rank > b->rank ? a->rank : b->rank;
    gr_ttype t;
    memset(&t, 0, sizeof t);
    t.rank = r;
    for (int d = 0; d < r; d++) {
        int da = d - (r - a->rank), db = d - (r - b->rank);
        int64_t sa = da >= 0 ? a->shape[da] : 1, sb = db >= 0 ? b->shape[db] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return -1;
        t.shape[d] = sa == 1 ? sb : sa;
    }
    *out = t;
    return 0;
}

/* ---- Buffers and nodes ---- */

int ir_buf_new(ir_prog *p, const char *name, const gr_ttype *t, ir_buf_kind kind)
{
    char *nm = ir_xstrdup(name);
    for (int k = 1;; k++) {
        int clash = 0;
        for (int i = 0; i < p->nbufs && !clash; i++)
            clash = ir_name_eq(p->bufs[i].name, nm);
        if (!clash)
            break;
        free(nm);
        nm = ir_xsprintf("%s.%d", name, k);
    }
    p->bufs = ir_xgrow(p->bufs, &p->capbufs, p->nbufs + 1, sizeof *p->bufs);
    ir_buf *b = &p->bufs[p->nbufs];
    b->name = nm;
    b->type = *t;
    b->kind = kind;
    b->node = -1;
    b->nan_axis = IR_MASK_NONE;
    b->last_use = -1;
    p->bnames = ir_xgrow(p->bnames, &p->capbnames, p->nbufs + 1, sizeof *p->bnames);
    p->bnames[p->nbufs] = b->name;
    return p->nbufs++;
}

int ir_node_new(ir_prog *p, ir_node_kind kind, int out)
{
    p->nodes = ir_xgrow(p->nodes, &p->capnodes, p->nnodes + 1, sizeof *p->nodes);
    ir_node *n = &p->nodes[p->nnodes];
    n->kind = kind;
    n->out = out;
    n->body = -1;
    n->a = n->b = -1;
    n->kernel = -1;
    n->epi = -1;
    p->bufs[out].node = p->nnodes;
    return p->nnodes++;
}

const char *const *ir_node_var_names(const ir_node *n)
{
    static const char *const pw[IR_MAX_VARS] = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7",
                                                "i8", "i9", "i10", "i11", "i12", "i13", "i14", "i15"};
    static const char *const red[GR_MAX_RANK + 1][IR_MAX_VARS] = {
        {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"},
        {"i0", "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"},
        {"i0", "i1", "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"},
        {"i0", "i1", "i2", "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"},
        {"i0", "i1", "i2", "i3", "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"},
        {"i0", "i1", "i2", "i3", "i4", "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"},
        {"i0", "i1", "i2", "i3", "i4", "i5", "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"},
        {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"},
        {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7", "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"},
    };
    static const char *const mm[GR_MAX_RANK][IR_MAX_VARS] = {
        {"m", "n", "k"},
        {"b0", "m", "n", "k"},
        {"b0", "b1", "m", "n", "k"},
        {"b0", "b1", "b2", "m", "n", "k"},
        {"b0", "b1", "b2", "b3", "m", "n", "k"},
        {"b0", "b1", "b2", "b3", "b4", "m", "n", "k"},
        {"b0", "b1", "b2", "b3", "b4", "b5", "m", "n", "k"},
        {"b0", "b1", "b2", "b3", "b4", "b5", "b6", "m", "n", "k"},
    };
    if (n->kind == IR_REDUCTION) {
        assert(n->nvars - n->nred >= 0 && n->nvars - n->nred <= GR_MAX_RANK);
        return red[n->nvars - n->nred];
    }
    if (n->kind == IR_MATMUL) {
        assert(n->nbatch >= 0 && n->nbatch < GR_MAX_RANK);
        return mm[n->nbatch];
    }
    return pw;
}

/* ---- Loop simplification ---- */

void ir_node_remap(ir_prog *p, int id, int nvars, const int64_t *ranges, int nred, const ir_index *map)
{
    ir_node *n = &p->nodes[id];
    n->store = ir_idx_compose(&n->store, n->nvars, map);
    n->aidx = ir_idx_compose(&n->aidx, n->nvars, map);
    n->bidx = ir_idx_compose(&n->bidx, n->nvars, map);
    if (n->body >= 0)
        n->body = ir_subst(&p->A, n->body, n->nvars, map, NULL);
    n->nvars = nvars;
    memcpy(n->ranges, ranges, (size_t)nvars * sizeof *ranges);
    n->nred = nred;
}

typedef struct {
    int v;
    int64_t r;
    int ok;
} merge_check;

static int mergeable_idx(const ir_index *x, int v, int64_t r)
{
    return x->coef[v] == x->coef[v + 1] * r;
}

static void merge_visit(void *ctx, const ir_expr *x)
{
    merge_check *m = ctx;
    if ((x->kind == IR_E_LOAD || x->kind == IR_E_ILOAD || x->kind == IR_E_INDEX) && !mergeable_idx(&x->idx, m->v, m->r))
        m->ok = 0;
}

void ir_node_simplify(ir_prog *p, int id)
{
    ir_node *n = &p->nodes[id];
    ir_index map[IR_MAX_VARS];
    int64_t ranges[IR_MAX_VARS];
    if (n->kind == IR_MATMUL) { /* the template keeps its loops */
        for (int v = 0; v < n->nvars; v++)
            map[v] = n->ranges[v] == 1 ? ir_idx_const(0) : ir_idx_var(v);
        memcpy(ranges, n->ranges, sizeof ranges);
        ir_node_remap(p, id, n->nvars, ranges, n->nred, map);
        return;
    }
    /* Drop the extent-1 loops. */
    int nv = 0, nred = 0, outer = n->nvars - n->nred;
    for (int v = 0; v < n->nvars; v++) {
        if (n->ranges[v] == 1) {
            map[v] = ir_idx_const(0);
            continue;
        }
        map[v] = ir_idx_var(nv);
        ranges[nv++] = n->ranges[v];
        nred += v >= outer;
    }
    ir_node_remap(p, id, nv, ranges, nred, map);
    /* Merge neighbours, within the outer loops and within the reduced ones. */
    for (int v = n->nvars - 2; v >= 0; v--) {
        if (v == n->nvars - n->nred - 1)
            continue; /* v outer, v + 1 reduced */
        merge_check m = {v, n->ranges[v + 1], 1};
        m.ok = mergeable_idx(&n->store, v, m.r);
        if (m.ok && n->body >= 0)
            ir_expr_walk(&p->A, n->body, merge_visit, &m);
        if (!m.ok)
            continue;
        /* coef(v) * v + coef(v+1) * v' = coef(v+1) * (r v + v'): v goes, v + 1 is the merged loop */
        for (int w = 0; w < n->nvars; w++)
            map[w] = w < v ? ir_idx_var(w) : w == v ? ir_idx_const(0) : ir_idx_var(w - 1);
        memcpy(ranges, n->ranges, sizeof ranges);
        ranges[v] *= ranges[v + 1];
        memmove(&ranges[v + 1], &ranges[v + 2], (size_t)(n->nvars - v - 2) * sizeof *ranges);
        ir_node_remap(p, id, n->nvars - 1, ranges, n->nred - (v >= n->nvars - n->nred), map);
    }
}

/* ---- Loop structures ---- */

static int64_t prod(const int64_t *x, int n)
{
    int64_t r = 1;
    for (int i = 0; i < n; i++)
        r *= x[i];
    return r;
}

static void squeeze(const int64_t *r, int lo, int hi, int64_t *out, int *nout)
{
    for (int v = lo; v < hi; v++)
        if (r[v] != 1)
            out[(*nout)++] = r[v];
}

void ir_node_sig(const ir_prog *p, int id, ir_sig *s)
{
    const ir_node *n = &p->nodes[id];
    memset(s, 0, sizeof *s);
    s->kind = n->kind;
    int outer = n->kind == IR_REDUCTION ? n->nvars - n->nred : n->kind == IR_MATMUL ? n->nvars - 1 : n->nvars;
    squeeze(n->ranges, 0, outer, s->outer, &s->nouter);
    squeeze(n->ranges, outer, n->nvars, s->red, &s->nred);
}

/* The common refinement of extent lists a and b of one product: the list
 * whose prefix products are the union of theirs.  -1 if they do not nest
 * (6 x 4 against 4 x 6) or it would have too many loops. */
static int refine(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out, int *nout)
{
    if (prod(a, na) != prod(b, nb))
        return -1;
    int64_t pa = 1, pb = 1, prev = 1;
    int i = 0, j = 0, n = 0;
    while (i < na || j < nb) {
        int64_t xa = i < na ? pa * a[i] : INT64_MAX, xb = j < nb ? pb * b[j] : INT64_MAX;
        int64_t next = xa < xb ? xa : xb;
        if (next % prev || n == IR_MAX_VARS)
            return -1;
        out[n++] = next / prev;
        prev = next;
        if (xa == next) {
            pa = xa;
            i++;
        }
        if (xb == next) {
            pb = xb;
            j++;
        }
    }
    *nout = n;
    return 0;
}

int ir_sig_join(const ir_sig *a, const ir_sig *b, ir_sig *out)
{
    if (a->kind < b->kind) {
        const ir_sig *t = a;
        a = b;
        b = t;
    }
    ir_sig r = *a;
    int64_t all[2 * IR_MAX_VARS], l[IR_MAX_VARS];
    int nl;
    switch (a->kind) {
    case IR_POINTWISE:
        if (refine(a->outer, a->nouter, b->outer, b->nouter, r.outer, &r.nouter))
            return -1;
        break;
    case IR_REDUCTION:
        if (b->kind == IR_REDUCTION) {
            if (refine(a->outer, a->nouter, b->outer, b->nouter, r.outer, &r.nouter) ||
                refine(a->red, a->nred, b->red, b->nred, r.red, &r.nred))
                return -1;
            break;
        }
        if (prod(b->outer, b->nouter) == prod(a->outer, a->nouter)) { /* per-row ops */
            if (refine(a->outer, a->nouter, b->outer, b->nouter, r.outer, &r.nouter))
                return -1;
            break;
        }
        /* row ops: split the refinement where the outer loops end */
        memcpy(all, a->outer, (size_t)a->nouter * sizeof *all);
        memcpy(all + a->nouter, a->red, (size_t)a->nred * sizeof *all);
        if (a->nouter + a->nred > IR_MAX_VARS || refine(all, a->nouter + a->nred, b->outer, b->nouter, l, &nl))
            return -1;
        {
            int64_t bound = prod(a->outer, a->nouter), pp = 1;
            int at = 0;
            while (pp != bound)
                pp *= l[at++];
            r.nouter = at;
            memcpy(r.outer, l, (size_t)at * sizeof *l);
            r.nred = nl - at;
            memcpy(r.red, l + at, (size_t)(nl - at) * sizeof *l);
        }
        break;
    case IR_HOST: /* a host op is a kernel of its own */
        return -1;
    case IR_MATMUL: /* an epilogue must be expressible in the template's loops */
        if (b->kind != IR_POINTWISE || refine(a->outer, a->nouter, b->outer, b->nouter, l, &nl) ||
            nl != a->nouter || memcmp(l, a->outer, (size_t)nl * sizeof *l))
            return -1;
        break;
    }
    *out = r;
    return 0;
}

/* Variables lo..hi-1 of node n (the extent-1 ones skipped) onto the
 * kernel loops at positions pos.. with extents k[]: each variable is a
 * run of whole kernel loops. */
static int map_run(const ir_node *n, int lo, int hi, const int64_t *k, int nk, int pos, ir_index *vars)
{
    int w = 0;
    for (int v = lo; v < hi; v++) {
        if (n->ranges[v] == 1) {
            vars[v] = ir_idx_const(0);
            continue;
        }
        int start = w;
        int64_t pp = 1;
        while (w < nk && pp < n->ranges[v])
            pp *= k[w++];
        if (pp != n->ranges[v])
            return -1;
        vars[v] = ir_idx_const(0);
        int64_t stride = 1;
        for (int x = w - 1; x >= start; x--) {
            vars[v].coef[pos + x] = stride;
            stride *= k[x];
        }
    }
    return w == nk ? 0 : -1;
}

int ir_node_vars(const ir_prog *p, int id, const ir_sig *s, ir_index *vars)
{
    const ir_node *n = &p->nodes[id];
    if (n->kind == IR_POINTWISE) {
        int64_t all[2 * IR_MAX_VARS], total = prod(n->ranges, n->nvars);
        if (total == prod(s->outer, s->nouter) * prod(s->red, s->nred) && s->nouter + s->nred <= IR_MAX_VARS) {
            memcpy(all, s->outer, (size_t)s->nouter * sizeof *all);
            memcpy(all + s->nouter, s->red, (size_t)s->nred * sizeof *all);
            return map_run(n, 0, n->nvars, all, s->nouter + s->nred, 0, vars);
        }
        if (s->nred && total == prod(s->outer, s->nouter))
            return map_run(n, 0, n->nvars, s->outer, s->nouter, 0, vars);
        return -1;
    }
    if (n->kind != s->kind)
        return -1;
    int outer = n->kind == IR_REDUCTION ? n->nvars - n->nred : n->nvars - 1;
    if (map_run(n, 0, outer, s->outer, s->nouter, 0, vars) ||
        map_run(n, outer, n->nvars, s->red, s->nred, s->nouter, vars))
        return -1;
    return 0;
}

void ir_sig_print(const ir_sig *s, FILE *f)
{
    fputc('[', f);
    for (int i = 0; i < s->nouter; i++)
        fprintf(f, "%s%lld", i ? ", " : "", (long long)s->outer[i]);
    if (s->nred) {
        fputs(s->nouter ? " | " : "| ", f);
        for (int i = 0; i < s->nred; i++)
            fprintf(f, "%s%lld", i ? ", " : "", (long long)s->red[i]);
    }
    fputc(']', f);
}

/* ---- Errors ---- */

int ir_error(ir_prog *p, int line, const char *fmt, ...)
{
    if (line >= 0)
        isa_errf(p->err, p->errlen, "%s:%d: ", p->path, line);
    else
        isa_errf(p->err, p->errlen, "%s: ", p->path);
    va_list ap;
    va_start(ap, fmt);
    isa_verrf_cat(p->err, p->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int ir_refuse(ir_prog *p, int src, const char *fmt, ...)
{
    p->fail_src = src;
    isa_errf(p->err, p->errlen, "%s:%d: ", p->path, p->src[src].line);
    va_list ap;
    va_start(ap, fmt);
    isa_verrf_cat(p->err, p->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- Kernels' memory traffic ---- */

static int in_kernel(const ir_prog *p, int node, int k)
{
    return node >= 0 && p->nodes[node].kernel == k;
}

int ir_buf_is_internal(const ir_prog *p, int b)
{
    const ir_buf *B = &p->bufs[b];
    if (B->kind != IR_BUF_COMPUTED || B->output || B->node < 0 || !p->deps_done)
        return 0;
    int k = p->nodes[B->node].kernel;
    for (int i = 0; i < p->nnodes; i++) {
        const ir_node *n = &p->nodes[i];
        if (n->dead)
            continue;
        for (int r = 0; r < n->nreads; r++)
            if (n->reads[r].buf == b && n->kernel != k)
                return 0;
    }
    return 1;
}

static void add_unique(int *list, int *n, int x)
{
    for (int i = 0; i < *n; i++)
        if (list[i] == x)
            return;
    list[(*n)++] = x;
}

void ir_kernel_io(const ir_prog *p, int k, int *reads, int *nreads, int *writes, int *nwrites)
{
    const ir_kernel *K = &p->kernels[k];
    *nreads = *nwrites = 0;
    for (int i = 0; i < K->nnodes; i++) {
        const ir_node *n = &p->nodes[K->nodes[i]];
        for (int r = 0; r < n->nreads; r++)
            if (!in_kernel(p, p->bufs[n->reads[r].buf].node, k))
                add_unique(reads, nreads, n->reads[r].buf);
        add_unique(writes, nwrites, n->out);
        for (int j = 0; j < n->nhout; j++)
            add_unique(writes, nwrites, n->hout[j]);
    }
}

/* ---- Printing ---- */

static const char *const *buf_names(const ir_prog *p)
{
    return p->bnames;
}

static void print_buf(const ir_prog *p, int b, FILE *f)
{
    static const char *const kinds[] = {"input", "param", "computed"};
    const ir_buf *B = &p->bufs[b];
    char ty[256];
    gr_ttype_str(&B->type, ty, sizeof ty);
    fprintf(f, "buffer %s: %s %s", B->name, ty, kinds[B->kind]);
    if (B->nparts) {
        for (int i = 0; i < B->nparts; i++)
            fprintf(f, "%s%s", i ? ", " : " cat(", p->bufs[B->parts[i]].name);
        fputc(')', f);
    } else if (B->kind == IR_BUF_PARAM) {
        fprintf(f, " \"%s\"", B->param_key);
    }
    if (B->output)
        fputs(" output", f);
    if (p->lastuse_done) {
        if (B->internal)
            fputs(" internal", f);
        else if (B->last_use >= 0)
            fprintf(f, " last_use=%s", p->kernels[p->order[B->last_use]].name);
    }
    fputc('\n', f);
}

static void print_ops(const ir_prog *p, const int *ops, int nops, FILE *f)
{
    for (int i = 0; i < nops; i++)
        fprintf(f, "%s%s (line %d)", i ? ", " : "", p->src[ops[i]].op, p->src[ops[i]].line);
}

/* A loop node's loops, store index and body. */
static void print_loops(const ir_prog *p, const ir_node *n, const char *const *vn, const char *const *bn, FILE *f)
{
    if (n->kind == IR_REDUCTION)
        fprintf(f, " %s", ir_reduce_names[n->rop]);
    fputs(" [", f);
    for (int v = 0; v < n->nvars; v++) {
        const char *sep = v == 0 ? "" : (n->kind == IR_REDUCTION && v == n->nvars - n->nred) ? " | " : ", ";
        fprintf(f, "%s%s=%lld", sep, vn[v], (long long)n->ranges[v]);
    }
    fprintf(f, "] %s[", p->bufs[n->out].name);
    ir_idx_print(&n->store, n->nvars, vn, f);
    fputs("] = ", f);
    if (n->kind == IR_MATMUL) {
        fputs("reduce_sum[k](", f);
        ir_index a = n->aidx, b = n->bidx;
        fprintf(f, "load(%s, ", bn[n->a]);
        ir_idx_print(&a, n->nvars, vn, f);
        fprintf(f, ") * load(%s, ", bn[n->b]);
        ir_idx_print(&b, n->nvars, vn, f);
        fputs("))", f);
    } else if (n->kind == IR_REDUCTION) {
        fprintf(f, "reduce_%s[", ir_reduce_names[n->rop]);
        for (int v = n->nvars - n->nred; v < n->nvars; v++)
            fprintf(f, "%s%s", v > n->nvars - n->nred ? ", " : "", vn[v]);
        fputs("](", f);
        ir_expr_print(&p->A, n->body, vn, bn, f);
        fputc(')', f);
    } else {
        ir_expr_print(&p->A, n->body, vn, bn, f);
    }
}

void ir_print_node(const ir_prog *p, int id, FILE *f)
{
    const ir_node *n = &p->nodes[id];
    const char *const *vn = ir_node_var_names(n);
    const char *const *bn = buf_names(p);
    fprintf(f, "node %s: %s", p->bufs[n->out].name, ir_node_kind_names[n->kind]);
    if (n->kind == IR_HOST) { /* its source op on its input buffers */
        fprintf(f, " %s = %s(", p->bufs[n->out].name, p->src[n->ops[0]].op);
        for (int i = 0; i < n->nhin; i++)
            fprintf(f, "%s%s", i ? ", " : "", bn[n->hin[i]]);
        fputc(')', f);
    } else {
        print_loops(p, n, vn, bn, f);
    }
    fputs("  # ", f);
    print_ops(p, n->ops, n->nops, f);
    if (p->deps_done) {
        fputs(n->nops ? "; reads " : "reads ", f);
        for (int r = 0; r < n->nreads; r++) {
            fprintf(f, "%s%s[", r ? ", " : "", bn[n->reads[r].buf]);
            if (n->reads[r].star)
                fputc('*', f);
            else
                ir_idx_print(&n->reads[r].idx, n->nvars, vn, f);
            fputc(']', f);
        }
        if (!n->nreads)
            fputs("nothing", f);
    }
    fputc('\n', f);
}

void ir_print_kernel(const ir_prog *p, int k, FILE *f)
{
    const ir_kernel *K = &p->kernels[k];
    if (K->name)
        fprintf(f, "kernel %s: %s ", K->name, ir_node_kind_names[K->kind]);
    else
        fprintf(f, "kernel #%d: %s ", k, ir_node_kind_names[K->kind]);
    ir_sig_print(&K->sig, f);
    fputs(" nodes", f);
    for (int i = 0; i < K->nnodes; i++)
        fprintf(f, "%s %s", i ? "," : "", p->bufs[p->nodes[K->nodes[i]].out].name);
    fputc('\n', f);
    for (int i = 0; i < K->nnodes; i++) {
        const ir_node *n = &p->nodes[K->nodes[i]];
        fputs("  ", f);
        ir_print_node(p, K->nodes[i], f);
        if (n->epi >= 0 && !ir_buf_is_internal(p, n->out)) {
            const ir_node *mm = &p->nodes[K->nodes[0]];
            const char *const *vn = ir_node_var_names(mm);
            fprintf(f, "  epilogue %s[", p->bufs[n->out].name);
            ir_idx_print(&n->epi_store, mm->nvars, vn, f);
            fputs("] = ", f);
            ir_expr_print(&p->A, n->epi, vn, buf_names(p), f);
            fputc('\n', f);
        }
    }
}

/* The decompose pass's core graph (p->dg), in the graph format. */
void ir_print_dgraph(const ir_prog *p, FILE *f)
{
    const gr_graph *d = p->dg;
    char ty[256];
    for (int i = 0; i < d->ninputs; i++) {
        gr_ttype_str(&d->values[d->inputs[i]].type, ty, sizeof ty);
        fprintf(f, "input %%%s: %s\n", d->values[d->inputs[i]].name, ty);
    }
    for (int i = 0; i < d->nparams; i++) {
        const gr_value *v = &d->values[d->params[i]];
        gr_ttype_str(&v->type, ty, sizeof ty);
        fprintf(f, "param %%%s: %s = \"%s\"\n", v->name, ty, v->param_key ? v->param_key : "");
    }
    for (int n = 0; n < d->nnodes; n++) {
        const gr_node *nd = &d->nodes[n];
        const ir_srcop *s = &p->src[p->dfrom[n]];
        gr_ttype_str(&d->values[nd->out].type, ty, sizeof ty);
        fprintf(f, "%%%s: %s = %s(", d->values[nd->out].name, ty, nd->op);
        for (int i = 0; i < nd->nargs; i++) {
            if (i)
                fputs(", ", f);
            if (nd->args[i].key) /* keyword arguments as the graph format has them: the dump reads back */
                fprintf(f, "%s=", nd->args[i].key);
            gr_arg_print(d, &nd->args[i], f);
        }
        if (strcmp(s->op, nd->op))
            fprintf(f, ")  # line %d: %s\n", s->line, s->op);
        else
            fprintf(f, ")  # line %d\n", s->line);
    }
    fputs("output ", f);
    for (int i = 0; i < d->noutputs; i++)
        fprintf(f, "%s%%%s", i ? ", " : "", d->values[d->outputs[i]].name);
    fputc('\n', f);
}

void ir_print(const ir_prog *p, FILE *f)
{
    fprintf(f, "# %s after %s\n", p->gname, p->stage);
    if (!strcmp(p->stage, "decompose")) {
        ir_print_dgraph(p, f);
        return;
    }
    for (int b = 0; b < p->nbufs; b++)
        if (!p->bufs[b].dead)
            print_buf(p, b, f);
    for (int o = 0; o < p->noutputs; o++) {
        char ty[256];
        gr_ttype_str(&p->outputs[o].type, ty, sizeof ty);
        fprintf(f, "output %s: %s = %s\n", p->outputs[o].name, ty, p->bufs[p->outputs[o].buf].name);
    }
    if (!p->nkernels || !strcmp(p->stage, "deps") || !strcmp(p->stage, "dce")) {
        for (int n = 0; n < p->nnodes; n++)
            if (!p->nodes[n].dead)
                ir_print_node(p, n, f);
        return;
    }
    if (p->order) {
        for (int i = 0; i < p->norder; i++)
            ir_print_kernel(p, p->order[i], f);
        return;
    }
    for (int k = 0; k < p->nkernels; k++)
        if (!p->kernels[k].dead)
            ir_print_kernel(p, k, f);
}
