/* backend.c: the back half's passes (layout, workdiv, codegen), the
 * tensor table, stick views and their DMA descriptors, and cc_codegen.
 * The kernel generators are be_matmul.c and be_rows.c. */
#include "backend.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int be_error(be_ctx *c, const ir_kernel *K, const char *fmt, ...)
{
    if (!c->err || !c->errlen || c->err[0])
        return -1;
    int n = K ? snprintf(c->err, c->errlen, "kernel %s: ", K->name) : 0;
    if (n < 0 || (size_t)n >= c->errlen)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- Stick views ---- */

/* Row-major coordinates of a flat offset (or of a coefficient: the
 * coordinates one step of the variable moves). */
static void coords_of(const cc_ttype *t, int64_t flat, int64_t *co)
{
    for (int d = t->rank - 1; d > 0; d--) {
        co[d] = flat % t->shape[d];
        flat /= t->shape[d];
    }
    if (t->rank)
        co[0] = flat;
}

int64_t be_elem_off(const be_ctx *c, int buf, int64_t flat)
{
    const ir_buf *B = &c->p->bufs[buf];
    const be_layout *L = &c->lay[buf];
    const cc_ttype *t = &B->type;
    const int64_t lanes = c->t.lanes16;
    int64_t co[CC_MAX_RANK] = {0};
    coords_of(t, flat, co);
    int64_t row = 0;
    for (int d = 0; d < t->rank; d++)
        if (d != L->stick_dim)
            row = row * t->shape[d] + co[d];
    int64_t sc = t->rank ? co[L->stick_dim] : 0;
    return ((sc / lanes) * L->rows + row) * c->t.stick + (sc % lanes) * 2;
}

int be_lane_fits(const be_ctx *c, int buf, const ir_index *idx, int64_t extent)
{
    const cc_ttype *t = &c->p->bufs[buf].type;
    const int s = c->lay[buf].stick_dim;
    int64_t co[CC_MAX_RANK] = {0};
    if (!t->rank)
        return extent <= 1;
    coords_of(t, idx->offset, co);
    return co[s] + extent <= t->shape[s];
}

int64_t be_index_at(const ir_index *idx, int nvars, const int64_t *val)
{
    int64_t f = idx->offset;
    for (int v = 0; v < nvars; v++)
        f += idx->coef[v] * val[v];
    return f;
}

int be_view_of(const be_ctx *c, int buf, const ir_index *idx, int nvars, int lane_var, be_view *v, char *why,
               size_t whylen)
{
    const ir_buf *B = &c->p->bufs[buf];
    const be_layout *L = &c->lay[buf];
    const cc_ttype *t = &B->type;
    const int64_t sb = c->t.stick, lanes = c->t.lanes16;
    memset(v, 0, sizeof *v);
    if (!L->dram) {
        snprintf(why, whylen, "buffer %s is not in DRAM", B->name);
        return -1;
    }
    const int s = L->stick_dim, rank = t->rank;
    int64_t rstr[CC_MAX_RANK], acc = 1;
    for (int d = rank - 1; d >= 0; d--) {
        rstr[d] = acc;
        if (d != s)
            acc *= t->shape[d];
    }
    int64_t co[CC_MAX_RANK] = {0}, off[CC_MAX_RANK] = {0};
    if (idx->offset < 0) {
        snprintf(why, whylen, "%s is read at a negative offset", B->name);
        return -1;
    }
    coords_of(t, idx->offset, off);
    for (int x = 0; x < nvars; x++) {
        int64_t coef = idx->coef[x];
        if (!coef)
            continue;
        if (coef < 0) {
            snprintf(why, whylen, "%s is walked backwards (stride %" PRId64 ")", B->name, coef);
            return -1;
        }
        memset(co, 0, sizeof co);
        coords_of(t, coef, co);
        if (x == lane_var) {
            for (int d = 0; d < rank; d++)
                if (co[d] != (d == s)) {
                    snprintf(why, whylen,
                             "%s is not walked along its stick dimension %d with unit stride (needs a restickify)",
                             B->name, s);
                    return -1;
                }
            continue;
        }
        if (rank && co[s]) {
            snprintf(why, whylen, "%s: a loop strides inside its stick dimension %d (needs a restickify)", B->name, s);
            return -1;
        }
        for (int d = 0; d < rank; d++)
            if (d != s)
                v->rs[x] += co[d] * rstr[d];
    }
    int64_t os = rank ? off[s] : 0;
    if (lane_var >= 0 && os % lanes) {
        snprintf(why, whylen, "%s is read from element %" PRId64 " of a stick on (needs a restickify)", B->name,
                 os % lanes);
        return -1;
    }
    int64_t base_row = 0;
    for (int d = 0; d < rank; d++)
        if (d != s)
            base_row += off[d] * rstr[d];
    v->lane = (int)(os % lanes);
    v->base = (int64_t)L->off + ((os / lanes) * L->rows + base_row) * sb;
    v->gstride = L->rows * sb;
    v->groups = L->groups - os / lanes;
    return 0;
}

void be_dma_rows(be_ctx *c, cc_emit *e, int op, int64_t lx, int64_t lx_gs, const be_view *v, const be_rowspace *rsp,
                 int64_t r0, int64_t n, int64_t ng)
{
    const int64_t sb = c->t.stick;
    /* Merge levels that are contiguous in DRAM, innermost first. */
    int64_t mext[IR_MAX_VARS + 1], mstr[IR_MAX_VARS + 1];
    int nm = 0;
    for (int i = rsp->nv - 1; i >= 0; i--) {
        int64_t ext = rsp->ext[i], str = v->rs[rsp->var[i]];
        if (ext == 1)
            continue;
        if (nm && str == mext[nm - 1] * mstr[nm - 1]) {
            mext[nm - 1] *= ext;
            continue;
        }
        mext[nm] = ext;
        mstr[nm] = str;
        nm++;
    }
    if (!nm) {
        mext[0] = 1;
        mstr[0] = 0;
        nm = 1;
    }
    for (int64_t r = r0; r < r0 + n;) {
        int64_t rest = r, stick = 0, c0 = 0;
        for (int i = 0; i < nm; i++) {
            int64_t ci = rest % mext[i];
            rest /= mext[i];
            stick += ci * mstr[i];
            if (i == 0)
                c0 = ci;
        }
        int64_t len = cc_min(r0 + n - r, mext[0] - c0);
        int64_t dram = v->base + stick * sb, lxa = lx + (r - r0) * sb;
        cc_dma_shape sh;
        memset(&sh, 0, sizeof sh);
        for (int l = 0; l < ISA_MAX_LOOPS; l++)
            sh.n[l] = 1;
        int64_t lxs[2], drs[2];
        if (mstr[0] == 1 || len == 1) {
            sh.run = len;
            sh.levels = 1;
            sh.n[0] = ng;
            lxs[0] = lx_gs;
            drs[0] = v->gstride;
        } else {
            sh.run = 1;
            sh.levels = 2;
            sh.n[0] = len;
            lxs[0] = sb;
            drs[0] = mstr[0] * sb;
            sh.n[1] = ng;
            lxs[1] = lx_gs;
            drs[1] = v->gstride;
        }
        for (int l = 0; l < sh.levels; l++) {
            sh.ds[l] = op == ISA_OP_DMA_ST ? drs[l] : lxs[l];
            sh.as[l] = op == ISA_OP_DMA_ST ? lxs[l] : drs[l];
        }
        if (op == ISA_OP_DMA_ST)
            cc_emit_dma(e, op, cc_abs(dram), cc_abs(lxa), &sh);
        else
            cc_emit_dma(e, op, cc_abs(lxa), cc_abs(dram), &sh);
        r += len;
    }
}

/* ---- layout ---- */

/* The name a DRAM buffer's tensor gets: a graph output's value name, else
 * the buffer's (an input's or parameter's value name). */
static const char *tensor_name(const ir_prog *p, int b, const cc_ttype **type)
{
    *type = &p->bufs[b].type;
    for (int o = 0; o < p->noutputs; o++)
        if (p->outputs[o].buf == b) {
            *type = &p->outputs[o].type;
            return p->outputs[o].name;
        }
    return p->bufs[b].name;
}

/* The host dim a variable walks with unit coordinate step, or -1. */
static int walked_dim(const cc_ttype *t, int64_t coef)
{
    int64_t co[CC_MAX_RANK] = {0};
    if (coef <= 0)
        return -1;
    coords_of(t, coef, co);
    int dim = -1;
    for (int d = 0; d < t->rank; d++) {
        if (!co[d])
            continue;
        if (co[d] != 1 || dim >= 0)
            return -1;
        dim = d;
    }
    return dim;
}

int be_layout_pass(ir_prog *p, const sim_config *cfg)
{
    be_free(p);
    be_ctx *c = ir_xalloc(sizeof *c);
    p->be = c;
    c->p = p;
    c->cfg = cfg;
    c->err = p->err;
    c->errlen = p->errlen;
    cc_target_init(&c->t, cfg);
    c->lay = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *c->lay);
    c->work = ir_xalloc((size_t)(p->norder + 1) * sizeof *c->work);
    if (cfg->stick_bytes != 128 && cfg->stick_bytes % 4) {
        snprintf(p->err, p->errlen, "configuration %s: unusable stick of %u bytes", cfg->name, cfg->stick_bytes);
        return -1;
    }
    /* Which buffers go through DRAM. */
    for (int b = 0; b < p->nbufs; b++) {
        const ir_buf *B = &p->bufs[b];
        be_layout *L = &c->lay[b];
        L->want_dim = -1;
        L->dram = !B->dead && (B->kind != IR_BUF_COMPUTED || (!B->internal && B->node >= 0 && !p->nodes[B->node].dead));
        L->stick_dim = B->type.rank ? B->type.rank - 1 : 0;
    }
    /* Matmul operands: B wants its stick on the dim n walks, A on the dim
     * k walks.  A parameter used only as B takes the dim B asks for. */
    for (int n = 0; n < p->nnodes; n++) {
        const ir_node *N = &p->nodes[n];
        if (N->dead || N->kind != IR_MATMUL)
            continue;
        int d = walked_dim(&p->bufs[N->b].type, N->bidx.coef[N->nbatch + 1]);
        be_layout *L = &c->lay[N->b];
        if (d < 0 || (L->want_dim != -1 && L->want_dim != d))
            L->want_dim = -2;
        else
            L->want_dim = d;
    }
    for (int n = 0; n < p->nnodes; n++) { /* any other use of a parameter keeps the default */
        const ir_node *N = &p->nodes[n];
        if (N->dead)
            continue;
        for (int r = 0; r < N->nreads; r++) {
            int b = N->reads[r].buf;
            if (N->kind == IR_MATMUL && b == N->b && b != N->a)
                continue;
            if (c->lay[b].want_dim >= 0 && p->bufs[b].kind != IR_BUF_COMPUTED)
                c->lay[b].want_dim = -2;
        }
    }
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].kind != IR_BUF_COMPUTED && c->lay[b].want_dim >= 0)
            c->lay[b].stick_dim = c->lay[b].want_dim;
    /* Conflicts: operands whose walk disagrees with their buffer's stick. */
    for (int n = 0; n < p->nnodes; n++) {
        const ir_node *N = &p->nodes[n];
        if (N->dead || N->kind != IR_MATMUL)
            continue;
        if (walked_dim(&p->bufs[N->a].type, N->aidx.coef[N->nbatch + 2]) != c->lay[N->a].stick_dim)
            c->restick++;
        if (walked_dim(&p->bufs[N->b].type, N->bidx.coef[N->nbatch + 1]) != c->lay[N->b].stick_dim)
            c->restick++;
    }
    /* The tensor table. */
    c->prog = cc_program_new(cfg, p->graph_text, p->err, p->errlen);
    if (!c->prog)
        return -1;
    uint64_t align = cfg->stick_bytes;
    if (cfg->dram_align > align && cfg->dram_align % align == 0)
        align = cfg->dram_align;
    /* Parameters first: they form the weights region, which the runtime
     * keeps resident across runs (docs/runtime.md). */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            c->prog->weight_bytes = (c->prog->dram_bytes + align - 1) / align * align;
        for (int b = 0; b < p->nbufs; b++) {
            be_layout *L = &c->lay[b];
            const ir_buf *B = &p->bufs[b];
            if (!L->dram || (B->kind == IR_BUF_PARAM) != (pass == 0))
                continue;
            const cc_ttype *ht;
            const char *name = tensor_name(p, b, &ht);
            if (B->type.rank > ISA_MAX_RANK || ht->rank > ISA_MAX_RANK)
                return ir_error(p, -1, "buffer %s: rank %d is more than the device's %d", B->name, B->type.rank,
                                ISA_MAX_RANK);
            if (strlen(name) >= ISA_NAME_MAX)
                return ir_error(p, -1, "buffer %s: the name is longer than %d characters", name, ISA_NAME_MAX - 1);
            if (isa_program_find_tensor(c->prog, name) >= 0)
                return ir_error(p, -1, "two buffers would be the tensor %s", name);
            /* An output reshaped from its buffer keeps the buffer's device
             * bytes only when the stick dimension (the last) is unchanged. */
            if (ht != &B->type && (ht->rank == 0) != (B->type.rank == 0))
                return ir_error(p, -1, "output %s: a reshape to or from a scalar is not supported by the back half", name);
            if (ht != &B->type && ht->rank && (ht->shape[ht->rank - 1] != B->type.shape[B->type.rank - 1] ||
                                              L->stick_dim != B->type.rank - 1))
                return ir_error(p, -1, "output %s: reshaped from buffer %s across its last dimension (needs a restickify)",
                                name, B->name);
            isa_role role = B->kind == IR_BUF_INPUT ? ISA_ROLE_INPUT
                            : B->kind == IR_BUF_PARAM ? ISA_ROLE_WEIGHT
                            : B->output ? ISA_ROLE_OUTPUT
                                        : ISA_ROLE_SCRATCH;
            uint64_t off = (c->prog->dram_bytes + align - 1) / align * align;
            isa_host_dtype hdt = B->type.dtype == CC_F16 ? ISA_HT_F16 : ISA_HT_F32;
            int ti = isa_program_add_tensor(c->prog, name, role, hdt, ISA_T_DL16, ht->rank, ht->shape, off);
            isa_tensor *T = &c->prog->tensors[ti];
            if (ht == &B->type)
                T->stick_dim = L->stick_dim;
            T->bytes = isa_tensor_device_bytes(T, c->prog->stick_bytes);
            if (off + T->bytes > c->prog->dram_bytes)
                c->prog->dram_bytes = off + T->bytes;
            L->off = off;
            L->groups = B->type.rank ? cc_ceil_div(B->type.shape[L->stick_dim], c->t.lanes16) : 1;
            L->rows = 1;
            for (int d = 0; d < B->type.rank; d++)
                if (d != L->stick_dim)
                    L->rows *= B->type.shape[d];
        }
    }
    if (c->prog->dram_bytes > cfg->dram_bytes)
        return ir_error(p, -1, "the tensors need %llu bytes of DRAM, more than %s has",
                        (unsigned long long)c->prog->dram_bytes, cfg->name);
    return 0;
}

