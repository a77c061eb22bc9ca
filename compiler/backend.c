/* backend.c: the back half's passes (layout, workdiv, codegen), the
 * tensor table, and cc_codegen.  The kernel generators are be_matmul.c
 * and be_rows.c (the file map: docs/compiler.md). */
#include "backend.h"
#include "be_bound.h"
#include "be_diag.h"

#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- layout ---- */

/* The name a DRAM buffer's tensor gets (cc_tensor_name of): a graph
 * output's value name, else the buffer's (an input's or parameter's value
 * name). */
static void tensor_name(const ir_prog *p, int b, const cc_ttype **type, char name[ISA_NAME_MAX])
{
    _Static_assert(CC_TENSOR_NAME_MAX == ISA_NAME_MAX, "device tensor names are the ELF's");
    *type = &p->bufs[b].type;
    for (int o = 0; o < p->noutputs; o++)
        if (p->outputs[o].buf == b) {
            *type = &p->outputs[o].type;
            cc_tensor_name(p->outputs[o].name, name);
            return;
        }
    cc_tensor_name(p->bufs[b].name, name);
}

/* The host dim a variable walks with unit coordinate step, or -1. */
static int walked_dim(const cc_ttype *t, int64_t coef)
{
    int64_t co[CC_MAX_RANK] = {0};
    if (coef <= 0)
        return -1;
    be_coords_of(t, coef, co);
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

int be_layout_pass(ir_prog *p, const chip_config *cfg)
{
    be_free(p);
    be_state *st = ir_xalloc(sizeof *st);
    be_ctx *c = &st->c;
    st->k = ir_xalloc((size_t)(p->norder + 1) * sizeof *st->k);
    snprintf(st->cfgname, sizeof st->cfgname, "%s", cfg->name);
    st->ncores = (int)cfg->cores;
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
        /* an empty output has no live node (dce) but is a tensor of the program */
        L->dram = !B->dead && (B->kind != IR_BUF_COMPUTED ||
                               (!B->internal && B->node >= 0 && (!p->nodes[B->node].dead || !ir_buf_bytes(B))));
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
            char name[ISA_NAME_MAX];
            tensor_name(p, b, &ht, name);
            if (B->type.rank > ISA_MAX_RANK || ht->rank > ISA_MAX_RANK)
                return ir_error(p, -1, "buffer %s: rank %d is more than the device's %d", B->name, B->type.rank,
                                ISA_MAX_RANK);
            int twin = isa_program_find_tensor(c->prog, name);
            if (twin >= 0)
                return ir_error(p, -1, "output %s: %s (not supported yet)", name,
                                c->prog->tensors[twin].role == ISA_ROLE_INPUT || c->prog->tensors[twin].role == ISA_ROLE_WEIGHT
                                    ? "the graph returns one of its inputs unchanged"
                                    : "two values of the graph would be this one tensor (an output that is a view of another)");
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
            isa_host_dtype hdt = B->type.dtype == CC_F16    ? ISA_HT_F16
                                 : B->type.dtype == CC_BF16 ? ISA_HT_BF16
                                                            : ISA_HT_F32;
            /* Integer inputs (token ids) are fp32 values on the device,
             * exact up to 2^24: dma.gather reads them as row numbers. */
            L->f32 = B->kind != IR_BUF_COMPUTED && (B->type.dtype == CC_I64 || B->type.dtype == CC_I32);
            int ti = isa_program_add_tensor(c->prog, name, role, hdt, L->f32 ? ISA_T_F32 : ISA_T_DL16, ht->rank,
                                            ht->shape, off);
            isa_tensor *T = &c->prog->tensors[ti];
            if (ht == &B->type)
                T->stick_dim = L->stick_dim;
            T->bytes = isa_tensor_device_bytes(T, c->prog->stick_bytes);
            if (off + T->bytes > c->prog->dram_bytes)
                c->prog->dram_bytes = off + T->bytes;
            L->off = off;
            L->groups = B->type.rank ? cc_ceil_div(B->type.shape[L->stick_dim], L->f32 ? c->t.lanes32 : c->t.lanes16) : 1;
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

/* A positive decimal number at *s (advanced past it); -1 if none. */
static int64_t spec_num(const char **s)
{
    int64_t v = 0;
    const char *q = *s;
    while (*q >= '0' && *q <= '9' && v < 1000000)
        v = v * 10 + (*q++ - '0');
    if (q == *s || v < 1)
        return -1;
    *s = q;
    return v;
}

/* Apply one work_div override "KERNEL=SPEC": the split goes into the
 * kernel's be_work, where its *_plan function checks that the kernel can
 * take it. */
static int workdiv_override(be_ctx *c, const char *text)
{
    ir_prog *p = c->p;
    const char *s = text, *eq = strchr(text, '=');
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = eq ? (size_t)(eq - s) : 0;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (!eq || !n)
        return be_error(c, NULL,
                        "work_div \"%s\": expected KERNEL=SPEC (SPEC GMxGN[xGK|r][/MBxNBSxKC][+nokeep] for a matmul, "
                        "CORES[/ROWS][+nokeep] for a row kernel)",
                        text);
    int pos = -1;
    for (int i = 0; i < p->norder && pos < 0; i++) {
        const char *name = p->kernels[p->order[i]].name;
        if (strlen(name) == n && !strncmp(name, s, n))
            pos = i;
    }
    if (pos < 0) {
        size_t o = (size_t)snprintf(c->err, c->errlen, "work_div \"%s\": no kernel %.*s (the kernels are", text, (int)n, s);
        for (int i = 0; i < p->norder && o < c->errlen; i++)
            o += (size_t)snprintf(c->err + o, c->errlen - o, "%s %s", i ? "," : "", p->kernels[p->order[i]].name);
        if (o < c->errlen)
            snprintf(c->err + o, c->errlen - o, ")");
        return -1;
    }
    const ir_kernel *K = &p->kernels[p->order[pos]];
    const char *q = eq + 1;
    while (*q == ' ' || *q == '\t')
        q++;
    const char *spec = q;
    int64_t a = spec_num(&q), b = 1;
    int ring = 0;
    int64_t gk = 1;
    if (K->kind == IR_MATMUL && a > 0 && (*q == 'x' || *q == 'X')) {
        q++;
        b = spec_num(&q);
        if (b > 0 && (*q == 'x' || *q == 'X')) { /* K parts: split-K */
            q++;
            gk = spec_num(&q);
        }
        if (b > 0 && gk == 1 && *q == 'r') { /* B broadcast over the ring */
            ring = 1;
            q++;
        }
    } else if (K->kind == IR_MATMUL) {
        b = -1;
    }
    /* a forced tiling: /MBxNBSxKC (block rows, block sticks, K chunk rows) or /ROWS (rows per chunk) */
    int64_t t[3] = {0, 0, 0};
    if (a > 0 && b > 0 && *q == '/') {
        q++;
        for (int i = 0; i < (K->kind == IR_MATMUL ? 3 : 1); i++) {
            if (i && *q != 'x' && *q != 'X') {
                t[i] = -1;
                break;
            }
            q += i > 0;
            t[i] = spec_num(&q);
        }
    }
    /* +nokeep: nothing this kernel reads or writes stays in LX across kernels */
    int nokeep = 0;
    if (!strncmp(q, "+nokeep", 7)) {
        nokeep = 1;
        q += 7;
    }
    while (*q == ' ' || *q == '\t')
        q++;
    if (a < 1 || b < 1 || gk < 1 || t[0] < 0 || t[1] < 0 || t[2] < 0 || *q)
        return be_error(c, K, "work_div \"%s\": %s", spec,
                        K->kind == IR_MATMUL ? "a matmul kernel takes GMxGN (M parts x N parts, e.g. 2x4), GMxGNxGK (K "
                                               "in GK parts too, e.g. 1x4x8), GMx1r (B "
                                               "broadcast over the ring) or GMxGNr (a grid over the ring, e.g. 8x4r), optionally /MBxNBSxKC (block rows x block "
                                               "sticks x K chunk rows, e.g. 2x4/64x4x256), optionally +nokeep"
                                             : "a row kernel takes a core count (e.g. 16), optionally /ROWS (rows per "
                                               "chunk, e.g. 16/32), optionally +nokeep");
    if (ring && a * b != (int64_t)c->cfg->cores)
        return be_error(c, K, "work_div \"%s\": a matmul over the ring takes every core (%ux1r, or GMxGNr with GM x "
                        "GN = %u) on %s", spec, (unsigned)c->cfg->cores, (unsigned)c->cfg->cores, c->cfg->name);
    if (a * b * gk > (int64_t)c->cfg->cores)
        return be_error(c, K, "work_div \"%s\" uses %" PRId64 " cores, more than the %u of %s", spec, a * b * gk,
                        (unsigned)c->cfg->cores, c->cfg->name);
    be_work *w = &c->work[pos];
    if (K->kind == IR_MATMUL) {
        w->gm = a;
        w->gn = b;
        w->mb = t[0];
        w->nbs = t[1];
        w->kc = t[2];
        w->bcast = ring;
        w->gk = gk;
    } else {
        w->cores = (int)a;
        w->chunk = t[0];
    }
    w->nokeep = nokeep;
    state_of(c)->k[pos].forced = 1;
    return 0;
}

/* The share of LX a kernel is asked to tile into when tensors kept
 * across kernels need the rest: half, an even trade between a kernel's
 * double buffers and what stays on chip (docs/compiler.md). */
#define LX_KERNEL_SHARE 0.5

/* Split row kernel pos like the earlier kernel that writes a tensor it
 * reads, so that the tensor can stay in LX between them, when its cost
 * model says the other core count costs less than the tensor's round
 * trip through DRAM (its bytes at the chip's DRAM rate, written and read).
 * writer[b]: the position that writes buffer b aligned, or -1. */
static void align_rows(be_ctx *c, int pos, const int *writer)
{
    be_work *w = &c->work[pos];
    be_access *acc = NULL;
    int n = 0;
    if (state_of(c)->k[pos].forced || be_rows_access(c, pos, &acc, &n))
        return;
    double now = be_rows_estimate(c, pos, w->cores), best = 0;
    int to = -1;
    for (int a = 0; a < n; a++) {
        int src = acc[a].write || !acc[a].aligned ? -1 : writer[acc[a].buf];
        if (src < 0 || c->work[src].cores == w->cores || c->work[src].cores > w->rows)
            continue;
        /* a core's part must fit the LX kept tensors can have */
        const be_layout *L = &c->lay[acc[a].buf];
        int64_t part = cc_ceil_div(L->rows, c->work[src].cores) * L->groups * c->t.stick;
        if ((double)part > (double)c->cfg->lx_usable_bytes * (1 - LX_KERNEL_SHARE))
            continue;
        double cost = be_rows_estimate(c, pos, c->work[src].cores) - now;
        double trip = c->t.dram_bytes_per_cycle > 0 ? 2.0 * (double)be_buf_bytes(c, acc[a].buf) / c->t.dram_bytes_per_cycle : 0;
        if (cost < trip && trip - cost > best) {
            best = trip - cost;
            to = src;
        }
    }
    free(acc);
    if (to >= 0) {
        w->cores = c->work[to].cores;
        w->aligned_to = to + 1;
    }
}

int be_workdiv_pass(ir_prog *p)
{
    be_ctx *c = p->be;
    for (int h = 0; h < p->opts.nwork_div; h++)
        if (workdiv_override(c, p->opts.work_div[h]))
            return -1;
    const int keep = !p->opts.no_lx_plan && !p->opts.no_lx_keep;
    int *writer = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *writer);
    for (int b = 0; b < p->nbufs; b++)
        writer[b] = -1;
    for (int i = 0; i < p->norder; i++) {
        const int matmul = p->kernels[p->order[i]].kind == IR_MATMUL;
        int rc = matmul ? be_matmul_plan(c, i) : be_rows_plan(c, i);
        if (!rc && keep && !matmul) {
            int cores = c->work[i].cores;
            align_rows(c, i, writer);
            if (c->work[i].cores != cores)
                rc = be_rows_plan(c, i); /* again, on the aligned cores */
        }
        be_access *acc = NULL;
        int n = 0;
        if (!rc && keep)
            rc = (matmul ? be_matmul_access : be_rows_access)(c, i, &acc, &n);
        for (int a = 0; a < n; a++)
            if (acc[a].write)
                writer[acc[a].buf] = acc[a].aligned ? i : -1;
        free(acc);
        if (rc) {
            free(writer);
            return -1;
        }
    }
    free(writer);
    return 0;
}

/* ---- codegen ---- */

/* What kernel pos's instructions (from first[core] on) move between DRAM
 * and LX, and the most LX a core allocated for it. */
static void measure(be_ctx *c, int pos, const size_t *first)
{
    be_kinfo *ki = &state_of(c)->k[pos];
    for (int core = 0; core < (int)c->cfg->cores; core++) {
        const isa_stream *s = c->em[core].s;
        for (size_t j = first[core]; j < s->n; j++) {
            const isa_insn *in = &s->insns[j];
            if (in->op == ISA_OP_LOOP)
                ki->loops = 1;
            if (in->op != ISA_OP_DMA_LD && in->op != ISA_OP_DMA_ST)
                continue;
            int64_t sticks = in->run;
            for (int l = 0; l < ISA_MAX_LOOPS; l++)
                sticks *= in->n[l] > 1 ? in->n[l] : 1;
            *(in->op == ISA_OP_DMA_LD ? &ki->dram_rd : &ki->dram_wr) += sticks * c->t.stick;
        }
        if ((int64_t)c->em[core].lx_top > ki->lx_max)
            ki->lx_max = (int64_t)c->em[core].lx_top;
    }
}

int64_t be_lx_budget(const be_ctx *c, int pos)
{
    return c->lx_floor ? c->lx_floor[pos] : (int64_t)c->cfg->lx_usable_bytes;
}

/* The ring exchange of kept tensor buf before the kernel at pos (NULL: none). */
static const be_xreg *res_xreg(const be_ctx *c, int buf, int pos)
{
    const be_res *r = c->res ? &c->res[buf] : NULL;
    for (int i = 0; r && i < r->nx; i++)
        if (r->x[i].pos == pos)
            return &r->x[i];
    return NULL;
}

/* The rows of a tensor of `rows` rows that core p holds under a split
 * over pc cores and core k reads under a split over qc cores: [*lo, *hi)
 * (empty when *lo >= *hi), and the first rows of the two parts, *p0 and
 * *q0. */
static void xchg_share(int64_t rows, int64_t pc, int64_t p, int64_t qc, int64_t k, int64_t *p0, int64_t *q0,
                       int64_t *lo, int64_t *hi)
{
    int64_t pn, qn;
    cc_split(rows, pc, p, p0, &pn);
    cc_split(rows, qc, k, q0, &qn);
    *lo = cc_max(*p0, *q0);
    *hi = cc_min(*p0 + pn, *q0 + qn);
}

/* The ring exchanges before the kernel at pos (be_xreg), as a kernel of
 * their own, "NAME.xchg": every core holding rows of such a tensor sends
 * each reader core its share (a dma.lx to itself); a bar then orders
 * them before the kernel, which reads the region with no tokens. */
static void xchg_emit(be_ctx *c, int pos)
{
    const ir_prog *p = c->p;
    const int ncores = c->cfg->cores;
    const int64_t sb = c->t.stick;
    char name[ISA_NAME_MAX];
    snprintf(name, sizeof name, "%s.xchg", p->kernels[p->order[pos]].name);
    int any = 0;
    for (int b = 0; b < p->nbufs; b++) {
        const be_res *r = &c->res[b];
        const be_xreg *x = res_xreg(c, b, pos);
        if (!x)
            continue;
        any = 1;
        const int64_t rows = c->lay[b].rows, G = c->lay[b].groups;
        for (int core = 0; core < r->cores; core++) {
            cc_emit *e = &c->em[core];
            for (int k = 0; k < x->cores; k++) {
                int64_t p0, q0, lo, hi;
                for (xchg_share(rows, r->cores, core, x->cores, k, &p0, &q0, &lo, &hi); lo < hi; lo += 65535) {
                    const int64_t n = cc_min(65535, hi - lo);
                    const isa_addr d = cc_abs(x->lx + (lo - q0) * sb), a = cc_abs(r->lx + (lo - p0) * sb);
                    cc_dma_shape sh = cc_dma_groups(n, G, x->rows_cap * sb, r->rows_cap * sb);
                    if (!e->kname)
                        cc_kernel_begin(e, name);
                    if (k == core)
                        cc_emit_dma(e, ISA_OP_DMA_LX, d, a, &sh);
                    else
                        cc_emit_ring(e, ISA_OP_RING_SEND, k, 255, d, a, &sh);
                }
            }
        }
    }
    for (int core = 0; core < ncores && any; core++) {
        if (c->em[core].kname)
            cc_kernel_end(&c->em[core]);
        cc_emit_bar(&c->em[core]);
    }
}

/* Emit every kernel into prog (the program's streams, or a scratch
 * program for the LX plan's dry runs): a fence or a bar between kernels
 * (bd_needs_bar), each kernel tiled into the LX below the tensors kept
 * there.  need (dry runs): per position, the most LX a core's kernel
 * code allocated, -1 where the kernel did not fit (the run goes on).
 * report: the report's figures.  only (dry runs): the kernels to emit
 * (NULL: all). */
static int emit_all(be_ctx *c, isa_program *prog, int64_t *need, int report, const char *only)
{
    ir_prog *p = c->p;
    const int ncores = c->cfg->cores;
    for (int core = 0; core < ncores; core++)
        cc_emit_begin(&c->em[core], c->cfg, prog, core, p->err, p->errlen);
    bd_state bd;
    bd_begin(&bd, c);
    for (int i = 0; i < p->norder; i++) {
        if (only && !only[i])
            continue;
        /* A fence before every kernel after the first, made a bar once the
         * kernel's instructions show a dependency across cores: the fence
         * orders a kernel that reads this core's earlier results, and since
         * each kernel numbers its tokens from 0, without it a unit of the
         * next kernel could take a token signalled for a unit still running
         * this one. */
        if (i > 0)
            for (int core = 0; core < ncores; core++)
                cc_emit_fence(&c->em[core]);
        size_t *first = ir_xalloc((size_t)ncores * sizeof *first);
        for (int core = 0; core < ncores; core++) {
            first[core] = c->em[core].s->n;
            c->em[core].lx_top = 0;
            c->em[core].lx_limit = (uint64_t)c->lx_floor[i];
        }
        c->pos = i;
        xchg_emit(c, i);
        int rc = p->kernels[p->order[i]].kind == IR_MATMUL ? be_matmul_emit(c, i) : be_rows_emit(c, i);
        for (int core = 0; core < ncores && !rc; core++)
            if (cc_emit_failed(&c->em[core]))
                rc = -1;
        /* code that failed half way (a dry run goes on) is not analysed:
         * a bar, and the program is not run */
        char why[160] = "the kernel's code failed";
        for (int core = 0; core < ncores && !rc; core++)
            bd_collect(&bd, c->em[core].s, first[core], core);
        const int bar = rc || bd_needs_bar(&bd, why, sizeof why);
        bd_record(&bd, bar);
        for (int core = 0; core < ncores && i > 0 && bar; core++) {
            /* fence and bar have no operands: the placeholder becomes a bar in place */
            isa_insn *in = &c->em[core].s->insns[first[core] - 1];
            assert(in->op == ISA_OP_FENCE);
            in->op = ISA_OP_BAR;
        }
        if (report) {
            state_of(c)->k[i].bar = i > 0 && bar;
            snprintf(state_of(c)->k[i].boundary, sizeof state_of(c)->k[i].boundary, "%s", bar ? why : "");
        }
        if (!rc && report)
            measure(c, i, first);
        for (int core = 0; core < ncores && need; core++) {
            need[i] = rc ? -1 : cc_max(need[i], (int64_t)c->em[core].lx_top);
            c->em[core].failed = 0;
            c->em[core].kname = NULL;
        }
        free(first);
        if (rc && !need) {
            bd_free(&bd);
            return -1;
        }
    }
    bd_free(&bd);
    for (int core = 0; core < ncores; core++) {
        cc_emit_halt(&c->em[core]);
        if (cc_emit_failed(&c->em[core]))
            return -1;
    }
    return 0;
}

/* ---- lxplan: tensors kept in LX across kernels ----
 *
 * A result stays in LX from its producer to a later kernel when both
 * walk it aligned (be_access) and split its rows over the same number of
 * cores: each core then keeps exactly the rows it wrote and later reads.
 * The plan walks the kernels in order.  A new result gets the highest LX
 * range that is free and lies above the working LX (measured by a dry
 * run of codegen) of every kernel it lives through; when none is free,
 * of it and the tensors already kept the one read again furthest in the
 * future leaves LX (Belady): a kept tensor "spills" (its producer also
 * writes it to DRAM, and its later readers reload it from there), the new
 * one simply goes to DRAM.
 *
 * A later kernel that walks the tensor aligned but splits its rows over
 * another number of cores gets it by a ring exchange (be_xreg) when that
 * is estimated cheaper than the DRAM round trip and its region fits LX
 * above the kernel's working LX; otherwise it reads DRAM. */

typedef struct {
    int *uses;    /* positions that read it aligned, ascending */
    int nuses;
    int *xuses;   /* positions that read it aligned on another number of cores (a ring exchange) */
    int nxuses;
    int producer; /* position that writes it aligned (-1: none) */
    int cores;    /* the producer's cores */
    int other;    /* read or written some other way: DRAM needed */
} lx_cand;

int be_res_reads(const be_ctx *c, int buf, int pos)
{
    const be_res *r = c->res ? &c->res[buf] : NULL;
    if (res_xreg(c, buf, pos))
        return 1;
    if (!r || !r->on || pos <= r->from || pos > r->to)
        return 0;
    for (int i = 0; i < r->nuses; i++)
        if (r->uses[i] == pos)
            return 1;
    return 0; /* it reads the tensor some other way, or on other cores: from DRAM */
}

void be_res_at(const be_ctx *c, int buf, int pos, int64_t *lx, int64_t *rows_cap)
{
    const be_xreg *x = res_xreg(c, buf, pos);
    *lx = x ? x->lx : c->res[buf].lx;
    *rows_cap = x ? x->rows_cap : c->res[buf].rows_cap;
}

int be_res_writes(const be_ctx *c, int buf, int pos)
{
    const be_res *r = c->res ? &c->res[buf] : NULL;
    return r && r->on && r->from == pos;
}

void be_res_copy(be_ctx *c, cc_emit *e, int store, int buf, int64_t i0, int64_t n, int64_t g0, int64_t G, int64_t lx,
                 int64_t gs)
{
    int64_t at, cap;
    be_res_at(c, buf, store ? -1 : c->pos, &at, &cap);
    const int64_t sb = c->t.stick, part = at + (g0 * cap + i0) * sb;
    assert((c->res[buf].on || res_xreg(c, buf, c->pos)) && i0 >= 0 && i0 + n <= cap);
    cc_dma_shape sh = cc_dma_groups(n, G, store ? cap * sb : gs, store ? gs : cap * sb);
    cc_emit_dma(e, store ? ISA_OP_DMA_LXS : ISA_OP_DMA_LX, cc_abs(store ? part : lx), cc_abs(store ? lx : part), &sh);
}

/* The next position >= pos that reads candidate x aligned (INT_MAX: none). */
static int next_use(const lx_cand *x, int pos)
{
    int n = INT_MAX;
    for (int i = 0; i < x->nuses; i++)
        if (x->uses[i] >= pos && x->uses[i] < n)
            n = x->uses[i];
    for (int i = 0; i < x->nxuses; i++)
        if (x->xuses[i] >= pos && x->xuses[i] < n)
            n = x->xuses[i];
    return n;
}

/* The last position that reads candidate x from LX (-1: none). */
static int last_use(const lx_cand *x)
{
    return cc_max(x->nuses ? x->uses[x->nuses - 1] : -1, x->nxuses ? x->xuses[x->nxuses - 1] : -1);
}

/* The highest stick-aligned range of `bytes` in [floor, top) that no
 * region of the tensors in LX at pos overlaps; -1 when none. */
static int64_t lx_fit(const be_ctx *c, int pos, int64_t floor, int64_t top, int64_t bytes)
{
    const ir_prog *p = c->p;
    int64_t hi = top;
    for (;;) {
        int64_t lo = hi - bytes;
        if (lo < floor)
            return -1;
        int64_t clash = -1; /* the lowest start of a region overlapping [lo, hi) */
        for (int b = 0; b < p->nbufs; b++) {
            const be_res *r = &c->res[b];
            if (r->on && r->from <= pos && pos <= r->to && r->lx < hi && lo < r->lx + r->bytes)
                clash = clash < 0 || r->lx < clash ? r->lx : clash;
            const be_xreg *x = res_xreg(c, b, pos);
            if (x && x->lx < hi && lo < x->lx + x->bytes)
                clash = clash < 0 || x->lx < clash ? x->lx : clash;
        }
        if (clash < 0)
            return lo;
        hi = clash;
    }
}

static void lx_free(const be_ctx *c, lx_cand *x);

/* Per buffer: who writes it aligned and which later kernels read it
 * aligned on the same cores (the tensors that could stay in LX); NULL
 * with an error. */
static lx_cand *lx_candidates(be_ctx *c)
{
    ir_prog *p = c->p;
    lx_cand *x = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *x);
    int *reads = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *reads), *writes = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *writes);
    int rc = 0;
    for (int b = 0; b < p->nbufs; b++) {
        x[b].producer = -1;
        x[b].other = p->bufs[b].output || p->bufs[b].kind != IR_BUF_COMPUTED;
    }
    for (int i = 0; i < p->norder && !rc; i++) {
        int nr, nw, na = 0;
        be_access *acc = NULL;
        ir_kernel_io(p, p->order[i], reads, &nr, writes, &nw);
        if ((p->kernels[p->order[i]].kind == IR_MATMUL ? be_matmul_access : be_rows_access)(c, i, &acc, &na)) {
            rc = -1;
            break;
        }
        for (int j = 0; j < nr + nw; j++) {
            const int b = j < nr ? reads[j] : writes[j - nr], write = j >= nr;
            if (!c->lay[b].dram)
                continue;
            int aligned = na > 0;
            for (int a = 0; a < na; a++)
                if (acc[a].buf == b && acc[a].write == write)
                    aligned &= acc[a].aligned;
            int found = 0;
            for (int a = 0; a < na; a++)
                found |= acc[a].buf == b && acc[a].write == write;
            if (!found || !aligned || c->work[i].nokeep) {
                x[b].other = 1;
            } else if (write) {
                x[b].producer = i;
                x[b].cores = c->work[i].cores;
            } else if (x[b].producer >= 0 && c->work[i].cores == x[b].cores) {
                x[b].uses = ir_xgrow(x[b].uses, &(int){x[b].nuses}, x[b].nuses + 1, sizeof *x[b].uses);
                x[b].uses[x[b].nuses++] = i;
            } else if (x[b].producer >= 0) {
                x[b].xuses = ir_xgrow(x[b].xuses, &(int){x[b].nxuses}, x[b].nxuses + 1, sizeof *x[b].xuses);
                x[b].xuses[x[b].nxuses++] = i;
            } else {
                x[b].other = 1;
            }
        }
        free(acc);
    }
    free(reads);
    free(writes);
    if (rc)
        lx_free(c, x);
    return rc ? NULL : x;
}

