/* sd_emit.c: one core's part of an SDSC kernel: its DRAM operands staged
 * into LX (one data stage: the SDSC's stage is the core's whole slice),
 * the compute op on the unit the SDSC names, the result stored; LX
 * operands stay at their SDSC addresses.  One table row per op function. */
#include "sd_internal.h"

#include <stdio.h>
#include <string.h>

/* One core's block of a tensor in host order.  The device layout (isa.h)
 * is (sticks of the last dim, the other dims in order, lanes); the block's
 * LX copy is the same, compact. */
typedef struct {
    int r;
    int64_t full[SD_MAX_DIMS], start[SD_MAX_DIMS], len[SD_MAX_DIMS];
    int reduced[SD_MAX_DIMS];
    int kdim[SD_MAX_DIMS];
    int64_t lanes, stick;
    /* The LX copy's sticks in the DRAM layout's order (innermost first)
     * rather than ours: for elementwise ops, whose operands only need one
     * order among them, so that each DMA piece is a run of sticks. */
    int dram_order;
} sd_geo;

int sd_reduced(const sd_kernel *k, const sd_tensor *t, int d)
{
    const sd_coord *c = sd_tensor_coord(t, d);
    return c && sd_coord_extent(c) == 1 && k->dims[d].n / k->dims[d].slices > 1;
}

/* The block of tensor t one data stage of a core covers: stage[] gives
 * the stage's index along each kernel dim (all 0 when the stage is the
 * whole slice), the SDSC's stage size (dataStageParam_ ss_) its extent. */
static void block_geo(const sd_kernel *k, const sd_tensor *t, int core, const int *stage, int64_t stick, sd_geo *g)
{
    g->r = sd_host_dims(t, g->kdim);
    g->stick = stick;
    g->lanes = stick / sd_word(t);
    for (int i = 0; i < g->r; i++) {
        int d = g->kdim[i];
        const sd_dim *dm = &k->dims[d];
        g->reduced[i] = sd_reduced(k, t, d);
        g->full[i] = sd_host_extent(k, t, d);
        g->len[i] = g->reduced[i] ? 1 : dm->stage;
        g->start[i] = g->reduced[i] ? 0 : k->slice[core][d] * (dm->n / dm->slices) + stage[d] * dm->stage;
    }
}

static int64_t geo_groups(const sd_geo *g) { return (g->len[g->r - 1] + g->lanes - 1) / g->lanes; }
static int64_t geo_rows(const sd_geo *g)
{
    int64_t n = 1;
    for (int i = 0; i < g->r - 1; i++)
        n *= g->len[i];
    return n;
}
static int64_t geo_bytes(const sd_geo *g) { return geo_groups(g) * geo_rows(g) * g->stick; }

/* The DRAM byte stride of each host dim of T (the last, the stick dim: of
 * its sticks), read off the tensor's own layout (isa_layout_offset: the
 * SDSC's dim order when the tensor has one); 0 for a dim of one. */
static void dram_strides(const isa_tensor *T, const sd_geo *g, int64_t *dstr)
{
    int64_t idx[ISA_MAX_RANK] = {0};
    for (int i = 0; i < g->r; i++) {
        int64_t step = i == g->r - 1 ? g->lanes : 1;
        dstr[i] = 0;
        if (g->full[i] > step) {
            idx[i] = step;
            dstr[i] = (int64_t)isa_layout_offset(T, (uint32_t)g->stick, idx);
            idx[i] = 0;
        }
    }
}

/* The levels of a block's sticks in DRAM order: its levels of more than
 * one step, by DRAM stride, innermost first (a stable insertion sort). */
static int by_dram_stride(int m, int64_t *n, int64_t *as)
{
    int k = 0;
    for (int l = 0; l < m; l++)
        if (n[l] > 1) {
            int64_t nl = n[l], al = as[l];
            int j = k++;
            for (; j > 0 && as[j - 1] > al; j--) {
                n[j] = n[j - 1];
                as[j] = as[j - 1];
            }
            n[j] = nl, as[j] = al;
        }
    return k;
}

