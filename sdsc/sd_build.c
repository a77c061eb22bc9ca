/* sd_build.c: a checked bundle translated into one program: each kernel's
 * compute op on the unit the SDSC names, over each core's work slice as
 * the SDSC divides the work, DRAM tensors staged through LX in data stages
 * of the SDSC's size, LX tensors at the SDSC's LX addresses, a bar between
 * kernels; and the graph text the reference executor runs to check it. */
#include "sd_internal.h"
#include "codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The SDSC op functions the translation runs elementwise, and the
 * instruction each becomes. */
static const struct {
    const char *func, *unit;
    int op, arity;
} sd_ops[] = {
    {"add", "sfp", ISA_OP_SFP_ADD, 2},     {"sub", "sfp", ISA_OP_SFP_SUB, 2},
    {"mul", "sfp", ISA_OP_SFP_MUL, 2},     {"realdiv", "sfp", ISA_OP_SFP_DIV, 2},
    {"relufwd", "sfp", ISA_OP_SFP_RELU, 1}, {"exp", "sfp", ISA_OP_SFP_EXP, 1},
    {"sigmoid", "sfp", ISA_OP_SFP_SIGM, 1}, {"gelufwd", "sfp", ISA_OP_SFP_GELU, 1},
    {"silu", "sfp", ISA_OP_SFP_SILU, 1},   {"identity", "sfp", ISA_OP_SFP_MOV, 1},
};

/* The ATen ops the reference runs for a kernel's debug_handle_.aten_op:
 * each takes the compute op's inputs, positionally.  An identity kernel
 * names no ATen op: its reference is a copy. */
static const char *const sd_aten[] = {
    "aten.add.Tensor",     "aten.sub.Tensor",       "aten.mul.Tensor",       "aten.div.Tensor",
    "aten.relu.default",   "aten.exp.default",      "aten.sigmoid.default",  "aten.gelu.default",
    "aten.silu.default",   "aten.clone.default",
};

typedef struct {
    const sd_bundle *b;
    const chip_config *cfg;
    isa_program *p;
    const sd_spec *specs; /* per argument */
    char *graph;
    size_t glen, gcap;
    char value[SD_MAX_KERNELS][SD_MAX_TENSORS][SD_NAME]; /* the graph value of each tensor */
    uint64_t lx_base;     /* LX above every fixed LX tensor: the staging buffers */
    char *err;
    size_t errlen;
} sd_ctx;

static int op_row(const sd_op *op)
{
    for (size_t i = 0; i < sizeof sd_ops / sizeof sd_ops[0]; i++)
        if (!strcmp(op->func, sd_ops[i].func) && !strcmp(op->unit, sd_ops[i].unit) && op->nin == sd_ops[i].arity &&
            op->nout == 1)
            return (int)i;
    return -1;
}

static void gputs(sd_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void gputs(sd_ctx *x, const char *fmt, ...)
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

static const char *sd_gr_dtype(isa_host_dtype d) { return d == ISA_HT_F16 ? "f16" : d == ISA_HT_BF16 ? "bf16" : "f32"; }

/* "[512, 1024]" of tensor t in host order. */
static void shape_text(const sd_kernel *k, const sd_tensor *t, char *buf, size_t len)
{
    int host[SD_MAX_DIMS], r = sd_host_dims(t, host);
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < r && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)sd_host_extent(k, t, host[i]));
    if (n < len)
        snprintf(buf + n, len - n, "]");
}

/* What the translation can run: one elementwise op of the table per
 * kernel, its reference op known, every tensor in the generic layout and
 * covering its slice (no reduced dim), data stages of a whole slice. */
static int supported(sd_ctx *x, int ki)
{
    const sd_kernel *k = &x->b->k[ki];
    if (k->unsupported[0])
        return isa_errf(x->err, x->errlen, "%s: not supported yet", k->unsupported);
    if (k->nops != 1 || op_row(&k->ops[0]) < 0)
        return isa_errf(x->err, x->errlen, "%s: computeOp_ %s on %s (%d inputs): not supported yet (docs/torch-spyre.md)",
                        k->file, k->ops[0].func, k->ops[0].unit, k->ops[0].nin);
    const char *aten = k->aten[0] ? k->aten : "aten.clone.default";
    int known = 0;
    for (size_t i = 0; i < sizeof sd_aten / sizeof sd_aten[0]; i++)
        known |= !strcmp(aten, sd_aten[i]);
    if (!known)
        return isa_errf(x->err, x->errlen, "%s: debug_handle_.aten_op %s: no reference for it yet", k->file, aten);
    for (int d = 0; d < k->ndims; d++)
        if (k->dims[d].stage != k->dims[d].n / k->dims[d].slices)
            return isa_errf(x->err, x->errlen, "%s: dimension %s: a data stage smaller than the slice: not supported yet",
                            k->file, k->dims[d].name);
    for (int i = 0; i < k->nt; i++) {
        int host[SD_MAX_DIMS];
        const sd_tensor *t = &k->t[i];
        if (sd_host_dims(t, host) < 0 || t->nlayout > 5)
            return isa_errf(x->err, x->errlen,
                            "%s: %s: its layout is not the default one spyre launch allocates (or of rank over 5)",
                            k->file, t->name);
        for (int j = 0; j < t->ncoord; j++)
            if (sd_coord_extent(&t->coord[j]) != k->dims[t->coord[j].dim].n / k->dims[t->coord[j].dim].slices)
                return isa_errf(x->err, x->errlen, "%s: %s: a reduced or broadcast dimension: not supported yet", k->file,
                                t->name);
    }
    return 0;
}