static void lx_free(const be_ctx *c, lx_cand *x)
{
    for (int b = 0; b < c->p->nbufs; b++) {
        free(x[b].uses);
        free(x[b].xuses);
    }
    free(x);
}

/* Estimated cycles of the ring exchange of kept tensor b to the kernel
 * at pos: the busier of the busiest sender (one transfer per reader core
 * its rows reach, or a local copy) and the busiest ring link (each
 * transfer the shorter way round), and the bar after them. */
static double xchg_cost(const be_ctx *c, int b, int pos)
{
    const be_res *r = &c->res[b];
    const int n = c->cfg->cores;
    const int64_t rows = c->lay[b].rows, bytes_row = c->lay[b].groups * c->t.stick, qc = c->work[pos].cores;
    double *link = ir_xalloc((size_t)(2 * n) * sizeof *link), worst = 0;
    for (int core = 0; core < r->cores; core++) {
        double t = 0;
        for (int k = 0; k < qc; k++) {
            int64_t p0, q0, lo, hi;
            xchg_share(rows, r->cores, core, qc, k, &p0, &q0, &lo, &hi);
            if (lo >= hi)
                continue;
            const double bytes = (double)((hi - lo) * bytes_row);
            t += c->t.dma_insn_cycles + bytes / c->cfg->ring_bytes_per_cycle;
            const int cw = ((k - core) % n + n) % n, dir = cw <= n - cw ? 0 : 1, hops = dir ? n - cw : cw;
            for (int h = 0, stop = core; h < hops; h++, stop = ((dir ? stop - 1 : stop + 1) % n + n) % n)
                link[dir * n + stop] += bytes;
        }
        worst = worst > t ? worst : t;
    }
    for (int l = 0; l < 2 * n; l++)
        worst = worst > link[l] / c->cfg->ring_bytes_per_cycle ? worst : link[l] / c->cfg->ring_bytes_per_cycle;
    free(link);
    return worst + c->cfg->barrier_cycles;
}