/* The load of the block from DRAM (tensor T) into its compact LX copy:
 * the block's sticks walked innermost first (the host dims before the
 * last, then the stick groups; or in DRAM order), a run of sticks where
 * DRAM and LX are both contiguous; *dram gets the DRAM address of its
 * first stick.  -1 when the block does not start on a stick or needs more
 * loop levels than a DMA has. */
static int geo_dma(const sd_geo *g, const isa_tensor *T, cc_dma_shape *sh, int64_t *dram)
{
    int64_t dstr[SD_MAX_DIMS], n[SD_MAX_DIMS + 1], ds[SD_MAX_DIMS + 1], as[SD_MAX_DIMS + 1], ls = g->stick;
    int m = 0;
    if (g->start[g->r - 1] % g->lanes)
        return -1;
    dram_strides(T, g, dstr);
    *dram = (int64_t)T->dram_off + g->start[g->r - 1] / g->lanes * dstr[g->r - 1];
    for (int i = g->r - 2; i >= 0; i--, m++) {
        *dram += g->start[i] * dstr[i];
        n[m] = g->len[i], as[m] = dstr[i];
    }
    n[m] = geo_groups(g), as[m++] = g->r >= 2 ? dstr[g->r - 1] : g->stick;
    if (g->dram_order)
        m = by_dram_stride(m, n, as);
    for (int l = 0; l < m; l++) { /* the LX copy compact in that order */
        ds[l] = ls;
        ls *= n[l];
        as[l] = n[l] == 1 ? ds[l] : as[l]; /* a level of one step goes nowhere: call it contiguous */
    }
    memset(sh, 0, sizeof *sh);
    int first = m && ds[0] == g->stick && as[0] == g->stick;
    sh->run = first ? n[0] : 1;
    for (int l = first; l < m; l++) {
        if (sh->levels == ISA_MAX_LOOPS)
            return -1;
        sh->n[sh->levels] = n[l];
        sh->ds[sh->levels] = ds[l];
        sh->as[sh->levels++] = as[l];
    }
    if (!sh->levels) /* one run: one level of one */
        sh->n[sh->levels++] = 1;
    return 0;
}

/* An operand: the tensor, its block, and where the block is in LX. */
typedef struct {
    const sd_tensor *t;
    sd_geo g;
    int64_t lx;
} sd_operand;

/* Tensor i of k for this core's data stage `stage`: an LX tensor at its
 * SDSC address, or a staging buffer (at lx, or allocated when lx < 0),
 * loaded from DRAM when load is set. */
static void operand(sd_ctx *x, cc_emit *e, const sd_kernel *k, int i, int core, const int *stage, int64_t lx, int load,
                    sd_operand *o)
{
    o->t = &k->t[i];
    block_geo(k, o->t, core, stage, x->cfg->stick_bytes, &o->g);
    o->g.dram_order = x->dram_order;
    if (o->t->lx) {
        o->lx = o->t->start[core];
        return;
    }
    o->lx = lx >= 0 ? lx : cc_lx_alloc(e, geo_bytes(&o->g), o->t->name);
    cc_dma_shape sh;
    int64_t dram;
    if (geo_dma(&o->g, &x->p->tensors[o->t->arg], &sh, &dram))
        cc_emit_error(e, "%s: %s: a block that does not start on a stick, or of more than %d loop levels", k->file,
                      o->t->name, ISA_MAX_LOOPS);
    else if (load)
        cc_emit_dma(e, ISA_OP_DMA_LD, cc_abs(o->lx), cc_abs(dram), &sh);
}

static void store(sd_ctx *x, cc_emit *e, const sd_operand *o)
{
    cc_dma_shape sh;
    int64_t dram;
    geo_dma(&o->g, &x->p->tensors[o->t->arg], &sh, &dram);
    for (int l = 0; l < sh.levels; l++) { /* a store's strides are the load's, swapped */
        int64_t t = sh.ds[l];
        sh.ds[l] = sh.as[l];
        sh.as[l] = t;
    }
    cc_emit_dma(e, ISA_OP_DMA_ST, cc_abs(dram), cc_abs(o->lx), &sh);
}

