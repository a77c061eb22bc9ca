/* sd_args.c: the kernel arguments of a bundle (its DRAM tensors, in the
 * order of their symbols: what bundle.mlir's arguments are) and the host
 * shape of each, read back from torch-spyre's default ("generic stick")
 * layout, the one spyre launch allocates. */
#include "sd_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The host dims of a tensor in the generic stick layout: that layout
 * stores host dims (d1, ..., d[r-2], sticks of d[r-1], d0, lanes), so
 * layoutDimOrder_ (innermost first) is d0, d[r-1], d[r-2], ..., d1.
 * host[] gets the kernel dim of each host dim; -1 when the layout is not
 * the generic one. */
int sd_host_dims(const sd_tensor *t, int host[SD_MAX_DIMS])
{
    int r = t->nlayout;
    if (r < 1 || t->stick < 0 || (r >= 2 && t->layout[1] != t->stick) || (r == 1 && t->layout[0] != t->stick))
        return -1;
    host[0] = t->layout[0];
    if (r >= 2) {
        host[r - 1] = t->stick;
        for (int i = 1; i < r - 1; i++)
            host[i] = t->layout[r - i];
    }
    return r;
}

/* The extent of host dim kernel-dim d: 1 for a reduced dim, else N_. */
int64_t sd_host_extent(const sd_kernel *k, const sd_tensor *t, int d)
{
    return sd_reduced(k, t, d) ? 1 : k->dims[d].n;
}

/* The layoutDimOrder_ (innermost first) reversed, each kernel dim as its
 * host position: the device order of the tensor (isa.h, order). */
uint32_t sd_device_order(const sd_tensor *t)
{
    int host[SD_MAX_DIMS], r = sd_host_dims(t, host), dims[ISA_MAX_RANK];
    if (r < 1 || r > ISA_MAX_RANK)
        return 0;
    for (int p = 0; p < r; p++)
        for (int i = 0; i < r; i++)
            if (host[i] == t->layout[r - 1 - p])
                dims[p] = i;
    return isa_order_make(dims, r, r - 1);
}

/* The device's own layout arithmetic (isa_layout_offset) on the tensor
 * the program gives the argument: the host shape, stick last, the order. */
int64_t sd_layout_offset(const sd_kernel *k, const sd_tensor *t, const int64_t *idx, int64_t stick_bytes)
{
    int host[SD_MAX_DIMS], r = sd_host_dims(t, host);
    if (r < 1 || r > ISA_MAX_RANK)
        return -1;
    isa_tensor T = {.rank = r, .stick_dim = r - 1, .dev_dtype = t->f32 ? ISA_T_F32 : ISA_T_DL16};
    int64_t at[ISA_MAX_RANK];
    T.order = sd_device_order(t);
    for (int i = 0; i < r; i++) {
        T.shape[i] = sd_host_extent(k, t, host[i]);
        at[i] = idx[host[i]];
        if (at[i] < 0 || at[i] >= T.shape[i]) /* a slice outside the tensor: the coverage rule's to report */
            return -1;
    }
    return (int64_t)isa_layout_offset(&T, (uint32_t)stick_bytes, at);
}

/* First used core's start: the symbol bundle.mlir binds (-1, -2, ...). */
static int64_t symbol(const sd_kernel *k, const sd_tensor *t)
{
    for (int c = 0; c < SD_MAX_CORES; c++)
        if (k->core_used[c])
            return t->start[c];
    return 0;
}

/* Inputs first; then bundle.mlir's argument order, or without it the
 * order of the symbols. */
static int by_symbol(const void *x, const void *y, void *bp)
{
    const sd_bundle *b = bp;
    const sd_arg *a = x, *c = y;
    if (a->input != c->input)
        return c->input - a->input;
    if (a->bound >= 0 && c->bound >= 0)
        return a->bound - c->bound;
    int64_t sa = symbol(&b->k[a->kernel], &b->k[a->kernel].t[a->tensor]);
    int64_t sc = symbol(&b->k[c->kernel], &b->k[c->kernel].t[c->tensor]);
    if (sa < 0 && sc < 0 && sa != sc)
        return sa > sc ? -1 : 1;
    return a->kernel != c->kernel ? a->kernel - c->kernel : a->tensor - c->tensor;
}

/* qsort has no context argument in C11: a small insertion sort. */
static void sort_args(sd_bundle *b)
{
    for (int i = 1; i < b->nargs; i++)
        for (int j = i; j > 0 && by_symbol(&b->args[j - 1], &b->args[j], b) > 0; j--) {
            sd_arg t = b->args[j];
            b->args[j] = b->args[j - 1];
            b->args[j - 1] = t;
        }
}

static void arg_spec(const sd_kernel *k, const sd_tensor *t, sd_spec *s)
{
    int host[SD_MAX_DIMS], r = sd_host_dims(t, host);
    memset(s, 0, sizeof *s);
    s->dtype = t->f32 ? ISA_HT_F32 : ISA_HT_F16;
    s->rank = r > 0 && r <= ISA_MAX_RANK ? r : 0;
    for (int i = 0; i < s->rank; i++)
        s->shape[i] = sd_host_extent(k, t, host[i]);
}

/* The argument bundle.mlir binds to function argument `bound`, or NULL. */
static sd_arg *bound_arg(sd_bundle *b, int bound)
{
    for (int i = 0; bound >= 0 && i < b->nargs; i++)
        if (b->args[i].bound == bound)
            return &b->args[i];
    return NULL;
}

/* One argument per DRAM tensor; tensors that bundle.mlir binds to one
 * function argument (a tensor one kernel writes and a later one reads) are
 * one argument, an input only when no kernel writes it. */
void sd_find_args(sd_bundle *b)
{
    for (int ki = 0; ki < b->nk; ki++) {
        sd_kernel *k = &b->k[ki];
        for (int ti = 0; k->parsed && ti < k->nt; ti++) {
            sd_tensor *t = &k->t[ti];
            sd_arg *a = bound_arg(b, t->bound_arg);
            sd_spec s;
            if (t->lx || (!a && b->nargs == SD_MAX_ARGS))
                continue;
            arg_spec(k, t, &s);
            if (a) {
                if (memcmp(&s, &a->spec, sizeof s))
                    sd_problem(b, k, t->name, "bundle.mlir binds it to the argument of %s of %s, of another shape",
                               b->k[a->kernel].t[a->tensor].name, b->k[a->kernel].file);
                a->input &= !sd_written(k, ti);
                continue;
            }
            a = &b->args[b->nargs++];
            a->kernel = ki;
            a->tensor = ti;
            a->bound = t->bound_arg;
            a->input = !sd_written(k, ti);
            a->spec = s;
        }
    }
    sort_args(b);
    for (int i = 0; i < b->nargs; i++) {
        snprintf(b->args[i].name, sizeof b->args[i].name, "arg%d", i);
        b->nin += b->args[i].input;
    }
    for (int ki = 0; ki < b->nk; ki++)
        for (int ti = 0; b->k[ki].parsed && ti < b->k[ki].nt; ti++) {
            sd_tensor *t = &b->k[ki].t[ti];
            for (int i = 0; !t->lx && i < b->nargs; i++)
                if (t->bound_arg >= 0 ? b->args[i].bound == t->bound_arg
                                      : b->args[i].kernel == ki && b->args[i].tensor == ti)
                    t->arg = i;
        }
}
