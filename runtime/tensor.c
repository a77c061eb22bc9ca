/* tensor.c: a loaded program's tensor table: a tensor by name, its host
 * copy (an input's or a weight's infinities as the device takes them), and
 * where it lives in device DRAM while its region is there (an ISA_TF_LX
 * input never: it is written into its core's LX at each launch). */
#include "rt_internal.h"
#include "cc.h"

int64_t rt_tensor_elems(const isa_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->shape[i];
    return n;
}

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *enum_name(const char *const *names, int n, int v)
{
    return v >= 0 && v < n ? names[v] : "?";
}

void rt_dims_str(int rank, const int64_t *shape, char *buf, size_t len)
{
    size_t o = 0;
    o += (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < rank && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (o < len)
        snprintf(buf + o, len - o, ")");
}

int rt_find_tensor(const rt_program *prog, const char *name, char *err, size_t errlen)
{
    int i = isa_program_find_tensor(prog->p, name);
    if (i >= 0)
        return i;
    char list[512];
    size_t o = 0;
    list[0] = 0;
    for (size_t j = 0; j < prog->p->ntensors && o < sizeof list; j++) {
        const isa_tensor *t = &prog->p->tensors[j];
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s (%s)", j ? ", " : "", t->name,
                              enum_name(isa_role_names, ISA_ROLE_SCRATCH + 1, (int)t->role));
    }
    isa_errf(err, errlen, "no tensor %s in the program; tensors: %s", name, prog->p->ntensors ? list : "none");
    return -1;
}

/* Is a softmax row that adds mask row v (len elements, stride inner) NaN
 * in PyTorch?  Masked whole (every element -inf), or holding a +inf (the
 * row max is inf, and inf - inf is NaN) or a NaN. */
static int nan_row(const float *v, int64_t len, int64_t inner)
{
    int whole = 1;
    for (int64_t k = 0; k < len; k++) {
        float x = v[k * inner];
        if (isnan(x) || (isinf(x) && x > 0))
            return 1;
        whole = whole && isinf(x);
    }
    return whole;
}

/* A softmax mask's rows (ISA_TF_NANROW): each row along host dim axis
 * (-1: each element) whose softmax PyTorch makes NaN (nan_row) becomes
 * NaN, so the device's softmax is NaN there too at no cycle, where the
 * stand-in -2^30 would make a row masked whole uniform and +2^30 one-hot. */
static void nan_rows(const isa_tensor *t, float *v)
{
    int64_t len = t->nan_axis < 0 ? 1 : t->shape[t->nan_axis], inner = 1, n = rt_tensor_elems(t);
    for (int d = t->nan_axis + 1; t->nan_axis >= 0 && d < t->rank; d++)
        inner *= t->shape[d];
    for (int64_t r = 0; len > 0 && r < n / len; r++) {
        int64_t first = r / inner * inner * len + r % inner; /* row r's first element */
        int nan = nan_row(v + first, len, inner);
        for (int64_t k = 0; k < len && nan; k++)
            v[first + k * inner] = NAN;
    }
}

/* Values v of input or weight t as the device takes them (rt_keep_host). */
static void infinity_rule(const isa_tensor *t, float *v)
{
    if (t->role != ISA_ROLE_INPUT && t->role != ISA_ROLE_WEIGHT)
        return;
    if (t->flags & ISA_TF_NANROW)
        nan_rows(t, v);
    /* DL16 has no infinity (its NINF reads back as NaN): an infinite
     * value, such as the -inf of an additive causal mask, becomes +-2^30,
     * the stand-in the compiler uses for infinite constants, and a finite
     * one beyond DL16's range (torch.finfo(f32).min) +-2^29 (isa_dl16_standin) */
    int64_t n = rt_tensor_elems(t);
    for (int64_t i = 0; t->dev_dtype == ISA_T_DL16 && i < n; i++)
        v[i] = isa_dl16_standin(v[i]);
}

/* user[i]: host[i] with the user's finite values DL16 cannot hold in
 * place of their stand-in +-2^29, where it has any. */
static int keep_user(rt_program *prog, int i, const float *values, size_t n)
{
    const float *h = prog->host[i];
    for (size_t k = 0; k < n; k++) {
        if (h[k] == values[k] || !isa_dl16_beyond(values[k]))
            continue;
        if (!prog->user[i]) {
            if (!(prog->user[i] = malloc(n * sizeof *h)))
                return -1;
            memcpy(prog->user[i], h, n * sizeof *h);
        }
        prog->user[i][k] = values[k];
    }
    return 0;
}