/* Same per-core extents in every host dim (reduced dims excepted where allowed). */
static int same_block(const sd_geo *a, const sd_geo *b, int except_last)
{
    if (a->r != b->r)
        return 0;
    for (int i = 0; i < a->r - (except_last != 0); i++)
        if (a->len[i] != b->len[i] || a->reduced[i] || b->reduced[i])
            return 0;
    return 1;
}

static int64_t fits16(cc_emit *e, const sd_kernel *k, int64_t v)
{
    if (v > 65535)
        cc_emit_error(e, "%s: %lld sticks or rows in one loop: more than an instruction's 65535", k->file, (long long)v);
    return v;
}

typedef struct sd_oprow sd_oprow;
typedef void (*sd_emit_fn)(cc_emit *e, const sd_kernel *k, const sd_oprow *row, const sd_operand *in, int nin,
                           const sd_operand *out);
struct sd_oprow {
    const char *func, *unit;
    int arity, op;
    isa_unit u;       /* the unit it runs on (corelet 0) */
    sd_emit_fn emit;
};

/* Elementwise: d = f(a[, b]) over every stick; b may hold one element per
 * row (its last dim reduced: a max or sum of the row), broadcast. */
static void emit_ew(cc_emit *e, const sd_kernel *k, const sd_oprow *row, const sd_operand *in, int nin,
                    const sd_operand *out)
{
    const sd_geo *g = &out->g;
    int bcast = nin > 1 && in[1].g.reduced[in[1].g.r - 1];
    if (!same_block(&in[0].g, g, 0) || (nin > 1 && !same_block(&in[1].g, g, bcast))) {
        cc_emit_error(e, "%s: operands of %s with other blocks than the result (only a row's reduction may be broadcast)",
                      k->file, row->func);
        return;
    }
    int64_t rows = geo_rows(g), groups = geo_groups(g), st = g->stick, total = rows * groups;
    cc_sfp_args sa = {0};
    sa.op = row->op;
    sa.t = out->t->f32 ? ISA_T_F32 : ISA_T_DL16;
    sa.bm = bcast ? ISA_BM_ELEM : ISA_BM_VEC;
    if (bcast) { /* i0 over rows, i1 over stick groups; b: the row's element */
        sa.d = cc_abs(out->lx), sa.a = cc_abs(in[0].lx), sa.b = cc_abs(in[1].lx);
        sa.n0 = fits16(e, k, rows), sa.n1 = fits16(e, k, groups);
        sa.ds0 = sa.as0 = sa.bs0 = st;
        sa.ds1 = sa.as1 = rows * st;
        cc_emit_sfp(e, &sa);
        return;
    }
    for (int64_t done = 0; done < total;) {
        int64_t n = total - done < 65535 ? total - done : 65535;
        sa.d = cc_abs(out->lx + done * st);
        sa.a = cc_abs(in[0].lx + done * st);
        sa.b = cc_abs(nin > 1 ? in[1].lx + done * st : 0);
        sa.n0 = n, sa.n1 = 1;
        sa.ds0 = sa.as0 = st;
        sa.bs0 = nin > 1 ? st : 0;
        cc_emit_sfp(e, &sa);
        done += n;
    }
}

/* A reduction of each row over its last dim into one element per row (a
 * stick each); mean then scales by the SDSC's constant. */
static void emit_red(cc_emit *e, const sd_kernel *k, const sd_oprow *row, const sd_operand *in, int nin,
                     const sd_operand *out)
{
    (void)nin;
    const sd_geo *g = &in[0].g;
    if (!same_block(g, &out->g, 1) || !out->g.reduced[out->g.r - 1] || g->reduced[g->r - 1]) {
        cc_emit_error(e, "%s: %s: only a reduction over the last dim into one element per row is supported", k->file,
                      row->func);
        return;
    }
    int64_t rows = geo_rows(g), st = g->stick;
    cc_sfp_args sa = {0};
    sa.op = row->op;
    sa.t = out->t->f32 ? ISA_T_F32 : ISA_T_DL16;
    sa.flags = ISA_F_LANES;
    sa.d = cc_abs(out->lx), sa.a = cc_abs(in[0].lx);
    sa.n0 = fits16(e, k, geo_groups(g)), sa.as0 = rows * st;
    sa.n1 = fits16(e, k, rows), sa.as1 = st, sa.ds1 = st;
    sa.vl = g->len[g->r - 1];
    cc_emit_sfp(e, &sa);
    if (strcmp(row->func, "mean"))
        return;
    if (k->nconsts < 1) {
        cc_emit_error(e, "%s: mean without its scaling_factor in constantInfo_", k->file);
        return;
    }
    cc_sfp_args m = {0};
    m.op = ISA_OP_SFP_MUL;
    m.t = sa.t;
    m.bm = ISA_BM_IMM;
    m.imm = k->consts[0];
    m.d = m.a = cc_abs(out->lx);
    m.n0 = sa.n1, m.n1 = 1;
    m.ds0 = m.as0 = st;
    cc_emit_sfp(e, &m);
}

