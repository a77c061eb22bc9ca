/* sd_graph.c: the graph text that checks a bundle: each kernel (or run of
 * kernels that torch-spyre split one ATen op into, such as softmax's six)
 * becomes the ATen op its debug_handle_ names, on the values the kernels
 * read, so the reference executor computes what the kernels should. */
#include "sd_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sd_gputs(sd_ctx *x, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t n = strlen(line);
    if (x->glen + n + 1 > x->gcap) {
        x->gcap = (x->glen + n + 1) * 2;
        x->graph = realloc(x->graph, x->gcap);
        if (!x->graph)
            abort(); /* as isa_stream_push */
    }
    memcpy(x->graph + x->glen, line, n + 1);
    x->glen += n;
}

/* A node's arguments after its inputs: none, or the reduced dim. */
typedef enum { SD_ARGS_NONE, SD_ARGS_MEAN, SD_ARGS_SOFTMAX } sd_args_kind;

/* The ATen ops the reference runs; `split` ops are the ones torch-spyre
 * splits into several kernels in a row (all naming the op). */
static const struct {
    const char *aten;
    int split;
    sd_args_kind args;
} sd_aten[] = {
    {"aten.add.Tensor", 0, SD_ARGS_NONE},      {"aten.sub.Tensor", 0, SD_ARGS_NONE},
    {"aten.mul.Tensor", 0, SD_ARGS_NONE},      {"aten.div.Tensor", 0, SD_ARGS_NONE},
    {"aten.relu.default", 0, SD_ARGS_NONE},    {"aten.exp.default", 0, SD_ARGS_NONE},
    {"aten.sigmoid.default", 0, SD_ARGS_NONE}, {"aten.gelu.default", 0, SD_ARGS_NONE},
    {"aten.silu.default", 0, SD_ARGS_NONE},    {"aten.clone.default", 0, SD_ARGS_NONE},
    {"aten.mm.default", 0, SD_ARGS_NONE},      {"aten.bmm.default", 0, SD_ARGS_NONE},
    {"aten.mean.dim", 0, SD_ARGS_MEAN},        {"aten._softmax.default", 1, SD_ARGS_SOFTMAX},
};

/* An identity kernel names no ATen op: its reference is a copy. */
static const char *aten_of(const sd_kernel *k) { return k->aten[0] ? k->aten : "aten.clone.default"; }

static int aten_row(const sd_kernel *k)
{
    for (size_t i = 0; i < sizeof sd_aten / sizeof sd_aten[0]; i++)
        if (!strcmp(aten_of(k), sd_aten[i].aten))
            return (int)i;
    return -1;
}

int sd_graph_supported(const sd_kernel *k, char *err, size_t errlen)
{
    if (aten_row(k) >= 0)
        return 0;
    return isa_errf(err, errlen, "%s: debug_handle_.aten_op %s: no reference for it yet", k->file, aten_of(k));
}

static const char *dtype_name(isa_host_dtype d) { return d == ISA_HT_F16 ? "f16" : d == ISA_HT_BF16 ? "bf16" : "f32"; }

/* Name every tensor: an argument's name, an LX tensor written by kernel
 * K "kK_NAME", an LX tensor read its producer's name. */
static void name_values(sd_ctx *x, int ki)
{
    const sd_kernel *k = &x->b->k[ki];
    int first = 0;
    while (first < SD_MAX_CORES - 1 && !k->core_used[first])
        first++;
    for (int i = 0; i < k->nt; i++) {
        const sd_tensor *t = &k->t[i];
        char *v = x->value[ki][i];
        if (!t->lx) {
            snprintf(v, SD_NAME, "%s", x->b->args[t->arg].name);
            continue;
        }
        snprintf(v, SD_NAME, "k%d_%s", ki, t->name);
        if (i == k->ops[0].out[0])
            continue;
        for (int j = ki - 1; j >= 0; j--) {
            const sd_kernel *pk = &x->b->k[j];
            const sd_tensor *pt = &pk->t[pk->ops[0].out[0]];
            if (pt->lx && pk->core_used[first] && pt->start[first] == t->start[first]) {
                snprintf(v, SD_NAME, "%s", x->value[j][pk->ops[0].out[0]]);
                break;
            }
        }
    }
}

/* The host position of the dim a run of kernels reduces, in the tensor
 * `in` of kernel ki0: -1 when none of them reduces. */