/* ---- workdiv ---- */

int be_workdiv_pass(ir_prog *p)
{
    be_ctx *c = p->be;
    for (int i = 0; i < p->norder; i++) {
        int rc = p->kernels[p->order[i]].kind == IR_MATMUL ? be_matmul_plan(c, i) : be_rows_plan(c, i);
        if (rc)
            return -1;
    }
    return 0;
}

/* ---- codegen ---- */

int be_codegen_pass(ir_prog *p)
{
    be_ctx *c = p->be;
    const int ncores = c->cfg->cores;
    c->em = ir_xalloc((size_t)ncores * sizeof *c->em);
    for (int core = 0; core < ncores; core++)
        cc_emit_begin(&c->em[core], c->cfg, c->prog, core, p->err, p->errlen);
    for (int i = 0; i < p->norder; i++) {
        /* A bar before every kernel after the first: it orders a kernel
         * that reads an earlier kernel's result, and since each kernel
         * numbers its tokens from 0, without it a unit of the next kernel
         * could take a token signalled for a unit still running this one. */
        if (i > 0)
            for (int core = 0; core < ncores; core++)
                cc_emit_bar(&c->em[core]);
        int rc = p->kernels[p->order[i]].kind == IR_MATMUL ? be_matmul_emit(c, i) : be_rows_emit(c, i);
        if (rc)
            return -1;
        for (int core = 0; core < ncores; core++)
            if (cc_emit_failed(&c->em[core]))
                return -1;
    }
    for (int core = 0; core < ncores; core++) {
        cc_emit_halt(&c->em[core]);
        if (cc_emit_failed(&c->em[core]))
            return -1;
    }
    return 0;
}