/* The kernel dims of A (batch..., M, K), B (batch..., K, N), C (batch..., M, N). */
static int mm_dims(const sd_geo *a, const sd_geo *b, const sd_geo *c)
{
    int r = a->r;
    if (r < 2 || b->r != r || c->r != r || a->kdim[r - 1] != b->kdim[r - 2] || a->kdim[r - 2] != c->kdim[r - 2] ||
        b->kdim[r - 1] != c->kdim[r - 1])
        return -1;
    for (int i = 0; i < r - 2; i++)
        if (a->kdim[i] != b->kdim[i] || a->kdim[i] != c->kdim[i] || a->len[i] != c->len[i])
            return -1;
    return 0;
}

/* A batch of matrix products on the PT unit: one pt.mm per batch index
 * of the core's block, the whole K of the slice in one pass. */
static void emit_mm(cc_emit *e, const sd_kernel *k, const sd_oprow *row, const sd_operand *in, int nin,
                    const sd_operand *out)
{
    (void)nin;
    const sd_geo *a = &in[0].g, *b = &in[1].g, *c = &out->g;
    if (mm_dims(a, b, c) || a->lanes != b->lanes || a->lanes != c->lanes) {
        cc_emit_error(e, "%s: %s: operands are not (batch, M, K) x (batch, K, N) -> (batch, M, N)", k->file, row->func);
        return;
    }
    int r = a->r;
    int64_t m = a->len[r - 2], kk = a->len[r - 1], n = c->len[r - 1], st = a->stick, batches = geo_rows(a) / m;
    for (int64_t i = 0; i < batches; i++) {
        cc_pt_args pa = {0};
        pa.d = cc_abs(out->lx + i * m * st);
        pa.a = cc_abs(in[0].lx + i * m * st);
        pa.b = cc_abs(in[1].lx + i * kk * st);
        pa.p = cc_abs(0);
        pa.m = fits16(e, k, m), pa.n = fits16(e, k, n), pa.k = fits16(e, k, kk);
        pa.ds = geo_rows(c) * st;
        pa.as = geo_rows(a) * st;
        pa.bs = geo_rows(b) * st;
        cc_emit_pt(e, &pa);
    }
}

static const sd_oprow sd_ops[] = {
    {"add", "sfp", 2, ISA_OP_SFP_ADD, ISA_U_SFP0, emit_ew},
    {"sub", "sfp", 2, ISA_OP_SFP_SUB, ISA_U_SFP0, emit_ew},
    {"mul", "sfp", 2, ISA_OP_SFP_MUL, ISA_U_SFP0, emit_ew},
    {"realdiv", "sfp", 2, ISA_OP_SFP_DIV, ISA_U_SFP0, emit_ew},
    {"relufwd", "sfp", 1, ISA_OP_SFP_RELU, ISA_U_SFP0, emit_ew},
    {"exp", "sfp", 1, ISA_OP_SFP_EXP, ISA_U_SFP0, emit_ew},
    {"sigmoid", "sfp", 1, ISA_OP_SFP_SIGM, ISA_U_SFP0, emit_ew},
    {"gelufwd", "sfp", 1, ISA_OP_SFP_GELU, ISA_U_SFP0, emit_ew},
    {"silu", "sfp", 1, ISA_OP_SFP_SILU, ISA_U_SFP0, emit_ew},
    {"identity", "sfp", 1, ISA_OP_SFP_MOV, ISA_U_SFP0, emit_ew},
    {"max", "sfp", 1, ISA_OP_SFP_RMAX, ISA_U_SFP0, emit_red},
    {"sum", "sfp", 1, ISA_OP_SFP_RSUM, ISA_U_SFP0, emit_red},
    {"mean", "sfp", 1, ISA_OP_SFP_RSUM, ISA_U_SFP0, emit_red},
    {"batchmatmul", "pt", 2, ISA_OP_PT_MM, ISA_U_PT0, emit_mm},
};