/* A ring exchange of kept tensor b to the kernel at pos, which reads it
 * split over another number of cores: planned when it is estimated
 * cheaper than the DRAM round trip (the write only if nothing else needs
 * the tensor in DRAM) and its region fits above the kernel's working LX
 * (floor); otherwise the kernel reads DRAM, so the producer writes it. */
static void xchg_plan(be_ctx *c, int b, int pos, int64_t floor, int64_t top)
{
    be_res *r = &c->res[b];
    if (!r->on || pos <= r->from || pos > r->to)
        return; /* not kept (or spilled) by now: DRAM already */
    const int64_t qc = c->work[pos].cores, rows = c->lay[b].rows, sb = c->t.stick;
    be_xreg xr = {pos, (int)qc, 0, cc_ceil_div(rows, qc), cc_ceil_div(rows, qc) * c->lay[b].groups * sb, 0, 0};
    const double bytes = (double)(rows * c->lay[b].groups * sb);
    xr.est = xchg_cost(c, b, pos);
    xr.dram_est = c->t.dram_bytes_per_cycle > 0 ? bytes * (r->dram ? 1 : 2) / c->t.dram_bytes_per_cycle : 0;
    xr.lx = xr.est < xr.dram_est ? lx_fit(c, pos, floor, top, xr.bytes) : -1;
    if (xr.lx < 0) {
        r->dram = 1;
        return;
    }
    r->x = ir_xgrow(r->x, &(int){r->nx}, r->nx + 1, sizeof *r->x);
    r->x[r->nx++] = xr;
}