/* One core's block of a tensor in host order: the device layout (isa.h)
 * is (sticks of the last dim, the other dims in order, lanes). */
typedef struct {
    int r;
    int64_t full[SD_MAX_DIMS], start[SD_MAX_DIMS], len[SD_MAX_DIMS];
    int64_t lanes, stick;
} sd_geo;

static void block_geo(const sd_ctx *x, const sd_kernel *k, const sd_tensor *t, int core, sd_geo *g)
{
    int host[SD_MAX_DIMS];
    g->r = sd_host_dims(t, host);
    g->stick = x->cfg->stick_bytes;
    g->lanes = g->stick / sd_word(t);
    for (int i = 0; i < g->r; i++) {
        const sd_dim *dm = &k->dims[host[i]];
        g->full[i] = sd_host_extent(k, t, host[i]);
        g->len[i] = dm->n / dm->slices;
        g->start[i] = k->slice[core][host[i]] * g->len[i];
    }
}

/* Sticks of the block, and of its rows (every dim but the last). */
static int64_t geo_groups(const sd_geo *g) { return (g->len[g->r - 1] + g->lanes - 1) / g->lanes; }
static int64_t geo_rows(const sd_geo *g, int use_full)
{
    int64_t n = 1;
    for (int i = 0; i < g->r - 1; i++)
        n *= use_full ? g->full[i] : g->len[i];
    return n;
}
static int64_t geo_bytes(const sd_geo *g) { return geo_groups(g) * geo_rows(g, 0) * g->stick; }

/* The DMA between the block in DRAM (tensor at dram_off) and its compact
 * copy in LX; *dram gets the DRAM address of its first stick. */
static int geo_dma(const sd_geo *g, uint64_t dram_off, cc_dma_shape *sh, int64_t *dram)
{
    int64_t dstr[SD_MAX_DIMS], lstr[SD_MAX_DIMS], ds = g->stick, ls = g->stick;
    for (int i = g->r - 2; i >= 0; i--) {
        dstr[i] = ds;
        lstr[i] = ls;
        ds *= g->full[i];
        ls *= g->len[i];
    }
    if (g->start[g->r - 1] % g->lanes)
        return -1;
    *dram = (int64_t)dram_off + g->start[g->r - 1] / g->lanes * ds;
    for (int i = 0; i < g->r - 1; i++)
        *dram += g->start[i] * dstr[i];
    memset(sh, 0, sizeof *sh);
    sh->run = g->r >= 2 ? g->len[g->r - 2] : geo_groups(g);
    sh->levels = 0;
    for (int i = g->r - 3; i >= 0; i--) { /* the outer dims, innermost first */
        sh->n[sh->levels] = g->len[i];
        sh->ds[sh->levels] = lstr[i]; /* LX is the destination of a load */
        sh->as[sh->levels++] = dstr[i];
    }
    if (g->r >= 2) { /* the stick groups */
        sh->n[sh->levels] = geo_groups(g);
        sh->ds[sh->levels] = ls;
        sh->as[sh->levels++] = ds;
    }
    if (!sh->levels) {
        sh->n[0] = 1;
        sh->levels = 1;
    }
    return 0;
}

/* A store's shape: the load's with source and destination strides swapped. */
static void swap_dirs(cc_dma_shape *sh)
{
    for (int l = 0; l < sh->levels; l++) {
        int64_t t = sh->ds[l];
        sh->ds[l] = sh->as[l];
        sh->as[l] = t;
    }
}