/* The op's inputs, less an accumulator (an input that is also its output:
 * the SDSC's reductions). */
static int inputs(const sd_op *op, int *in)
{
    int n = 0;
    for (int j = 0; j < op->nin; j++)
        if (op->in[j] != op->out[0])
            in[n++] = op->in[j];
    return n;
}

static const sd_oprow *op_row(const sd_kernel *k)
{
    int in[4];
    if (k->nops != 1 || k->ops[0].nout != 1)
        return NULL;
    for (size_t i = 0; i < sizeof sd_ops / sizeof sd_ops[0]; i++)
        if (!strcmp(k->ops[0].func, sd_ops[i].func) && !strcmp(k->ops[0].unit, sd_ops[i].unit) &&
            inputs(&k->ops[0], in) == sd_ops[i].arity)
            return &sd_ops[i];
    return NULL;
}

/* May kernel k stage its operands in DRAM order?  An elementwise op
 * without a broadcast operand, every tensor an argument of one shape and
 * one dim order: then every operand's LX copy lists the same elements in
 * the same order. */
static int dram_order(const sd_ctx *x, const sd_kernel *k)
{
    const isa_tensor *o = NULL;
    if (op_row(k)->emit != emit_ew)
        return 0;
    for (int i = 0; i < k->nt; i++) {
        if (k->t[i].lx)
            return 0;
        const isa_tensor *T = &x->p->tensors[k->t[i].arg];
        if (o && (T->rank != o->rank || T->order != o->order ||
                  memcmp(T->shape, o->shape, sizeof T->shape[0] * (size_t)T->rank)))
            return 0;
        o = T;
    }
    return o != NULL;
}

/* The data stages of a core's slice along each kernel dim (ns[]), and
 * their count. */
static int stages(const sd_kernel *k, int *ns)
{
    int total = 1;
    for (int d = 0; d < k->ndims; d++) {
        ns[d] = (int)(k->dims[d].n / k->dims[d].slices / k->dims[d].stage);
        total *= ns[d];
    }
    return total;
}

int sd_emit_supported(const sd_kernel *k, char *err, size_t errlen)
{
    const sd_oprow *row = op_row(k);
    int ns[SD_MAX_DIMS], lx = 0;
    if (!row)
        return isa_errf(err, errlen, "%s: computeOp_ %s on %s (%d inputs, %d ops): not supported yet (docs/torch-spyre.md)",
                        k->file, k->nops ? k->ops[0].func : "(none)", k->nops ? k->ops[0].unit : "-",
                        k->nops ? k->ops[0].nin : 0, k->nops);
    for (int i = 0; i < k->nt; i++)
        lx |= k->t[i].lx;
    if (stages(k, ns) > 1 && (row->emit != emit_ew || lx))
        return isa_errf(err, errlen,
                        "%s: data stages smaller than the slice: supported for elementwise ops on DRAM tensors only", k->file);
    return 0;
}

/* The tokens of a staged kernel: loads of a stage done, its inputs' and
 * its result's buffers free again, its result computed. */
typedef struct {
    int loaded, in_free, computed, out_free;
} sd_stage_tokens;

/* Stage s of n (indices at[]) into buffer set s % 2: the loads (after the
 * compute of stage s - 2 has read that set), the op (after the loads, and
 * after the store of stage s - 2 has read that result buffer), the store.
 * Every token signalled is waited for once: the next kernel starts from
 * zero counts. */