/* Place the candidates x in LX, kernel by kernel (need: each kernel's
 * working LX). */
static void lx_plan(be_ctx *c, lx_cand *x, const int64_t *need)
{
    ir_prog *p = c->p;
    const int64_t sb = c->t.stick, top = (int64_t)c->cfg->lx_usable_bytes / sb * sb;
    for (int i = 0; i < p->norder; i++) {
        for (int b = 0; b < p->nbufs; b++)
            for (int k = 0; k < x[b].nxuses; k++)
                if (x[b].xuses[k] == i)
                    xchg_plan(c, b, i, cc_round_up(need[i], sb), top);
        for (int b = 0; b < p->nbufs; b++) {
            if (x[b].producer != i || last_use(&x[b]) < 0)
                continue;
            be_res *r = &c->res[b];
            const be_layout *L = &c->lay[b];
            r->from = i;
            r->to = last_use(&x[b]);
            r->cores = x[b].cores;
            r->rows_cap = cc_ceil_div(L->rows, x[b].cores);
            r->bytes = r->rows_cap * L->groups * sb;
            r->dram = x[b].other;
            int64_t floor = 0;
            for (int k = r->from; k <= r->to; k++)
                floor = cc_max(floor, cc_round_up(need[k], sb));
            for (;;) {
                int64_t at = lx_fit(c, i, floor, top, r->bytes);
                if (at >= 0) {
                    r->on = 1;
                    r->lx = at;
                    r->nuses = x[b].nuses;
                    r->uses = ir_xalloc((size_t)(r->nuses + 1) * sizeof *r->uses);
                    if (r->nuses) /* none: read only by ring exchanges */
                        memcpy(r->uses, x[b].uses, (size_t)r->nuses * sizeof *r->uses);
                    break;
                }
                /* Belady: of the tensors in LX and this one, the one read again furthest away leaves */
                int victim = b, far = next_use(&x[b], i + 1);
                for (int v = 0; v < p->nbufs; v++) {
                    const be_res *q = &c->res[v];
                    if (v != b && q->on && q->from < i && i <= q->to && next_use(&x[v], i) > far) {
                        far = next_use(&x[v], i);
                        victim = v;
                    }
                }
                if (victim == b) {
                    r->dram = 1;
                    break;
                }
                be_res *q = &c->res[victim];
                q->to = i - 1;
                q->spilled = 1;
                q->dram = 1;
                q->on = q->to > q->from; /* no reader left in LX: it simply goes to DRAM */
            }
        }
    }
    /* a region ends at its last reader from LX: exchanges that fell to
     * DRAM leave it shorter, or with none, not kept at all */
    for (int b = 0; b < p->nbufs; b++) {
        be_res *r = &c->res[b];
        int last = -1;
        for (int k = 0; r->on && k < r->nuses; k++)
            if (r->uses[k] <= r->to)
                last = cc_max(last, r->uses[k]);
        for (int k = 0; r->on && k < r->nx; k++)
            last = cc_max(last, r->x[k].pos);
        if (r->on && last < 0)
            r->on = 0;
        else if (r->on)
            r->to = last;
    }
}