int rt_keep_host(rt_program *prog, int i, const float *values, char *err, size_t errlen)
{
    size_t n = (size_t)rt_tensor_elems(&prog->p->tensors[i]);
    float *h = malloc(n ? n * sizeof *h : 1);
    if (!h)
        return isa_errf(err, errlen, "out of host memory");
    if (n)
        memcpy(h, values, n * sizeof *h);
    infinity_rule(&prog->p->tensors[i], h);
    free(prog->host[i]);
    prog->host[i] = h;
    rt_host_changed(prog, i);
    return keep_user(prog, i, values, n) ? isa_errf(err, errlen, "out of host memory") : 0;
}

const float *rt_user_values(const rt_program *prog, int i)
{
    return prog->user[i] ? prog->user[i] : prog->host[i];
}

/* Input v's range in tensor i of program p: declared, or DL16's exact
 * integers for an undeclared one the device keeps in DL16 (a kernel
 * comparing 3001 would read 3000; the compiler relies on this check). */
static rt_range input_range(const isa_program *p, const gr_value *v, int i)
{
    if (v->ranged)
        return (rt_range){.line = v->line, .declared = 1, .lo = v->lo, .hi = v->hi};
    int integer = v->type.dtype == GR_I64 || v->type.dtype == GR_I32;
    if (integer && p->tensors[i].dev_dtype == ISA_T_DL16)
        return (rt_range){.line = v->line, .lo = -ISA_DL16_EXACT_INT, .hi = ISA_DL16_EXACT_INT};
    return (rt_range){0};
}

/* Ops reading an index tensor into a dim of another: argument positions
 * of the tensor indexed (OUT: the op's result, as bincount's counts of
 * the exported length: a larger value would have grown it in PyTorch, a
 * negative one raises), the dim (-1: dim 0; FLAT: its elements
 * flattened, as take's; LIST: the indices are a list whose tensors index
 * self's dims in order, a bool mask of rank k taking k of them, as
 * index.Tensor's) and the indices; wrap: a negative index counts from the
 * end, as Python's. */
enum { OUT = -1, LIST = -2, FLAT = -3 };
static const struct {
    const char *base;
    int self, dim, index, wrap;
} index_ops[] = {
    {"embedding", 0, -1, 1, 0},   {"index_select", 0, 1, 2, 0}, {"gather", 0, 1, 2, 0},
    {"scatter", 0, 1, 2, 0},      {"scatter_add", 0, 1, 2, 0},  {"scatter_reduce", 0, 1, 2, 0},
    {"index_copy", 0, 1, 2, 0},   {"index_add", 0, 1, 2, 0},    {"index", 0, LIST, 1, 1},
    {"index_put", 0, LIST, 1, 1}, {"take", 0, FLAT, 1, 1},      {"_embedding_bag", 0, -1, 1, 0},
    {"index_fill", 0, 1, 2, 1},   {"bincount", OUT, -1, 0, 0},
};

/* The lowest index reader b allows. */
static double least(const rt_reader *b) { return b->wrap ? -(double)b->size : 0; }

const char *rt_bounds_text(char *buf, size_t len, int dim, int64_t size)
{
    if (dim < 0)
        snprintf(buf, len, "the %lld elements flattened", (long long)size);
    else
        snprintf(buf, len, "dim %d of size %lld", dim, (long long)size);
    return buf;
}

/* Index value iv, if an input of p, read by b: into range's bounds where
 * b allows fewer values. */
static void index_input(const isa_program *p, const gr_value *iv, const rt_reader *b, rt_range *range)
{
    char tn[GR_TENSOR_NAME_MAX];
    gr_tensor_name(iv->name, tn);
    int i = isa_program_find_tensor(p, tn);
    if (iv->kind != GR_VAL_INPUT || iv->type.dtype == GR_BOOL || i < 0)
        return;
    rt_range *r = &range[i];
    if (!r->low.size || least(b) > least(&r->low))
        r->low = *b;
    if (!r->high.size || b->size < r->high.size)
        r->high = *b;
}

/* Index value v of g, read by node `node` as b says: a check of
 * prog->icheck if it is computed and not proven; -1 out of host memory. */