static void emit_stage(sd_ctx *x, cc_emit *e, const sd_kernel *k, int core, const int *at, int s, int n,
                       const int64_t (*buf)[5], const sd_stage_tokens *tk)
{
    const sd_oprow *row = op_row(k);
    const sd_op *op = &k->ops[0];
    int in[4], nin = inputs(op, in);
    sd_operand o[4], out;
    if (s >= 2)
        cc_emit_wait(e, ISA_U_DMAI, tk->in_free);
    for (int j = 0; j < nin; j++)
        operand(x, e, k, in[j], core, at, buf[s % 2][j], 1, &o[j]);
    operand(x, e, k, op->out[0], core, at, buf[s % 2][4], 0, &out);
    cc_emit_sig(e, ISA_U_DMAI, tk->loaded);
    cc_emit_wait(e, row->u, tk->loaded);
    if (s >= 2)
        cc_emit_wait(e, row->u, tk->out_free);
    row->emit(e, k, row, o, nin, &out);
    if (s + 2 < n)
        cc_emit_sig(e, row->u, tk->in_free);
    cc_emit_sig(e, row->u, tk->computed);
    cc_emit_wait(e, ISA_U_DMAO, tk->computed);
    store(x, e, &out);
    if (s + 2 < n)
        cc_emit_sig(e, ISA_U_DMAO, tk->out_free);
}

/* A kernel in data stages: two sets of staging buffers, so that the loads
 * of the next stage and the store of the last one run beside the op. */
static void emit_staged(sd_ctx *x, cc_emit *e, const sd_kernel *k, int core, const int *ns, int n)
{
    const sd_op *op = &k->ops[0];
    int in[4], nin = inputs(op, in), at[SD_MAX_DIMS] = {0};
    int64_t buf[2][5];
    for (int b = 0; b < 2; b++)
        for (int j = 0; j <= nin; j++) {
            sd_geo g;
            block_geo(k, &k->t[j < nin ? in[j] : op->out[0]], core, at, x->cfg->stick_bytes, &g);
            buf[b][j < nin ? j : 4] = cc_lx_alloc(e, geo_bytes(&g), "stage buffer");
        }
    sd_stage_tokens tk = {cc_tok_alloc(e, "stage loaded"), cc_tok_alloc(e, "stage inputs free"),
                          cc_tok_alloc(e, "stage computed"), cc_tok_alloc(e, "stage result free")};
    for (int s = 0; s < n && !cc_emit_failed(e); s++) {
        emit_stage(x, e, k, core, at, s, n, (const int64_t(*)[5])buf, &tk);
        for (int d = k->ndims - 1; d >= 0 && ++at[d] == ns[d]; d--) /* the last dim's stages innermost */
            at[d] = 0;
    }
}

/* One data stage, the core's whole slice: loads, the op, the store. */
static void emit_whole(sd_ctx *x, cc_emit *e, const sd_kernel *k, int core)
{
    const sd_oprow *row = op_row(k);
    const sd_op *op = &k->ops[0];
    int in[4], nin = inputs(op, in), loads = 0, at[SD_MAX_DIMS] = {0};
    sd_operand o[4], out;
    for (int j = 0; j < nin; j++) {
        operand(x, e, k, in[j], core, at, -1, 1, &o[j]);
        loads += !o[j].t->lx;
    }
    operand(x, e, k, op->out[0], core, at, -1, 0, &out);
    if (loads) {
        int tok = cc_tok_alloc(e, "loads done");
        cc_emit_sig(e, ISA_U_DMAI, tok);
        cc_emit_wait(e, row->u, tok);
    }
    row->emit(e, k, row, o, nin, &out);
    if (!out.t->lx) {
        int tok = cc_tok_alloc(e, "result done");
        cc_emit_sig(e, row->u, tok);
        cc_emit_wait(e, ISA_U_DMAO, tok);
        store(x, e, &out);
    }
}

void sd_emit_kernel(sd_ctx *x, cc_emit *e, const sd_kernel *k, int core)
{
    int ns[SD_MAX_DIMS], n = stages(k, ns);
    e->lx_top = x->lx_base; /* the staging buffers of earlier kernels are dead after the bar */
    e->ntokens = 0;
    cc_kernel_begin(e, k->top);
    x->dram_order = dram_order(x, k);
    if (n > 1)
        emit_staged(x, e, k, core, ns, n);
    else
        emit_whole(x, e, k, core);
    cc_kernel_end(e);
}
