/* be_update.c: a graph's state updates (docs/graph-format.md, "State") as
 * instructions of the program: after the last kernel, a bar (every read of
 * a state's old value comes first), then each update's source rows go into
 * the state where it lives by dma.scatter, at the positions its index
 * input holds.  The updates are spread over the cores, one core each;
 * positions whose rows do not fit in LX at once go in chunks. */
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

/* How update U walks the device layouts: row r of stick group g at
 * (g*rows + r)*stick, rows row-major over the dims but the stick's.  A
 * position x of dim D is `inner` consecutive rows (the dims after D) for
 * each of `outer` (the dims before D) and each group; groups follow the
 * outer rows at the same stride, so one loop level (`steps` of them)
 * walks both, in the state and in the source alike. */
typedef struct {
    int64_t n, inner, steps, sb;
} upd_shape;

/* Positions [k0, k0 + c) of U: their row numbers and source rows into LX
 * at idx and rows (dmai), a token to dmao, the scatter. */
static void emit_chunk(cc_emit *e, const ir_update *U, const isa_tensor *S, const isa_tensor *X,
                       const isa_tensor *I, const upd_shape *h, int64_t k0, int64_t c, int64_t idx, int64_t rows,
                       int tok)
{
    const int64_t sb = h->sb, first = k0 * 4 / sb, last = (k0 + c) * 4 - 1;
    cc_dma_shape ld = cc_dma_groups(last / sb - first + 1, 1, 0, 0);
    cc_emit_dma(e, ISA_OP_DMA_LD, cc_abs(idx), cc_abs((int64_t)I->dram_off + first * sb), &ld);
    ld = cc_dma_groups(c * h->inner, h->steps, c * h->inner * sb, h->n * h->inner * sb);
    cc_emit_dma(e, ISA_OP_DMA_LD, cc_abs(rows), cc_abs((int64_t)X->dram_off + k0 * h->inner * sb), &ld);
    cc_emit_sig(e, ISA_U_DMAI, tok);
    cc_emit_wait(e, ISA_U_DMAO, tok);
    isa_insn in;
    isa_insn_init(&in, ISA_OP_DMA_SCATTER);
    in.d = cc_abs((int64_t)S->dram_off);
    in.a = cc_abs(rows);
    in.b = cc_abs(idx + k0 * 4 - first * sb);
    isa_set(&in, run, h->inner);
    isa_set(&in, vl, S->shape[U->dim]);
    isa_set(&in, n[0], c);
    isa_set(&in, ds[0], h->inner * sb);
    isa_set(&in, as[0], h->inner * sb);
    isa_set(&in, n[1], h->steps);
    isa_set(&in, ds[1], S->shape[U->dim] * h->inner * sb);
    isa_set(&in, as[1], c * h->inner * sb);
    cc_push(e, &in);
}

/* Update U on emitter e, in chunks of positions whose rows fit in LX: the
 * next chunk's loads wait for the scatter of the one before (a token from
 * dmao back to dmai), as they reuse its LX. */
static int emit_one(be_ctx *c, cc_emit *e, const ir_update *U)
{
    const isa_program *prog = c->prog;
    const isa_tensor *S = value_tensor(prog, U->state), *X = value_tensor(prog, U->src),
                     *I = value_tensor(prog, U->index);
    const char *why = refusal(U, S, X, I);
    if (why)
        return ir_error(c->p, U->line, "update of %%%s: %s (the program writes it by dma.scatter)", U->state, why);
    upd_shape h = {I->shape[0], 1, isa_tensor_groups(S, prog->stick_bytes), (int64_t)prog->stick_bytes};
    for (int d = 0; d < S->rank; d++) {
        if (d == S->stick_dim || d == U->dim)
            continue;
        if (d < U->dim)
            h.steps *= S->shape[d];
        else
            h.inner *= S->shape[d];
    }
    /* per position: its rows and its row number; two sticks of slack for
     * row numbers that straddle sticks */
    const int64_t per = h.steps * h.inner * h.sb + 4, avail = (int64_t)c->cfg->lx_usable_bytes - 2 * h.sb;
    const int64_t chunk = cc_min(h.n, cc_min(avail / per, ISA_COUNT_MAX / h.inner));
    if (chunk < 1 || h.steps > ISA_COUNT_MAX || S->shape[U->dim] >= (1 << 24))
        return ir_error(c->p, U->line, "update of %%%s: a position's rows do not fit one dma.scatter in LX",
                        U->state);
    const int64_t idx = cc_lx_alloc(e, cc_round_up(chunk * 4, h.sb) + h.sb, "update: positions");
    const int64_t rows = cc_lx_alloc(e, chunk * h.steps * h.inner * h.sb, "update: rows");
    const int ready = cc_tok_alloc(e, "update"), done = h.n > chunk ? cc_tok_alloc(e, "update") : -1;
    for (int64_t k0 = 0; k0 < h.n && !cc_emit_failed(e); k0 += chunk) {
        if (k0)
            cc_emit_wait(e, ISA_U_DMAI, done);
        emit_chunk(e, U, S, X, I, &h, k0, cc_min(chunk, h.n - k0), idx, rows, ready);
        if (k0 + chunk < h.n)
            cc_emit_sig(e, ISA_U_DMAO, done);
    }
    return cc_emit_failed(e) ? -1 : 0;
}

int be_update_emit(be_ctx *c)
{
    const ir_prog *p = c->p;
    const int ncores = c->cfg->cores;
    if (!p->nupdates)
        return 0;
    for (int core = 0; core < ncores; core++)
        cc_emit_bar(&c->em[core]);
    for (int u = 0; u < p->nupdates; u++) {
        cc_emit *e = &c->em[u % ncores];
        if (u >= ncores) /* the core's update before this one is done with its LX and tokens */
            cc_emit_fence(e);
        e->lx_top = 0;
        e->lx_limit = 0;
        e->ntokens = 0;
        if (emit_one(c, e, &p->updates[u]))
            return -1;
    }
    return 0;
}
