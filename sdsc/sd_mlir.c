/* sd_mlir.c: a kernel directory's bundle.mlir (torch-spyre's sdscbundle
 * dialect) read with the mlir/ parser: the kernels it executes, in its
 * order, and what each kernel's DRAM symbols are bound to (a function
 * argument plus a byte offset: each core's slice), cross-checked against
 * the sdsc_N.json files.  A disagreement is one problem line naming
 * bundle.mlir:LINE. */
#include "sd_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mlir.h"

#define SD_MLIR "bundle.mlir"
/* A bundle of a thousand kernels on 32 cores is some MB of text. */
#define SD_MLIR_MAX (64ull << 20)

/* An SSA index value: a function argument's base plus off (arg >= 0), or
 * the constant off (arg < 0). */
typedef struct {
    const char *name;
    int arg;
    int64_t off;
    int line; /* of its definition */
} sd_mval;

typedef struct {
    sd_bundle *b;
    const ml_module *m;
    int64_t stick;
    const char *fargs[SD_MAX_ARGS];
    int nfargs;
    sd_mval *v;
    int nv, cap;
    int order[SD_MAX_KERNELS]; /* kernel indices in execution order */
    int norder;
} sd_mctx;

static const sd_mval *lookup(const sd_mctx *x, const char *name)
{
    for (int i = x->nv - 1; i >= 0; i--)
        if (!strcmp(x->v[i].name, name))
            return &x->v[i];
    return NULL;
}

static void define(sd_mctx *x, const char *name, int arg, int64_t off, int line)
{
    if (x->nv == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 256;
        x->v = realloc(x->v, (size_t)x->cap * sizeof *x->v);
        if (!x->v)
            abort(); /* as isa_stream_push */
    }
    x->v[x->nv++] = (sd_mval){name, arg, off, line};
}

/* What the translation cannot run yet (an op outside the subset, a
 * kernel run twice): not a violation, so `spyre check` passes it and
 * sd_build refuses it; the rest of the program is not read. */