static int reduced_dim(const sd_ctx *x, int ki0, int ki1, const sd_tensor *in)
{
    int host[SD_MAX_DIMS], r = sd_host_dims(in, host);
    for (int ki = ki0; ki <= ki1; ki++) {
        const sd_kernel *k = &x->b->k[ki];
        const sd_tensor *o = &k->t[k->ops[0].out[0]];
        for (int d = 0; d < k->ndims; d++)
            if (sd_reduced(k, o, d))
                for (int i = 0; i < r; i++)
                    if (!strcmp(x->b->k[ki0].dims[host[i]].name, k->dims[d].name))
                        return i;
    }
    return -1;
}

/* "f16[512, 1024]" of tensor t of kernel k (an argument: its spec's dtype). */
static void type_text(const sd_ctx *x, const sd_kernel *k, const sd_tensor *t, char *buf, size_t len)
{
    int host[SD_MAX_DIMS], r = sd_host_dims(t, host);
    isa_host_dtype dt = t->lx ? (t->f32 ? ISA_HT_F32 : ISA_HT_F16) : x->specs[t->arg].dtype;
    size_t n = (size_t)snprintf(buf, len, "%s[", dtype_name(dt));
    for (int i = 0; i < r && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)sd_host_extent(k, t, host[i]));
    if (n < len)
        snprintf(buf + n, len - n, "]");
}

/* Kernels ki0..ki1 as one node: its inputs are the values they read that
 * none of them writes, its result the last one's. */
static void write_node(sd_ctx *x, int ki0, int ki1)
{
    const sd_kernel *last = &x->b->k[ki1];
    const sd_tensor *out = &last->t[last->ops[0].out[0]];
    char type[256];
    const char *ins[16];
    int nins = 0;
    const sd_tensor *first_in = NULL;
    for (int ki = ki0; ki <= ki1; ki++) {
        const sd_kernel *k = &x->b->k[ki];
        for (int j = 0; j < k->ops[0].nin; j++) {
            const char *v = x->value[ki][k->ops[0].in[j]];
            int dup = 0;
            for (int q = ki0; q <= ki1 && !dup; q++)
                dup = q < ki ? !strcmp(v, x->value[q][x->b->k[q].ops[0].out[0]]) : q == ki && k->ops[0].in[j] == k->ops[0].out[0];
            for (int q = 0; q < nins && !dup; q++)
                dup = !strcmp(v, ins[q]);
            if (!dup && nins < 16) {
                if (!nins)
                    first_in = &k->t[k->ops[0].in[j]];
                ins[nins++] = v;
            }
        }
    }
    type_text(x, last, out, type, sizeof type);
    int row = aten_row(&x->b->k[ki0]);
    sd_gputs(x, "%%%s: %s = %s(", x->value[ki1][last->ops[0].out[0]], type, sd_aten[row].aten);
    for (int q = 0; q < nins; q++)
        sd_gputs(x, "%s%%%s", q ? ", " : "", ins[q]);
    int dim = first_in ? reduced_dim(x, ki0, ki1, first_in) : -1;
    if (sd_aten[row].args == SD_ARGS_MEAN && first_in)
        sd_gputs(x, ", [%d], %s", dim, out->nlayout == first_in->nlayout ? "True" : "False");
    else if (sd_aten[row].args == SD_ARGS_SOFTMAX)
        sd_gputs(x, ", %d, False", dim);
    sd_gputs(x, ")  # %s..%s\n", x->b->k[ki0].file, last->file);
}

int sd_graph_write(sd_ctx *x)
{
    const sd_bundle *b = x->b;
    sd_gputs(x, "# %s: torch-spyre SDSC kernels, each checked by its debug_handle_.aten_op\ngraph sdsc\n", b->dir);
    for (int i = 0; i < b->nin; i++) {
        sd_gputs(x, "input %%%s: %s[", b->args[i].name, dtype_name(x->specs[i].dtype));
        for (int d = 0; d < x->specs[i].rank; d++)
            sd_gputs(x, "%s%lld", d ? ", " : "", (long long)x->specs[i].shape[d]);
        sd_gputs(x, "]\n");
    }
    for (int ki = 0; ki < b->nk; ki++)
        name_values(x, ki);
    for (int ki = 0; ki < b->nk;) {
        int end = ki, row = aten_row(&b->k[ki]);
        while (sd_aten[row].split && end + 1 < b->nk && !strcmp(aten_of(&b->k[end + 1]), aten_of(&b->k[ki])))
            end++;
        write_node(x, ki, end);
        ki = end + 1;
    }
    sd_gputs(x, "output ");
    for (int i = b->nin; i < b->nargs; i++)
        sd_gputs(x, "%s%%%s", i > b->nin ? ", " : "", b->args[i].name);
    sd_gputs(x, "\n");
    return 0;
}