/* ... when its estimate grows by at most this (row kernels: chunks
 * smaller than a quarter of a core's part only add DMA instructions) */
#define LX_SHRINK_COST 0.02

int be_codegen_pass(ir_prog *p)
{
    be_ctx *c = p->be;
    const int ncores = c->cfg->cores;
    c->em = ir_xalloc((size_t)ncores * sizeof *c->em);
    c->res = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *c->res);
    c->lx_floor = ir_xalloc((size_t)(p->norder + 1) * sizeof *c->lx_floor);
    for (int i = 0; i < p->norder; i++)
        c->lx_floor[i] = (int64_t)c->cfg->lx_usable_bytes;
    lx_cand *x = p->opts.no_lx_plan || p->opts.no_lx_keep ? NULL : lx_candidates(c);
    if (!x && !p->opts.no_lx_plan && !p->opts.no_lx_keep)
        return -1;
    /* the kernels a candidate would live through: only their working LX matters */
    char *live = ir_xalloc((size_t)(p->norder + 1));
    int any = 0;
    for (int b = 0; x && b < p->nbufs; b++)
        for (int i = x[b].producer; i >= 0 && i <= last_use(&x[b]); i++)
            any = live[i] = 1;
    if (any) {
        /* Dry runs measure those kernels' working LX, tiled into all of LX
         * and into LX_KERNEL_SHARE of it; the plan keeps the smaller free
         * (the larger where only it fits).  A kernel is tiled into the LX
         * the kept tensors leave it, so a kernel with none keeps all. */
        int64_t *need = ir_xalloc((size_t)(p->norder + 1) * sizeof *need);
        int64_t *small = ir_xalloc((size_t)(p->norder + 1) * sizeof *small);
        isa_program *dry = isa_program_new(ncores), *dry2 = isa_program_new(ncores);
        if (!dry || !dry2)
            abort();
        double *est = ir_xalloc((size_t)(p->norder + 1) * sizeof *est);
        int rc = emit_all(c, dry, need, 0, live);
        for (int i = 0; i < p->norder && !rc; i++) {
            rc = need[i] < 0; /* the error is the kernel's own */
            if (live[i] && p->kernels[p->order[i]].kind == IR_MATMUL)
                est[i] = be_matmul_estimate(c, i);
            c->lx_floor[i] = (int64_t)(c->cfg->lx_usable_bytes * LX_KERNEL_SHARE) / c->t.stick * c->t.stick;
        }
        if (!rc) {
            p->err[0] = 0;
            rc = emit_all(c, dry2, small, 0, live);
        }
        /* the smaller tiling only where the cost model sees it cost
         * nothing: a matmul's smaller blocks can re-read operands */
        for (int i = 0; i < p->norder && !rc; i++) {
            if (live[i] && small[i] >= 0 && !c->work[i].bcast &&
                (p->kernels[p->order[i]].kind != IR_MATMUL || be_matmul_estimate(c, i) <= est[i] * (1 + LX_SHRINK_COST)))
                need[i] = small[i];
            c->lx_floor[i] = (int64_t)c->cfg->lx_usable_bytes;
        }
        free(est);
        if (!rc) {
            p->err[0] = 0; /* a kernel that did not fit in the smaller share */
            lx_plan(c, x, need);
        }
        isa_program_free(dry);
        isa_program_free(dry2);
        free(need);
        free(small);
        if (rc) {
            free(live);
            lx_free(c, x);
            return -1;
        }
        for (int b = 0; b < p->nbufs; b++) {
            const be_res *r = &c->res[b];
            for (int i = r->from; r->on && i <= r->to; i++)
                c->lx_floor[i] = cc_min(c->lx_floor[i], r->lx);
            for (int k = 0; k < r->nx; k++)
                c->lx_floor[r->x[k].pos] = cc_min(c->lx_floor[r->x[k].pos], r->x[k].lx);
        }
    }
    free(live);
    if (x)
        lx_free(c, x);
    return emit_all(c, c->prog, NULL, 1, NULL);
}