void be_free(ir_prog *p)
{
    be_ctx *c = p->be;
    if (!c)
        return;
    free(c->lay);
    free(c->work);
    free(c->em);
    isa_program_free(c->prog);
    free(c);
    p->be = NULL;
}

/* ---- dumps ---- */

void be_print(const ir_prog *p, const char *pass, FILE *f)
{
    const be_ctx *c = p->be;
    fprintf(f, "# %s after %s (target %s, %d cores)\n", p->gname, pass, c->cfg->name, c->cfg->cores);
    if (!strcmp(pass, "layout")) {
        for (size_t i = 0; i < c->prog->ntensors; i++) {
            const isa_tensor *T = &c->prog->tensors[i];
            fprintf(f, "tensor %s %s dims", T->name, isa_role_names[T->role]);
            for (int d = 0; d < T->rank; d++)
                fprintf(f, "%s%" PRId64, d ? "x" : " ", T->shape[d]);
            fprintf(f, " dl16 stick_dim %d at %llu bytes %llu\n", T->stick_dim, (unsigned long long)T->dram_off,
                    (unsigned long long)T->bytes);
        }
        for (int b = 0; b < p->nbufs; b++)
            if (!p->bufs[b].dead && !c->lay[b].dram && p->bufs[b].internal)
                fprintf(f, "buffer %s: internal (LX only)\n", p->bufs[b].name);
        fprintf(f, "restickify needed: %d\n", c->restick);
        return;
    }
    for (int i = 0; i < p->norder; i++) {
        const ir_kernel *K = &p->kernels[p->order[i]];
        const be_work *w = &c->work[i];
        if (K->kind == IR_MATMUL)
            fprintf(f, "kernel %s: matmul grid %" PRId64 " x %" PRId64 " (%d cores), estimate %.0f cycles\n", K->name,
                    w->gm, w->gn, w->cores, w->est_cycles);
        else
            fprintf(f, "kernel %s: rows %" PRId64 " of %" PRId64 " columns over %d cores\n", K->name, w->rows, w->cols,
                    w->cores);
    }
    if (!strcmp(pass, "codegen") && c->prog)
        for (int core = 0; core < c->prog->ncores; core++)
            fprintf(f, "core %d: %zu instructions\n", core, c->prog->cores[core].n);
}

/* ---- the public entry ---- */

isa_program *cc_codegen(const cc_result *r, const sim_config *cfg, char *err, size_t errlen)
{
    ir_prog *p = (ir_prog *)r;
    if (errlen)
        err[0] = 0;
    char *oerr = p->err;
    size_t olen = p->errlen;
    p->err = err;
    p->errlen = errlen;
    isa_program *out = NULL;
    const char *dump = p->opts.dump_after;
    FILE *f = p->opts.dump ? p->opts.dump : stderr;
    if (be_layout_pass(p, cfg))
        goto done;
    if (dump && !strcmp(dump, "layout"))
        be_print(p, "layout", f);
    p->be->err = err;
    p->be->errlen = errlen;
    if (be_workdiv_pass(p))
        goto done;
    if (dump && !strcmp(dump, "workdiv"))
        be_print(p, "workdiv", f);
    if (be_codegen_pass(p))
        goto done;
    if (dump && !strcmp(dump, "codegen"))
        be_print(p, "codegen", f);
    out = p->be->prog;
    p->be->prog = NULL;
done:
    be_free(p);
    p->err = oerr;
    p->errlen = olen;
    return out;
}
