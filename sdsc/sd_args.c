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

/* First used core's start: the symbol bundle.mlir binds (-1, -2, ...). */
static int64_t symbol(const sd_kernel *k, const sd_tensor *t)
{
    for (int c = 0; c < SD_MAX_CORES; c++)
        if (k->core_used[c])
            return t->start[c];
    return 0;
}

static int by_symbol(const void *x, const void *y, void *bp)
{
    const sd_bundle *b = bp;
    const sd_arg *a = x, *c = y;
    if (a->input != c->input)
        return c->input - a->input;
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

void sd_find_args(sd_bundle *b)
{
    for (int ki = 0; ki < b->nk; ki++) {
        sd_kernel *k = &b->k[ki];
        for (int ti = 0; k->parsed && ti < k->nt; ti++) {
            sd_tensor *t = &k->t[ti];
            if (t->lx || b->nargs == SD_MAX_ARGS)
                continue;
            sd_arg *a = &b->args[b->nargs++];
            a->kernel = ki;
            a->tensor = ti;
            a->input = !sd_written(k, ti);
            int host[SD_MAX_DIMS], r = sd_host_dims(t, host);
            a->spec.dtype = t->f32 ? ISA_HT_F32 : ISA_HT_F16;
            a->spec.rank = r > 0 && r <= ISA_MAX_RANK ? r : 0;
            for (int i = 0; i < a->spec.rank; i++)
                a->spec.shape[i] = sd_host_extent(k, t, host[i]);
        }
    }
    sort_args(b);
    for (int i = 0; i < b->nargs; i++) {
        snprintf(b->args[i].name, sizeof b->args[i].name, "arg%d", i);
        b->k[b->args[i].kernel].t[b->args[i].tensor].arg = i;
        b->nin += b->args[i].input;
    }
}
