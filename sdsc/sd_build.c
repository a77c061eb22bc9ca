/* sd_build.c: a checked bundle translated into one program: the kernel
 * arguments as DRAM tensors (the specs given, or the SDSC's own), every
 * core's stream (each kernel on the cores the SDSC gives it, a bar between
 * kernels, sd_emit.c), and the graph text that checks it (sd_graph.c). */
#include "sd_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the translation runs: the kernel's op (sd_emit.c: data stages
 * smaller than a slice for elementwise ops), its reference (sd_graph.c),
 * every tensor in the generic layout. */
static int supported(sd_ctx *x, const sd_kernel *k)
{
    if (k->unsupported[0])
        return isa_errf(x->err, x->errlen, "%s: not supported yet", k->unsupported);
    if (sd_emit_supported(k, x->err, x->errlen) || sd_graph_supported(k, x->err, x->errlen))
        return -1;
    for (int i = 0; i < k->nt; i++) {
        int host[SD_MAX_DIMS];
        if (sd_host_dims(&k->t[i], host) < 0 || k->t[i].nlayout > 5)
            return isa_errf(x->err, x->errlen,
                            "%s: %s: its layout is not the default one spyre launch allocates (or of rank over 5)",
                            k->file, k->t[i].name);
    }
    return 0;
}

/* The specs (n given, else the SDSC's own) against the arguments' own;
 * the program's tensors. */
static int add_args(sd_ctx *x, int n)
{
    const sd_bundle *b = x->b;
    if (n && n != b->nargs)
        return isa_errf(x->err, x->errlen, "the kernels take %d inputs and %d outputs, but %d tensor specs are given",
                        b->nin, b->nargs - b->nin, n);
    uint64_t align = x->cfg->dram_align;
    for (int i = 0; i < b->nargs; i++) {
        const sd_spec *own = &b->args[i].spec, *s = &x->specs[i];
        char want[128], got[128];
        sd_spec_format(own, want, sizeof want);
        sd_spec_format(s, got, sizeof got);
        if (s->rank != own->rank || memcmp(s->shape, own->shape, sizeof s->shape[0] * (size_t)s->rank))
            return isa_errf(x->err, x->errlen, "%s %d (%s): the kernels expect %s, got %s",
                            b->args[i].input ? "input" : "output", b->args[i].input ? i : i - b->nin, b->args[i].name,
                            want, got);
        const sd_tensor *t = &b->k[b->args[i].kernel].t[b->args[i].tensor];
        uint64_t off = (x->p->dram_bytes + align - 1) / align * align;
        int ti = isa_program_add_tensor(x->p, b->args[i].name, b->args[i].input ? ISA_ROLE_INPUT : ISA_ROLE_OUTPUT,
                                        s->dtype, t->f32 ? ISA_T_F32 : ISA_T_DL16, s->rank, s->shape, off);
        x->p->tensors[ti].order = sd_device_order(t);
    }
    if (x->p->dram_bytes > x->cfg->dram_bytes)
        return isa_errf(x->err, x->errlen, "the arguments need %llu bytes of DRAM, more than %s has",
                        (unsigned long long)x->p->dram_bytes, x->cfg->name);
    return 0;
}

/* Every core's stream: each kernel on the cores it uses, a bar between
 * kernels on every core (the next kernel may read what another core
 * wrote), halt. */
static int emit_all(sd_ctx *x)
{
    for (int core = 0; core < x->cfg->cores; core++) {
        cc_emit e;
        cc_emit_begin(&e, x->cfg, x->p, core, x->err, x->errlen);
        for (int ki = 0; ki < x->b->nk; ki++) {
            if (ki)
                cc_emit_bar(&e);
            if (x->b->k[ki].core_used[core])
                sd_emit_kernel(x, &e, &x->b->k[ki], core);
        }
        cc_emit_halt(&e);
        if (cc_emit_failed(&e))
            return -1;
    }
    return 0;
}

/* LX above every tensor the SDSC places there, for the staging buffers. */
static uint64_t fixed_lx_top(const sd_bundle *b, uint64_t stick)
{
    uint64_t top = 0;
    for (int ki = 0; ki < b->nk; ki++)
        for (int i = 0; i < b->k[ki].nt; i++) {
            const sd_tensor *t = &b->k[ki].t[i];
            int64_t bytes = sd_word(t);
            for (int j = 0; j < t->ncoord; j++)
                bytes = sd_mul(bytes, sd_coord_positions(&t->coord[j]));
            for (int c = 0; t->lx && c < SD_MAX_CORES; c++)
                if (b->k[ki].core_used[c] && (uint64_t)(t->start[c] + bytes) > top)
                    top = (uint64_t)(t->start[c] + bytes);
        }
    return (top + stick - 1) / stick * stick;
}

isa_program *sd_build(const sd_bundle *b, const chip_config *cfg, const sd_spec *specs, int n, char *err,
                      size_t errlen)
{
    if (b->nproblems) {
        isa_errf(err, errlen, "%s: the SDSC has %d problems (spyre check lists them)", b->dir, b->nproblems);
        return NULL;
    }
    if (b->unsupported[0]) {
        isa_errf(err, errlen, "%s: %s: not supported yet", b->dir, b->unsupported);
        return NULL;
    }
    sd_ctx x = {.b = b, .cfg = cfg, .err = err, .errlen = errlen};
    sd_spec own[SD_MAX_ARGS];
    for (int i = 0; i < b->nargs; i++)
        own[i] = n && i < n ? specs[i] : b->args[i].spec;
    x.specs = own;
    x.lx_base = fixed_lx_top(b, cfg->stick_bytes);
    for (int ki = 0; ki < b->nk; ki++)
        if (supported(&x, &b->k[ki]))
            return NULL;
    x.value = calloc(SD_MAX_KERNELS, sizeof *x.value);
    x.p = x.value ? cc_program_new(cfg, NULL, NULL, err, errlen) : NULL;
    int rc = x.p ? add_args(&x, n) : isa_errf(err, errlen, "out of memory");
    if (!rc)
        rc = sd_graph_write(&x) || emit_all(&x);
    free(x.value);
    if (rc) {
        isa_program_free(x.p);
        free(x.graph);
        return NULL;
    }
    x.p->graph = x.graph;
    return x.p;
}