void be_free(ir_prog *p)
{
    be_ctx *c = p->be;
    if (!c)
        return;
    be_state *st = state_of(c);
    free(c->lay);
    free(c->work);
    free(c->em);
    for (int b = 0; c->res && b < p->nbufs; b++) {
        free(c->res[b].uses);
        free(c->res[b].x);
    }
    free(c->res);
    free(c->lx_floor);
    isa_program_free(c->prog);
    be_reroll_free(c);
    free(st->k);
    free(st);
    p->be = NULL;
}

/* ---- dumps ---- */

/* "TOTAL UNIT whole", "... in N parts of Q", "... of Q or Q-1 (uneven)". */
static void print_split(FILE *f, const char *dim, int64_t total, int64_t parts, const char *unit)
{
    if (parts <= 1)
        fprintf(f, "%s %" PRId64 " %s whole", dim, total, unit);
    else if (total % parts == 0)
        fprintf(f, "%s %" PRId64 " %s in %" PRId64 " parts of %" PRId64, dim, total, unit, parts, total / parts);
    else
        fprintf(f, "%s %" PRId64 " %s in %" PRId64 " parts of %" PRId64 " or %" PRId64 " (uneven edge)", dim, total,
                unit, parts, total / parts + 1, total / parts);
}

static void print_names(const ir_prog *p, FILE *f, const int *b, int n, int dram, const be_layout *lay, int *printed)
{
    for (int i = 0; i < n; i++)
        if (!lay[b[i]].dram == !dram)
            fprintf(f, "%s %s", (*printed)++ ? "," : "", p->bufs[b[i]].name);
}