static int index_computed(rt_program *prog, const gr_graph *g, int v, int node, const rt_reader *b)
{
    const gr_value *iv = &g->values[v];
    if (iv->kind != GR_VAL_NODE || iv->type.dtype == GR_BOOL || !cc_index_unproven(g, v, b->size, b->wrap))
        return 0;
    rt_icheck *c = realloc(prog->icheck, (size_t)(prog->nicheck + 1) * sizeof *c);
    if (!c)
        return -1;
    prog->icheck = c;
    c[prog->nicheck++] = (rt_icheck){.value = v, .node = node, .size = b->size, .wrap = b->wrap, .dim = b->dim};
    return 0;
}

/* Node k of g, an index op: the dim each index tensor it reads indexes,
 * into the range of an input's tensor (its bounds) or the checks
 * of a computed one; -1 out of host memory. */
static int index_use(rt_program *prog, const gr_graph *g, int node)
{
    const gr_node *n = &g->nodes[node];
    for (size_t k = 0; k < sizeof index_ops / sizeof *index_ops; k++) {
        const int s = index_ops[k].self, d = index_ops[k].dim, x = index_ops[k].index;
        if (strcmp(n->base, index_ops[k].base) || n->nargs <= x || (s != OUT && n->args[s].kind != GR_ARG_VALUE) ||
            (d >= 0 && n->args[d].kind != GR_ARG_INT))
            continue;
        const gr_ttype *st = &g->values[s == OUT ? n->out : n->args[s].value].type;
        const gr_arg *a = &n->args[x];
        const int list = d == LIST && a->kind == GR_ARG_LIST;
        int64_t dim = list || d < 0 ? 0 : n->args[d].i;
        dim += dim < 0 ? st->rank : 0;
        for (int j = 0; j < (list ? a->nitems : 1); j++) {
            const gr_arg *it = list ? &a->items[j] : a;
            const gr_value *iv = it->kind == GR_ARG_VALUE ? &g->values[it->value] : NULL;
            rt_reader b = {.size = d == FLAT ? gr_ttype_numel(st) : dim >= 0 && dim < st->rank ? st->shape[dim] : 0,
                           .wrap = index_ops[k].wrap, .dim = d == FLAT ? -1 : (int)dim};
            snprintf(b.use, sizeof b.use, "%s", n->op);
            if (iv && b.size > 0) {
                index_input(prog->p, iv, &b, prog->range);
                if (index_computed(prog, g, it->value, node, &b))
                    return -1;
            }
            dim += iv && iv->type.dtype == GR_BOOL ? iv->type.rank : 1;
        }
    }
    return 0;
}

int rt_ranges_init(rt_program *prog, char *err, size_t errlen)
{
    const isa_program *p = prog->p;
    if (!p->graph)
        return 0;
    /* a generated program's graph text may be a sketch the parser refuses:
     * it declares no range the compiler relied on */
    char msg[1024];
    gr_graph *g = gr_graph_parse(p->graph, "<program graph>", msg, sizeof msg);
    if (!g)
        return 0;
    prog->range = calloc(p->ntensors ? p->ntensors : 1, sizeof *prog->range);
    for (int k = 0; prog->range && k < g->ninputs + g->nparams; k++) {
        const gr_value *v = &g->values[k < g->ninputs ? g->inputs[k] : g->params[k - g->ninputs]];
        char tn[GR_TENSOR_NAME_MAX];
        gr_tensor_name(v->name, tn);
        int i = isa_program_find_tensor(p, tn);
        if (i >= 0 && (p->tensors[i].role == ISA_ROLE_INPUT || (v->ranged && p->tensors[i].role == ISA_ROLE_WEIGHT)))
            prog->range[i] = input_range(p, v, i);
    }
    int full = !prog->range;
    for (int k = 0; !full && k < g->nnodes; k++)
        full = index_use(prog, g, k);
    if (prog->nicheck)
        prog->igraph = g;
    else
        gr_graph_free(g);
    return full ? isa_errf(err, errlen, "out of host memory") : 0;
}

/* A wrapped parameter's row numbers within [-rows, rows), as PyTorch
 * requires: the device would read x mod rows (transfer.c, pack_wrapped). */
static int wrap_check(const rt_program *prog, int *bad, char *err, size_t errlen)
{
    for (size_t i = 0; i < prog->p->ntensors; i++) {
        const isa_tensor *t = &prog->p->tensors[i];
        const float *h = prog->host[i];
        const double rows = (double)t->wrap_rows;
        for (int64_t k = 0; (t->flags & ISA_TF_WRAP) && h && k < rt_tensor_elems(t); k++)
            if (!(h[k] >= -rows && h[k] < rows)) {
                *bad = (int)i;
                return isa_errf(err, errlen, "parameter %%%s: the value %.0f at element %lld is out of bounds for "
                                "a table of %lld rows", t->name, h[k], (long long)k, (long long)t->wrap_rows);
            }
    }
    return 0;
}