/* The SFP op over every stick of the blocks (at most 65535 per instruction). */
static void emit_op(cc_emit *e, const sd_op *op, int row, int f32, int64_t d, const int64_t *a, int64_t sticks,
                    int64_t stick)
{
    for (int64_t done = 0; done < sticks;) {
        int64_t n = sticks - done < 65535 ? sticks - done : 65535;
        cc_sfp_args sa = {0};
        sa.op = sd_ops[row].op;
        sa.t = f32 ? ISA_T_F32 : ISA_T_DL16;
        sa.bm = ISA_BM_VEC;
        sa.d = cc_abs(d + done * stick);
        sa.a = cc_abs(a[0] + done * stick);
        sa.b = op->nin > 1 ? cc_abs(a[1] + done * stick) : cc_abs(0);
        sa.n0 = n;
        sa.n1 = 1;
        sa.ds0 = sa.as0 = stick;
        sa.bs0 = op->nin > 1 ? stick : 0;
        cc_emit_sfp(e, &sa);
        done += n;
    }
}

/* Where tensor i of kernel k is in this core's LX: its SDSC address, or a
 * staging buffer loaded from DRAM (the load is emitted). */
static int64_t operand(sd_ctx *x, cc_emit *e, const sd_kernel *k, int i, int core, int load)
{
    const sd_tensor *t = &k->t[i];
    if (t->lx)
        return t->start[core];
    sd_geo g;
    block_geo(x, k, t, core, &g);
    int64_t lx = cc_lx_alloc(e, geo_bytes(&g), t->name), dram;
    cc_dma_shape sh;
    if (lx < 0 || geo_dma(&g, x->p->tensors[t->arg].dram_off, &sh, &dram)) {
        cc_emit_error(e, "%s: %s: a block that does not start on a stick", k->file, t->name);
        return -1;
    }
    if (load)
        cc_emit_dma(e, ISA_OP_DMA_LD, cc_abs(lx), cc_abs(dram), &sh);
    return lx;
}

/* One core's part of kernel k: load, compute, store. */
static void emit_kernel(sd_ctx *x, cc_emit *e, const sd_kernel *k, int core)
{
    const sd_op *op = &k->ops[0];
    int row = op_row(op);
    e->lx_top = x->lx_base;
    e->ntokens = 0;
    cc_kernel_begin(e, k->top);
    int64_t a[2], loads = 0;
    for (int j = 0; j < op->nin; j++) {
        a[j] = operand(x, e, k, op->in[j], core, 1);
        loads += !k->t[op->in[j]].lx;
    }
    const sd_tensor *out = &k->t[op->out[0]];
    int64_t d = operand(x, e, k, op->out[0], core, 0);
    if (loads) {
        int tok = cc_tok_alloc(e, "loads done");
        cc_emit_sig(e, ISA_U_DMAI, tok);
        cc_emit_wait(e, ISA_U_SFP0, tok);
    }
    sd_geo g;
    block_geo(x, k, out, core, &g);
    emit_op(e, op, row, op->f32, d, a, geo_groups(&g) * geo_rows(&g, 0), g.stick);
    if (!out->lx) {
        int tok = cc_tok_alloc(e, "result done");
        cc_emit_sig(e, ISA_U_SFP0, tok);
        cc_emit_wait(e, ISA_U_DMAO, tok);
        cc_dma_shape sh;
        int64_t dram;
        geo_dma(&g, x->p->tensors[out->arg].dram_off, &sh, &dram);
        swap_dirs(&sh);
        cc_emit_dma(e, ISA_OP_DMA_ST, cc_abs(dram), cc_abs(d), &sh);
    }
    cc_kernel_end(e);
}

/* The graph value of every tensor: an argument's name, an LX tensor's
 * "kK_NAME" where kernel K writes it (readers take their producer's), and
 * the kernel's line of graph text. */
static int graph_kernel(sd_ctx *x, int ki)
{
    const sd_bundle *b = x->b;
    const sd_kernel *k = &b->k[ki];
    int first = 0;
    while (first < SD_MAX_CORES && !k->core_used[first])
        first++;
    for (int i = 0; i < k->nt; i++) {
        const sd_tensor *t = &k->t[i];
        if (!t->lx) {
            snprintf(x->value[ki][i], SD_NAME, "%s", b->args[t->arg].name);
            continue;
        }
        snprintf(x->value[ki][i], SD_NAME, "k%d_%s", ki, t->name);
        for (int j = ki - 1; j >= 0 && t != &k->t[k->ops[0].out[0]]; j--) {
            const sd_kernel *pk = &b->k[j];
            const sd_tensor *pt = &pk->t[pk->ops[0].out[0]];
            if (pt->lx && pt->start[first] == t->start[first]) {
                snprintf(x->value[ki][i], SD_NAME, "%s", x->value[j][pk->ops[0].out[0]]);
                break;
            }
        }
    }
    const sd_op *op = &k->ops[0];
    const sd_tensor *out = &k->t[op->out[0]];
    char shape[256];
    shape_text(k, out, shape, sizeof shape);
    isa_host_dtype dt = out->lx ? (out->f32 ? ISA_HT_F32 : ISA_HT_F16) : x->specs[out->arg].dtype;
    gputs(x, "%%%s: %s%s = %s(", x->value[ki][op->out[0]], sd_gr_dtype(dt), shape,
          k->aten[0] ? k->aten : "aten.clone.default");
    for (int j = 0; j < op->nin; j++)
        gputs(x, "%s%%%s", j ? ", " : "", x->value[ki][op->in[j]]);
    gputs(x, ")  # %s\n", k->file);
    return 0;
}