/* The report's lines on the tensors kernel pos keeps in LX for later
 * kernels, the ones it spills, and the spilled ones it reloads. */
static void print_kept(const be_ctx *c, FILE *f, int pos, const int *reads, int nr, const int *writes, int nw,
                       int *kept, int *spills, int *reloads)
{
    const ir_prog *p = c->p;
    int printed = 0;
    fputs("  kept in lx:", f);
    for (int j = 0; j < nw; j++) {
        const be_res *r = &c->res[writes[j]];
        if (!r->on || r->from != pos)
            continue;
        fprintf(f, "%s %s for %s..%s (%" PRId64 " bytes per core at lx %" PRId64 "%s)", printed++ ? "," : "",
                p->bufs[writes[j]].name, p->kernels[p->order[pos]].name, p->kernels[p->order[r->to]].name, r->bytes,
                r->lx, r->spilled ? "; spilled: also written to dram" : r->dram ? "; also written to dram" : "");
        (*kept)++;
        *spills += r->spilled;
    }
    fputs(printed ? "\n" : " none\n", f);
    printed = 0;
    for (int j = 0; j < nr; j++) {
        const be_res *r = &c->res[reads[j]];
        if (!r->spilled || pos <= r->to)
            continue;
        fprintf(f, "%s%s", printed++ ? ", " : "  reloads from dram (spilled): ", p->bufs[reads[j]].name);
        (*reloads)++;
    }
    if (printed)
        fputc('\n', f);
}