int rt_ranges_check(const rt_program *prog, int *bad, char *err, size_t errlen)
{
    if (wrap_check(prog, bad, err, errlen))
        return -1;
    for (size_t i = 0; prog->range && i < prog->p->ntensors; i++) {
        const rt_range *r = &prog->range[i];
        const float *h = prog->host[i];
        int64_t n = rt_tensor_elems(&prog->p->tensors[i]);
        for (int64_t k = 0; r->high.size && h && k < n; k++) {
            const float x = truncf(h[k]); /* as integers */
            if (x >= least(&r->low) && x < (double)r->high.size)
                continue;
            const rt_reader *b = x >= least(&r->low) ? &r->high : &r->low;
            char where[96];
            *bad = (int)i;
            return isa_errf(err, errlen, "input %%%s: the value %.0f at element %lld is out of bounds for %s (%s reads "
                            "it)", prog->p->tensors[i].name, h[k], (long long)k,
                            rt_bounds_text(where, sizeof where, b->dim, b->size), b->use);
        }
        for (int64_t k = 0; r->line && h && k < n; k++) {
            if (h[k] >= (double)r->lo && h[k] <= (double)r->hi)
                continue;
            *bad = (int)i;
            if (r->declared)
                return isa_errf(err, errlen, "%s %%%s: the value %.0f at element %lld is outside its range=[%lld, %lld]",
                                prog->p->tensors[i].role == ISA_ROLE_WEIGHT ? "parameter" : "input",
                                prog->p->tensors[i].name, h[k], (long long)k, (long long)r->lo, (long long)r->hi);
            return isa_errf(err, errlen, "input %%%s: the value %.0f at element %lld is past the integers the device "
                            "holds exactly (DL16: up to %d); declare its range=[LO, HI] (docs/graph-format.md)",
                            prog->p->tensors[i].name, h[k], (long long)k, ISA_DL16_EXACT_INT);
        }
    }
    return 0;
}

void rt_host_changed(rt_program *prog, int i)
{
    free(prog->user[i]);
    prog->user[i] = NULL;
    free(prog->packed[i].bytes);
    prog->packed[i] = (rt_packed){0};
}

int rt_value_tensor(const isa_program *p, const char *name)
{
    char tn[GR_TENSOR_NAME_MAX];
    gr_tensor_name(name, tn);
    return isa_program_find_tensor(p, tn);
}

const float *rt_host_tensor(const rt_program *prog, const char *name, int64_t *count)
{
    int i = isa_program_find_tensor(prog->p, name);
    if (i < 0)
        return NULL;
    if (count)
        *count = rt_tensor_elems(&prog->p->tensors[i]);
    return prog->host[i];
}

int rt_in_weights(const isa_program *p, const isa_tensor *t)
{
    return p->weight_bytes && !(t->flags & ISA_TF_LX) && t->dram_off < p->weight_bytes;
}

int rt_region_present(const rt_program *prog, const isa_tensor *t)
{
    if (t->flags & ISA_TF_LX)
        return 0; /* its host copy goes into its core's LX at each launch (rt_place_lx) */
    return rt_in_weights(prog->p, t) ? prog->resident : prog->staged;
}

uint64_t rt_tensor_dev_addr(const rt_program *prog, const isa_tensor *t)
{
    if (rt_in_weights(prog->p, t))
        return prog->wbase + t->dram_off;
    return prog->abase + (t->dram_off - prog->p->weight_bytes);
}

int rt_tensor_addr(const rt_program *prog, const char *name, uint64_t *addr, char *err, size_t errlen)
{
    int i = rt_find_tensor(prog, name, err, errlen);
    if (i < 0)
        return -1;
    const isa_tensor *t = &prog->p->tensors[i];
    if (t->flags & ISA_TF_LX)
        return isa_errf(err, errlen, "tensor %s is in the LX of core %d, not in device DRAM", name, t->lx_core);
    if (!rt_region_present(prog, t))
        return isa_errf(err, errlen, "tensor %s is not in device DRAM now: %s", name,
                        rt_in_weights(prog->p, t) ? "its program's weights are evicted"
                                                  : "activations are allocated only from load to the first launch and during launches");
    *addr = rt_tensor_dev_addr(prog, t);
    return 0;
}