static void unsupported(sd_mctx *x, const ml_op *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void unsupported(sd_mctx *x, const ml_op *op, const char *fmt, ...)
{
    sd_bundle *b = x->b;
    int n = snprintf(b->unsupported, sizeof b->unsupported, "%s:%d: ", SD_MLIR, op->line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->unsupported + n, sizeof b->unsupported - (size_t)n, fmt, ap);
    va_end(ap);
}

/* The function's arguments: the VALUE items of its argument group. */
static void read_fargs(sd_mctx *x, const ml_op *fn)
{
    for (int i = 0; i < fn->n; i++) {
        const ml_item *g = &fn->items[i];
        if (g->kind != ML_I_GROUP)
            continue;
        for (int j = 0; j < g->n; j++)
            if (g->items[j].kind == ML_I_VALUE && x->nfargs < SD_MAX_ARGS)
                x->fargs[x->nfargs++] = g->items[j].s;
        return;
    }
}

/* The VALUE operands of an op's tail at depth 0, or of its first group. */
static int operands(const ml_op *op, const ml_item **out, int max)
{
    int n = 0;
    for (int i = 0; i < op->n; i++) {
        const ml_item *it = &op->items[i];
        if (it->kind == ML_I_VALUE && n < max)
            out[n++] = it;
        if (it->kind == ML_I_GROUP) {
            for (int j = 0; j < it->n; j++)
                if (it->items[j].kind == ML_I_VALUE && n < max)
                    out[n++] = &it->items[j];
            break;
        }
    }
    return n;
}

/* %r = sdscbundle.input_arg_extract value from %arg_N_base_addr: argument N. */
static void op_extract(sd_mctx *x, const ml_op *op)
{
    const ml_item *in[1];
    int a = -1;
    if (operands(op, in, 1) == 1)
        for (int i = 0; i < x->nfargs; i++)
            if (!strcmp(x->fargs[i], in[0]->s))
                a = i;
    if (a < 0 || op->nres != 1) {
        sd_problem_at(x->b, SD_MLIR, op->line, "input_arg_extract does not read one of the function's arguments");
        return;
    }
    define(x, op->res[0], a, 0, op->line);
}

static void op_constant(sd_mctx *x, const ml_op *op)
{
    const ml_attr *a = NULL;
    for (int i = 0; i < op->n && !a; i++)
        if (op->items[i].kind == ML_I_ATTR && op->items[i].attr->kind == ML_A_INT)
            a = op->items[i].attr;
    if (!a || op->nres != 1) {
        sd_problem_at(x->b, SD_MLIR, op->line, "arith.constant without an integer value");
        return;
    }
    define(x, op->res[0], -1, a->i, op->line);
}

/* arith.addi: an argument plus a constant (a slice's address), or two constants. */
static void op_addi(sd_mctx *x, const ml_op *op)
{
    const ml_item *in[2];
    const sd_mval *l = NULL, *r = NULL;
    if (operands(op, in, 2) == 2) {
        l = lookup(x, in[0]->s);
        r = lookup(x, in[1]->s);
    }
    if (!l || !r || op->nres != 1 || (l->arg >= 0 && r->arg >= 0)) {
        sd_problem_at(x->b, SD_MLIR, op->line, "arith.addi of values that are not an argument and a constant");
        return;
    }
    define(x, op->res[0], l->arg >= 0 ? l->arg : r->arg, sd_add(l->off, r->off), op->line);
}

static int kernel_of(const sd_bundle *b, const char *file)
{
    for (int i = 0; i < b->nk; i++)
        if (!strcmp(b->k[i].file, file))
            return i;
    return -1;
}

/* Bind the DRAM slices of k that are symbol sym (on every core that has
 * it: cores sharing a slice share its symbol) to v; the number bound. */
static int bind_symbol(sd_mctx *x, const ml_op *op, sd_kernel *k, int64_t sym, const sd_mval *v)
{
    int n = 0;
    for (int i = 0; i < k->nt; i++) {
        sd_tensor *t = &k->t[i];
        for (int c = 0; !t->lx && c < SD_MAX_CORES; c++) {
            if (!k->core_used[c] || t->start[c] != sym)
                continue;
            if (t->bound_arg >= 0 && t->bound_arg != v->arg) {
                sd_problem_at(x->b, SD_MLIR, op->line, "%s of %s is bound to two arguments (%%%s and %%%s)", t->name,
                              k->file, x->fargs[t->bound_arg], x->fargs[v->arg]);
                return -1;
            }
            t->bound_arg = v->arg;
            t->bound_off[c] = v->off + 1; /* 0: not bound */
            t->bound_line[c] = v->line;
            n++;
        }
    }
    return n;
}

/* Bind symbol_ids[i] to operand i. */
static void bind_symbols(sd_mctx *x, const ml_op *op, sd_kernel *k, const ml_attr *ids)
{
    const ml_item *in[SD_MAX_TENSORS * SD_MAX_CORES];
    int n = operands(op, in, SD_MAX_TENSORS * SD_MAX_CORES);
    if (ids->n != n) {
        sd_problem_at(x->b, SD_MLIR, op->line, "%d operands but %d symbol_ids", n, ids->n);
        return;
    }
    for (int i = 0; i < n; i++) {
        const sd_mval *v = lookup(x, in[i]->s);
        if (!v || v->arg < 0)
            sd_problem_at(x->b, SD_MLIR, op->line, "operand %%%s is not a function argument plus an offset", in[i]->s);
        else if (ids->items[i]->kind != ML_A_INT || !bind_symbol(x, op, k, ids->items[i]->i, v))
            sd_problem_at(x->b, SD_MLIR, op->line, "symbol_ids[%d] names no DRAM slice of %s", i, k->file);
    }
}

/* sdscbundle.sdsc_execute (operands) {sdsc_filename = "...", symbol_ids = [...]} */
static void op_execute(sd_mctx *x, const ml_op *op)
{
    const ml_attr *f = ml_op_attr(x->m, op, "sdsc_filename"), *ids = ml_op_attr(x->m, op, "symbol_ids");
    int ki = f && f->kind == ML_A_STRING ? kernel_of(x->b, f->s) : -1;
    if (!f || f->kind != ML_A_STRING || !ids || ids->kind != ML_A_ARRAY) {
        sd_problem_at(x->b, SD_MLIR, op->line, "sdsc_execute needs sdsc_filename and symbol_ids");
        return;
    }
    if (ki < 0) {
        sd_problem_at(x->b, SD_MLIR, op->line, "sdsc_execute of %s, which the directory does not hold", f->s);
        return;
    }
    sd_kernel *k = &x->b->k[ki];
    if (k->run_line) {
        unsupported(x, op, "%s runs a second time (first at line %d)", k->file, k->run_line);
        return;
    }
    k->run_line = op->line;
    x->order[x->norder++] = ki;
    if (k->parsed)
        bind_symbols(x, op, k, ids);
}

static const struct {
    const char *name;
    void (*read)(sd_mctx *, const ml_op *);
} sd_mops[] = {
    {"sdscbundle.input_arg_extract", op_extract},
    {"arith.constant", op_constant},
    {"arith.addi", op_addi},
    {"sdscbundle.sdsc_execute", op_execute},
};

static void read_body(sd_mctx *x, const ml_region *body)
{
    for (int bi = 0; body && bi < body->nblocks && !x->b->unsupported[0]; bi++)
        for (int i = 0; i < body->blocks[bi].nops && !x->b->unsupported[0]; i++) {
            const ml_op *op = &body->blocks[bi].ops[i];
            size_t r = 0;
            while (r < sizeof sd_mops / sizeof sd_mops[0] && strcmp(op->name, sd_mops[r].name))
                r++;
            if (r < sizeof sd_mops / sizeof sd_mops[0])
                sd_mops[r].read(x, op);
            else if (strcmp(op->name, "return") && strcmp(op->name, "func.return"))
                unsupported(x, op, "%s: not an op of the sdscbundle programs read (docs/torch-spyre.md)", op->name);
        }
}

/* The module's func.func, or NULL. */
static const ml_op *find_func(const ml_module *m)
{
    for (int bi = 0; bi < m->top.nblocks; bi++)
        for (int i = 0; i < m->top.blocks[bi].nops; i++) {
            const ml_op *op = &m->top.blocks[bi].ops[i];
            int from = 0;
            const ml_region *r = strcmp(op->name, "module") ? NULL : ml_op_region(op, &from);
            if (!strcmp(op->name, "func.func"))
                return op;
            for (int j = 0; r && j < r->nblocks; j++)
                for (int q = 0; q < r->blocks[j].nops; q++)
                    if (!strcmp(r->blocks[j].ops[q].name, "func.func"))
                        return &r->blocks[j].ops[q];
        }
    return NULL;
}

/* Every DRAM slice of every kernel bound, at the offset its layout gives. */
static void check_offsets(sd_mctx *x, sd_kernel *k)
{
    for (int i = 0; i < k->nt; i++) {
        const sd_tensor *t = &k->t[i];
        for (int c = 0; !t->lx && c < SD_MAX_CORES; c++) {
            if (!k->core_used[c])
                continue;
            if (!t->bound_off[c]) {
                sd_problem_at(x->b, SD_MLIR, k->run_line, "binds no address to %s of %s on core %d (symbol %lld)",
                              t->name, k->file, c, (long long)t->start[c]);
                continue;
            }
            int64_t idx[SD_MAX_DIMS] = {0};
            for (int d = 0; d < k->ndims; d++) {
                const sd_coord *co = sd_tensor_coord(t, d);
                idx[d] = co && !sd_reduced(k, t, d) ? sd_mul(co->core.alpha, k->slice[c][d]) : 0;
            }
            int64_t want = sd_layout_offset(k, t, idx, x->stick), got = t->bound_off[c] - 1;
            if (want >= 0 && want != got)
                sd_problem_at(x->b, SD_MLIR, t->bound_line[c],
                              "binds %s of %s on core %d at %%%s + %lld, but its layout (layoutDimOrder_) puts that "
                              "core's slice at + %lld",
                              t->name, k->file, c, x->fargs[t->bound_arg], (long long)got, (long long)want);
        }
    }
}

/* The kernels in the bundle's order; a file it never executes is a problem. */
static void reorder(sd_mctx *x)
{
    sd_bundle *b = x->b;
    if (b->unsupported[0]) /* the program was not read to its end */
        return;
    for (int i = 0; i < b->nk; i++)
        if (!b->k[i].run_line)
            sd_problem_at(b, SD_MLIR, 1, "never executes %s, which the directory holds", b->k[i].file);
    if (x->norder != b->nk)
        return;
    sd_kernel *k = malloc((size_t)b->nk * sizeof *k);
    if (!k)
        abort();
    for (int i = 0; i < b->nk; i++)
        k[i] = b->k[x->order[i]];
    memcpy(b->k, k, (size_t)b->nk * sizeof *k);
    free(k);
}

void sd_read_mlir(sd_bundle *b, int64_t stick_bytes)
{
    char *path = isa_path_join(b->dir, SD_MLIR), err[1024];
    struct stat st;
    if (stat(path, &st)) { /* some kernel directories hold a single SDSC without one */
        free(path);
        return;
    }
    char *text = isa_text_read(path, SD_MLIR_MAX, err, sizeof err);
    free(path);
    ml_module *m = text ? ml_parse(text, strlen(text), SD_MLIR, err, sizeof err) : NULL;
    free(text);
    if (!m) {
        sd_problem_at(b, NULL, 0, "%s", err); /* "bundle.mlir:LINE:COL: message" */
        return;
    }
    sd_mctx x = {.b = b, .m = m, .stick = stick_bytes};
    const ml_op *fn = find_func(m);
    int from = 0;
    if (!fn)
        sd_problem_at(b, SD_MLIR, 1, "no func.func: a bundle is one function of sdsc_execute ops");
    else {
        read_fargs(&x, fn);
        read_body(&x, ml_op_region(fn, &from));
        for (int i = 0; i < b->nk && !b->unsupported[0]; i++)
            if (b->k[i].run_line && b->k[i].parsed)
                check_offsets(&x, &b->k[i]);
        reorder(&x);
    }
    free(x.v);
    ml_free(m);
}