/* The back half's section of cc_compile_report (docs/compiler.md). */
static void print_report(const ir_prog *p, FILE *f)
{
    be_ctx *c = p->be;
    const be_state *st = state_of(c);
    int *reads = ir_xalloc((size_t)p->nbufs * sizeof *reads), *writes = ir_xalloc((size_t)p->nbufs * sizeof *writes);
    int nr, nw, maxcores = 0, nrestick = 0, loops = 0, kept = 0, spills = 0, reloads = 0, lxreads = 0, bars = 0, xchgs = 0;
    int64_t rd = 0, wr = 0, lx = 0;
    fprintf(f, "target %s (%d cores):\n", st->cfgname, st->ncores);
    for (int i = 0; i < p->norder; i++) {
        const ir_kernel *K = &p->kernels[p->order[i]];
        const be_work *w = &c->work[i];
        const be_kinfo *ki = &st->k[i];
        if (K->kind == IR_MATMUL) {
            int64_t gsticks = cc_ceil_div(w->cols, c->t.lanes16);
            char gk[32] = "", split[32];
            if (w->gk > 1)
                snprintf(gk, sizeof gk, "x%" PRId64, w->gk);
            snprintf(split, sizeof split, "%s%s%s%s%s", w->gm > 1 ? "m" : "", w->gm > 1 && w->gn > 1 ? " and " : "",
                     w->gn > 1 ? "n" : "", (w->gm > 1 || w->gn > 1) && w->gk > 1 ? " and " : "", w->gk > 1 ? "k" : "");
            fprintf(f, "%s: grid %" PRId64 "x%" PRId64 "%s%s on %d core%s%s, split %s; ", K->name, w->gm, w->gn, gk,
                    w->bcast ? "r" : "", w->cores, w->cores == 1 ? "" : "s", ki->forced ? " (work_div)" : "",
                    split[0] ? split : "nothing");
            if (w->bcast && w->gn > 1) { /* a grid over the ring: a part of M per core, gn to a grid row */
                print_split(f, "m:", w->rows, (int64_t)w->cores, "rows");
                fprintf(f, ", %" PRId64 " to a grid row", w->gn);
            } else {
                print_split(f, "m:", w->rows, w->gm, "rows");
            }
            fputs("; ", f);
            print_split(f, "n:", gsticks, w->gn, "sticks");
            if (w->gk > 1)
                fprintf(f, "; k in %" PRId64 " parts of whole sticks, partial sums reduced over the ring", w->gk);
            fputc('\n', f);
        } else {
            fprintf(f, "%s: rows over %d core%s%s%s%s%s, split %s; ", K->name, w->cores, w->cores == 1 ? "" : "s",
                    ki->forced ? " (work_div)" : "", w->aligned_to ? " (as " : "",
                    w->aligned_to ? p->kernels[p->order[w->aligned_to - 1]].name : "", w->aligned_to ? ", for LX)" : "",
                    w->cores > 1 ? "rows" : "nothing");
            print_split(f, "rows:", w->rows, w->cores, "rows");
            fprintf(f, "; %" PRId64 " columns whole\n", w->cols);
        }
        fprintf(f, "  tiles: %s\n", ki->tiles[0] ? ki->tiles : "none");
        ir_kernel_io(p, p->order[i], reads, &nr, writes, &nw);
        int printed = 0;
        fputs("  lx:", f);
        print_names(p, f, writes, nw, 0, c->lay, &printed);
        fputs(printed ? " (never leave the kernel)\n" : " none\n", f);
        printed = 0;
        fputs("  dram: reads", f);
        print_names(p, f, reads, nr, 1, c->lay, &printed);
        fputs(printed ? "; writes" : " none; writes", f);
        printed = 0;
        print_names(p, f, writes, nw, 1, c->lay, &printed);
        fputs(printed ? "\n" : " none\n", f);
        fprintf(f, "  restickified: %s\n", ki->restick[0] ? ki->restick : "none");
        print_kept(c, f, i, reads, nr, writes, nw, &kept, &spills, &reloads);
        fprintf(f, "  from lx: %s\n", ki->lxread[0] ? ki->lxread : "none");
        printed = 0;
        for (int b = 0; b < p->nbufs; b++) {
            const be_xreg *x = res_xreg(c, b, i);
            if (x)
                fprintf(f, "%s%s (%d -> %d cores, estimate %.0f cycles against %.0f through DRAM)",
                        printed++ ? ", " : "  ring exchange: ", p->bufs[b].name, c->res[b].cores, x->cores, x->est,
                        x->dram_est);
        }
        fputs(printed ? "\n" : "  ring exchange: none\n", f);
        xchgs += printed;
        lxreads += ki->nlxread;
        fprintf(f, "  dram bytes: %" PRId64 " read, %" PRId64 " written%s; lx up to %" PRId64 " bytes per core\n",
                ki->dram_rd, ki->dram_wr, ki->loops ? " (loop bodies counted once)" : "", ki->lx_max);
        if (i > 0)
            fprintf(f, "  before it: %s%s%s\n", ki->bar ? "bar (" : "fence", ki->bar ? ki->boundary : "",
                    ki->bar ? ")" : "");
        bars += ki->bar;
        rd += ki->dram_rd;
        wr += ki->dram_wr;
        lx = cc_max(lx, ki->lx_max);
        maxcores = w->cores > maxcores ? w->cores : maxcores;
        nrestick += ki->nrestick;
        loops |= ki->loops;
    }
    fprintf(f,
            "total on %s: %d kernel%s, up to %d cores, %" PRId64 " bytes read from DRAM, %" PRId64
            " bytes written%s, %d operand%s restickified, lx up to %" PRId64 " bytes per core\n",
            st->cfgname, p->norder, p->norder == 1 ? "" : "s", maxcores, rd, wr,
            loops ? " (loop bodies counted once)" : "", nrestick, nrestick == 1 ? "" : "s", lx);
    fprintf(f, "lx across kernels: %d tensor%s kept, %d read%s from lx, %d spill%s, %d reload%s from dram%s\n", kept,
            kept == 1 ? "" : "s", lxreads, lxreads == 1 ? "" : "s", spills, spills == 1 ? "" : "s", reloads,
            reloads == 1 ? "" : "s", p->opts.no_lx_plan ? " (--no-lx-plan)" : p->opts.no_lx_keep ? " (--no-lx-keep)" : "");
    fprintf(f, "ring exchanges between kernels: %d\n", xchgs);
    const int fences = p->norder > 1 ? p->norder - 1 - bars : 0;
    fprintf(f, "boundaries: %d bar%s, %d fence%s\n", bars, bars == 1 ? "" : "s", fences, fences == 1 ? "" : "s");
    free(reads);
    free(writes);
}

void be_print(const ir_prog *p, const char *pass, FILE *f)
{
    const be_ctx *c = p->be;
    if (!strcmp(pass, "report")) {
        print_report(p, f);
        return;
    }
    fprintf(f, "# %s after %s (target %s, %d cores)\n", p->gname, pass, c->cfg->name, c->cfg->cores);
    if (!strcmp(pass, "layout")) {
        for (size_t i = 0; i < c->prog->ntensors; i++) {
            const isa_tensor *T = &c->prog->tensors[i];
            fprintf(f, "tensor %s %s dims", T->name, isa_role_names[T->role]);
            for (int d = 0; d < T->rank; d++)
                fprintf(f, "%s%" PRId64, d ? "x" : " ", T->shape[d]);
            fprintf(f, " %s stick_dim %d at %llu bytes %llu\n", isa_dtype_names[T->dev_dtype], T->stick_dim,
                    (unsigned long long)T->dram_off, (unsigned long long)T->bytes);
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

isa_program *cc_codegen(const cc_result *r, const chip_config *cfg, char *err, size_t errlen)
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
    if (be_reroll_pass(p))
        goto done;
    if (dump && !strcmp(dump, "reroll"))
        be_reroll_print(p, "reroll", f);
    out = p->be->prog;
    p->be->prog = NULL;
    /* Keep the plan for the report; the emitters and the caller's error
     * buffer are no longer ours. */
    free(p->be->em);
    p->be->em = NULL;
    p->be->err = NULL;
    p->be->errlen = 0;
    p->be->cfg = NULL;
    p->be->t.cfg = NULL;
done:
    if (!out)
        be_free(p);
    p->err = oerr;
    p->errlen = olen;
    return out;
}
