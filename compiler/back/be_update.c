/* be_update.c: a graph's state updates (docs/graph-format.md, "State") as
 * instructions of the program: after the last kernel, a bar (every read of
 * a state's old value comes first), then each update's source rows go into
 * the state where it lives by dma.scatter, at the positions its index
 * input holds.  The updates are spread over the cores, one core each. */
#include "backend.h"

#include <string.h>

/* The buffer of graph value `name` of kind k, or -1. */
static int find_buf(const ir_prog *p, const char *name, ir_buf_kind k)
{
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].kind == k && !strcmp(p->bufs[b].name, name))
            return b;
    return -1;
}

int be_update_index(const ir_prog *p, int b)
{
    for (int u = 0; u < p->nupdates; u++)
        if (p->bufs[b].kind == IR_BUF_INPUT && !strcmp(p->bufs[b].name, p->updates[u].index))
            return 1;
    return 0;
}

/* A scatter writes whole sticks, so a state is sticked on a dim other than
 * the one its positions index (its last, else the one before): a K cache
 * the attention product would read with positions along the stick is
 * restickified there instead.  Its layout is no longer free: a kernel
 * (the scatter) writes it. */
void be_update_layouts(ir_prog *p, be_ctx *c)
{
    for (int u = 0; u < p->nupdates; u++) {
        const ir_update *U = &p->updates[u];
        int s = find_buf(p, U->state, IR_BUF_PARAM);
        if (s < 0 || !c->lay[s].dram || p->bufs[s].type.rank < 2)
            continue; /* be_update_emit names the problem */
        int r = p->bufs[s].type.rank;
        c->lay[s].stick_dim = U->dim == r - 1 ? r - 2 : r - 1;
        c->lay[s].free_stick = 0;
    }
}

/* The program's tensor of graph value `name`, or NULL. */
static const isa_tensor *value_tensor(const isa_program *prog, const char *name)
{
    char tn[GR_TENSOR_NAME_MAX];
    gr_tensor_name(name, tn);
    int ti = isa_program_find_tensor(prog, tn);
    return ti < 0 ? NULL : &prog->tensors[ti];
}

/* Why update U cannot be one scatter of X's rows into S at I's positions,
 * or NULL. */
static const char *refusal(const ir_update *U, const isa_tensor *S, const isa_tensor *X, const isa_tensor *I)
{
    if (!S || !X || !I)
        return !S ? "the state is not a tensor of the program" : !X ? "its source is not a tensor of the program"
                                                                 : "its positions are not a tensor of the program";
    if (I->rank != 1 || I->dev_dtype != ISA_T_F32)
        return "its positions are not a 1-D integer input held as fp32";
    if (S->rank < 2 || S->stick_dim == U->dim || X->rank != S->rank || X->stick_dim != S->stick_dim ||
        X->dev_dtype != S->dev_dtype)
        return "the state and its source are not laid out alike with whole sticks per position";
    for (int d = 0; d < S->rank; d++)
        if (d != U->dim && X->shape[d] != S->shape[d])
            return "the source's shape is not the state's but along the update's dim";
    if (X->shape[U->dim] != I->shape[0])
        return "the source has not one slice per position";
    return NULL;
}

/* Update U on emitter e: its positions and source rows into LX, then the
 * scatter.  Device layout: row r of stick group g at (g*rows + r)*stick,
 * rows row-major over the dims but the stick's.  A position x of dim D is
 * `inner` consecutive rows (the dims after D) for each of `outer` (the dims
 * before D) and each group; groups follow the outer rows at the same
 * stride, so one loop level walks both. */
static int emit_one(be_ctx *c, cc_emit *e, const ir_update *U)
{
    const isa_program *prog = c->prog;
    const isa_tensor *S = value_tensor(prog, U->state), *X = value_tensor(prog, U->src),
                     *I = value_tensor(prog, U->index);
    const char *why = refusal(U, S, X, I);
    if (why)
        return ir_error(c->p, U->line, "update of %%%s: %s (the program writes it by dma.scatter)", U->state, why);
    const int64_t sb = (int64_t)prog->stick_bytes, n = I->shape[0];
    int64_t inner = 1, outer = 1;
    for (int d = 0; d < S->rank; d++) {
        if (d == S->stick_dim || d == U->dim)
            continue;
        if (d < U->dim)
            outer *= S->shape[d];
        else
            inner *= S->shape[d];
    }
    const int64_t steps = outer * isa_tensor_groups(S, prog->stick_bytes);
    if (n > 65535 || inner > 65535 || steps > 65535 || S->shape[U->dim] >= (1 << 24))
        return ir_error(c->p, U->line, "update of %%%s: more rows than one dma.scatter addresses", U->state);
    const int64_t idx = cc_lx_alloc(e, I->bytes, "update: positions"), src = cc_lx_alloc(e, X->bytes, "update: rows");
    const int tok = cc_tok_alloc(e, "update");
    if (cc_emit_failed(e))
        return -1;
    cc_dma_shape ld = cc_dma_groups((int64_t)I->bytes / sb, 1, 0, 0);
    cc_emit_dma(e, ISA_OP_DMA_LD, cc_abs(idx), cc_abs((int64_t)I->dram_off), &ld);
    ld = cc_dma_groups(1, (int64_t)X->bytes / sb, sb, sb); /* a stick per step: any size fits the fields */
    cc_emit_dma(e, ISA_OP_DMA_LD, cc_abs(src), cc_abs((int64_t)X->dram_off), &ld);
    cc_emit_sig(e, ISA_U_DMAI, tok);
    cc_emit_wait(e, ISA_U_DMAO, tok);
    isa_insn in;
    isa_insn_init(&in, ISA_OP_DMA_SCATTER);
    in.d = cc_abs((int64_t)S->dram_off);
    in.a = cc_abs(src);
    in.b = cc_abs(idx);
    in.run = inner;
    in.vl = S->shape[U->dim];
    in.n[0] = n;
    in.ds[0] = inner * sb;
    in.as[0] = inner * sb;
    in.n[1] = steps;
    in.ds[1] = S->shape[U->dim] * inner * sb;
    in.as[1] = n * inner * sb;
    cc_push(e, &in);
    return cc_emit_failed(e) ? -1 : 0;
}

int be_update_emit(be_ctx *c)
{
    const ir_prog *p = c->p;
    const int ncores = c->cfg->cores;
    if (!p->nupdates)
        return 0;
    for (int core = 0; core < ncores; core++) {
        cc_emit *e = &c->em[core];
        cc_emit_bar(e);
        e->lx_top = 0;
        e->lx_limit = 0;
        e->ntokens = 0;
    }
    for (int u = 0; u < p->nupdates; u++)
        if (emit_one(c, &c->em[u % ncores], &p->updates[u]))
            return -1;
    return 0;
}