/* The specs given against the arguments' own; the program's tensors. */
static int add_args(sd_ctx *x, const sd_spec *given, int n)
{
    const sd_bundle *b = x->b;
    if (n && n != b->nargs)
        return isa_errf(x->err, x->errlen, "the kernels take %d inputs and %d outputs, but %d tensor specs are given",
                        b->nin, b->nargs - b->nin, n);
    uint64_t align = x->cfg->dram_align ? x->cfg->dram_align : 128;
    for (int i = 0; i < b->nargs; i++) {
        const sd_spec *own = &b->args[i].spec, *s = n ? &given[i] : own;
        char want[128], got[128];
        sd_spec_format(own, want, sizeof want);
        sd_spec_format(s, got, sizeof got);
        if (s->rank != own->rank || memcmp(s->shape, own->shape, sizeof s->shape[0] * (size_t)s->rank))
            return isa_errf(x->err, x->errlen, "%s %d (%s): the kernels expect %s, got %s", b->args[i].input ? "input" : "output",
                            b->args[i].input ? i : i - b->nin, b->args[i].name, want, got);
        const sd_tensor *t = &b->k[b->args[i].kernel].t[b->args[i].tensor];
        uint64_t off = (x->p->dram_bytes + align - 1) / align * align;
        isa_program_add_tensor(x->p, b->args[i].name, b->args[i].input ? ISA_ROLE_INPUT : ISA_ROLE_OUTPUT, s->dtype,
                               t->f32 ? ISA_T_F32 : ISA_T_DL16, s->rank, s->shape, off);
    }
    if (x->p->dram_bytes > x->cfg->dram_bytes)
        return isa_errf(x->err, x->errlen, "the arguments need %llu bytes of DRAM, more than %s has",
                        (unsigned long long)x->p->dram_bytes, x->cfg->name);
    return 0;
}

/* The graph text: inputs, one line per kernel, outputs. */
static int write_graph(sd_ctx *x, const sd_spec *specs)
{
    const sd_bundle *b = x->b;
    gputs(x, "# %s: torch-spyre SDSC kernels; each line runs its kernel's debug_handle_.aten_op\ngraph sdsc\n", b->dir);
    for (int i = 0; i < b->nin; i++) {
        char s[128];
        sd_spec_format(&specs[i], s, sizeof s);
        gputs(x, "input %%%s: %s[", b->args[i].name, sd_gr_dtype(specs[i].dtype));
        for (int d = 0; d < specs[i].rank; d++)
            gputs(x, "%s%lld", d ? ", " : "", (long long)specs[i].shape[d]);
        gputs(x, "]\n");
    }
    for (int ki = 0; ki < b->nk; ki++)
        if (graph_kernel(x, ki))
            return -1;
    gputs(x, "output ");
    for (int i = b->nin; i < b->nargs; i++)
        gputs(x, "%s%%%s", i > b->nin ? ", " : "", b->args[i].name);
    gputs(x, "\n");
    return 0;
}

/* Every core's stream: each kernel on the cores it uses, a bar between
 * kernels on every core, halt. */
static int emit_all(sd_ctx *x)
{
    for (int core = 0; core < x->cfg->cores; core++) {
        cc_emit e;
        cc_emit_begin(&e, x->cfg, x->p, core, x->err, x->errlen);
        for (int ki = 0; ki < x->b->nk; ki++) {
            if (ki)
                cc_emit_bar(&e);
            if (x->b->k[ki].core_used[core])
                emit_kernel(x, &e, &x->b->k[ki], core);
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
                bytes *= sd_coord_positions(&t->coord[j]);
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
    sd_ctx x = {.b = b, .cfg = cfg, .err = err, .errlen = errlen};
    sd_spec own[SD_MAX_ARGS];
    for (int i = 0; i < b->nargs; i++)
        own[i] = n ? specs[i] : b->args[i].spec;
    x.specs = own;
    x.lx_base = fixed_lx_top(b, cfg->stick_bytes);
    for (int ki = 0; ki < b->nk; ki++)
        if (supported(&x, ki))
            return NULL;
    x.p = cc_program_new(cfg, NULL, err, errlen);
    if (!x.p)
        return NULL;
    int rc = add_args(&x, specs, n);
    if (!rc)
        rc = write_graph(&x, own) || emit_all(&x);
    if (rc) {
        isa_program_free(x.p);
        free(x.graph);
        return NULL;
    }
    x.p->graph = x.graph;
    return x.p;
}
