/* be_matmul.c: MATMUL kernels with their epilogues: the plan, the grid
 * of cores and its emission (the schemes over the ring are be_ring.c, the
 * pieces of a block every scheme uses be_mmblock.c; be_matmul.h).
 *
 * Work division: per batch index, the output (M rows, N in sticks) is cut
 * into a gm x gn grid of core tiles (uneven edges allowed); a cost model
 * fed by the configuration (mm_estimate: the busier PT corelet's passes,
 * the core's DMA at its ring stop's rate, the epilogue's SFP work, and the
 * DRAM bytes the whole grid moves, re-reads counted, at the chip's DRAM
 * rate) picks the grid and each core's blocking, near-ties going to fewer
 * DRAM bytes.  Each core walks its tile in blocks of MB rows x NBS sticks,
 * K whole or in chunks with fp32 partial sums (batch dims outermost);
 * operands are read through their affine indices as DMA descriptors
 * (be_view), so transposed weights (B = W^T, the weight sticked on N by
 * the layout pass) and per-batch strided operands need no copy.  The two
 * PT corelets split each block by rows or by sticks at a fixed point.
 *
 * Per block, slot s of two, corelet u of nc:
 *   dmai: wait empty[s][u] (every u); load A (K/64 groups of MB sticks),
 *         B (NBS groups of K sticks) and the epilogue's tiles, columns,
 *         rows; a restickified A or B: only the sticks of its buffer this
 *         block's K chunk reads, staged after the slot's A and B parts
 *         (or, when the whole operand fits LX with the rest of the
 *         kernel, the sticks of the core's part staged once per core
 *         with the first chunk, sig wld once, which sfp0 waits for once);
 *         sig full[s][u] (every u)
 *   sfp0: (restickify) wait full[s][u]; sfp.rst the staged sticks into
 *         the A / B part; sig rst[s][u] (every u), which pt u waits for
 *   ptu:  wait full[s][u]; pt.mm of its part -> C[s] (DL16); sig
 *         empty[s][u], mmd[s][u]
 *   sfp0: wait mmd[s][u] (every u); the epilogue, one SFP instruction per
 *         expression node over the block (acc = C[s]); sig done[s]
 *   dmao: wait done[s]; store every result leaving the kernel; sig
 *         cempty[s][u] (every u) */
#include "be_matmul.h"

#include <assert.h>
#include <float.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static void mm_free(mm_plan *m)
{
    rk_free(&m->ep);
    free(m->wspan[0]);
    free(m->wspan[1]);
    be_mmmemo_grid_give(m->c, &m->gmemo);
}

/* Split K in gk parts of whole sticks: a core's share is at most Kc rows. */
static void mm_set_gk(mm_plan *m, int64_t gk)
{
    m->gk = gk;
    m->KGc = cc_ceil_div(m->KG, gk);
    m->Kc = cc_min(m->KGc * m->c->t.lanes16, m->Kd);
}

static void mm_span_add(const mm_plan *m, int buf, const ir_index *idx, int64_t b, int rowvar, int64_t r0,
                        int64_t nr, int lanevar, int64_t l0, int64_t nl, int64_t *lo, int64_t *hi);

void be_matmul_memos_free(be_ctx *c)
{
    for (int i = 0; c->wspan && i < 2 * c->p->norder; i++)
        free(c->wspan[i]);
    free(c->wspan);
    c->wspan = NULL;
    for (int i = 0; c->mmshape && i < c->p->norder; i++)
        if (c->mmshape[i]) {
            rk_free(&c->mmshape[i]->ep);
            free(c->mmshape[i]);
        }
    free(c->mmshape);
    c->mmshape = NULL;
}

/* m->wspan[w] for an operand staged whole (once a plan): walked row by
 * row of A, or stick by stick of B down all of K, adding to one span per
 * stick group as mm_core_span does.  The walk is the kernel's structure's
 * (its product's operands and their layouts, fixed from the layout pass
 * on), and every plan, estimate and codegen of the kernel asked it again
 * (a tenth of the Llama-8B decode step's compile, its K cache staged
 * whole): made once per kernel position (be_ctx.wspan) and copied. */
static void mm_whole_spans(mm_plan *m, int w)
{
    be_ctx *c = m->c;
    const int buf = w ? m->mm->b : m->mm->a;
    const ir_index *idx = w ? &m->mm->bidx : &m->mm->aidx;
    const be_layout *L = &c->lay[buf];
    const int64_t n = w ? m->GN : m->M, lanes = c->t.lanes16;
    const size_t size = (size_t)(n + 1) * sizeof *m->wspan[w];
    if (!c->wspan)
        c->wspan = ir_xalloc((size_t)(2 * c->p->norder + 1) * sizeof *c->wspan);
    int64_t **made = &c->wspan[2 * m->ep.pos + w];
    m->wspan[w] = ir_xmalloc(size);
    if (*made) {
        memcpy(m->wspan[w], *made, size);
        return;
    }
    int64_t *lo = ir_xmalloc((size_t)L->groups * 2 * sizeof *lo), *hi = lo + L->groups;
    m->wspan[w][0] = 0;
    be_span_init(L, lo, hi);
    for (int64_t i = 0; i < n; i++) {
        if (w)
            mm_span_add(m, buf, idx, 0, m->vk, 0, m->Kd, m->vn, i * lanes, cc_min(lanes, m->N - i * lanes), lo, hi);
        else
            mm_span_add(m, buf, idx, 0, m->vm, i, 1, m->vk, 0, m->Kd, lo, hi);
        m->wspan[w][i + 1] = be_span_count(L, lo, hi);
    }
    free(lo);
    *made = ir_xmalloc(size);
    memcpy(*made, m->wspan[w], size);
}

/* Stage the restickified operands of mask (bit 0 A, bit 1 B) whole, once
 * per core, the rest per block. */
static void mm_set_whole(mm_plan *m, int mask)
{
    m->aw = m->ag && (mask & 1);
    m->bw = m->bg && (mask & 2);
    m->whole_bytes = (m->aw ? be_buf_bytes(m->c, m->mm->a) : 0) + (m->bw ? be_buf_bytes(m->c, m->mm->b) : 0);
    for (int w = 0; w < 2 && m->M < m->c->cfg->pt_rows; w++) /* (mm_whole_share prices larger ones whole) */
        if ((w ? m->bw : m->aw) && !m->wspan[w])
            mm_whole_spans(m, w);
}

/* Does the lane variable of a restickified operand step across its
 * buffer's sticks (its two first elements not neighbours in one stick)? */
static int mm_across(const mm_plan *m, int buf, const ir_index *idx, int lanevar, int64_t extent)
{
    if (extent < 2)
        return 0;
    int64_t val[IR_MAX_VARS] = {0};
    int64_t o0 = be_elem_off(m->c, buf, be_index_at(idx, m->mm->nvars, val));
    val[lanevar] = 1;
    int64_t o1 = be_elem_off(m->c, buf, be_index_at(idx, m->mm->nvars, val));
    return o1 - o0 != 2;
}

/* The product's shape: batch dims, M, N and K, their sticks and the
 * operands' row spaces; the kernel's template node. */
static int mm_shape(be_ctx *c, int pos, mm_plan *m)
{
    ir_prog *p = c->p;
    const ir_kernel *K = &p->kernels[p->order[pos]];
    m->c = c;
    m->K = K;
    m->mm = &p->nodes[K->nodes[0]];
    const ir_node *mm = m->mm;
    if (mm->kind != IR_MATMUL)
        return be_error(c, K, "internal: a matmul kernel whose first node is not the template");
    m->nb = mm->nbatch;
    m->vm = m->nb;
    m->vn = m->nb + 1;
    m->vk = m->nb + 2;
    m->nbatch = 1;
    for (int i = 0; i < m->nb; i++)
        m->nbatch *= mm->ranges[i];
    m->M = mm->ranges[m->vm];
    m->N = mm->ranges[m->vn];
    m->Kd = mm->ranges[m->vk];
    m->GN = cc_ceil_div(m->N, c->t.lanes16);
    m->KG = cc_ceil_div(m->Kd, c->t.lanes16);
    mm_set_gk(m, 1);
    m->gb = 1;
    if (m->M > ISA_COUNT_MAX || m->N > ISA_COUNT_MAX || m->Kd > ISA_COUNT_MAX)
        return be_error(c, K, "matmul %" PRId64 " x %" PRId64 " x %" PRId64 " is larger than one pt.mm (not supported yet)",
                        m->M, m->N, m->Kd);
    for (int i = 0; i < m->nb; i++) {
        m->arsp.var[i] = m->brsp.var[i] = i;
        m->arsp.ext[i] = m->brsp.ext[i] = mm->ranges[i];
    }
    m->arsp.nv = m->brsp.nv = m->nb + 1;
    m->arsp.var[m->nb] = m->vm;
    m->arsp.ext[m->nb] = m->M;
    m->brsp.var[m->nb] = m->vk;
    m->brsp.ext[m->nb] = m->Kd;
    return 0;
}

/* A product with N (or K) of 1 has lost its lane variable's term (the
 * front half drops extent-1 terms); the variable only takes 0, so the
 * term is put back as a walk along the operand's last dimension of
 * extent 1 (x @ w with w of K x 1: its last; w^T of 1 x K: its first),
 * or else along its last dimension (a one-column slice). */
static void mm_lane_terms(mm_plan *m)
{
    ir_prog *p = m->c->p;
    const ir_kernel *K = m->K;
    const ir_node *mm = m->mm;
    ir_node *mmw = &p->nodes[K->nodes[0]];
    const int lanes_of[2] = {m->vk, m->vn};
    const int opbuf[2] = {mm->a, mm->b};
    ir_index *opidx[2] = {&mmw->aidx, &mmw->bidx};
    for (int o = 0; o < 2; o++) {
        const gr_ttype *T = &p->bufs[opbuf[o]].type;
        if (opidx[o]->coef[lanes_of[o]] != 0 || mm->ranges[lanes_of[o]] != 1)
            continue;
        int64_t stride = 1, coef = 0;
        for (int d = T->rank - 1; d >= 0 && !coef; d--) {
            if (T->shape[d] == 1)
                coef = stride;
            stride *= T->shape[d];
        }
        opidx[o]->coef[lanes_of[o]] = coef ? coef : 1; /* else along its last dimension */
    }
}

/* An operand its stick layout cannot give the PT directly (a lane
 * offset, a transposed walk) is restickified in LX when its buffer is
 * in DRAM.  A lane walk that runs on past the stick dimension into the
 * next index of the one before (heads merged back: [t, h, d] read as
 * [t, h*d]) still reads whole sticks: its view wraps, each period of
 * groups loaded from where it lies (be_view_wrap). */
static int mm_operands(mm_plan *m)
{
    be_ctx *c = m->c;
    const ir_kernel *K = m->K;
    const ir_node *mm = m->mm;
    char why[256];
    if (be_view_of(c, mm->a, &mm->aidx, mm->nvars, m->vk, mm->ranges, &m->av, why, sizeof why) ||
        (!be_lane_fits(c, mm->a, &mm->aidx, m->Kd) && be_view_wrap(c, mm->a, &mm->aidx, &m->av))) {
        if (!c->lay[mm->a].dram)
            return be_error(c, K, "operand A: %s", why);
        m->ag = 1;
        m->at = mm_across(m, mm->a, &mm->aidx, m->vk, m->Kd);
    }
    if (be_view_of(c, mm->b, &mm->bidx, mm->nvars, m->vn, mm->ranges, &m->bv, why, sizeof why) ||
        (!be_lane_fits(c, mm->b, &mm->bidx, m->N) && be_view_wrap(c, mm->b, &mm->bidx, &m->bv))) {
        if (!c->lay[mm->b].dram)
            return be_error(c, K, "operand B: %s", why);
        m->bg = 1;
        m->bt = mm_across(m, mm->b, &mm->bidx, m->vn, m->N);
    }
    if (mm->aidx.coef[m->vk] == 0)
        return be_error(c, K, "operand A is the same for every k (an expand along the reduced dimension): not "
                        "supported yet");
    if (mm->bidx.coef[m->vn] == 0)
        return be_error(c, K, "operand B is the same for every column (an expand along N): not supported yet");
    if ((!m->ag && m->av.rs[m->vk]) || (!m->bg && m->bv.rs[m->vn]))
        return be_error(c, K, "internal: operand without its lane variable");
    if ((!m->ag && m->av.groups < m->KG) || (!m->bg && m->bv.groups < m->GN))
        return be_error(c, K, "an operand has fewer sticks than the product needs");
    return 0;
}

/* Did the epilogue node whose loads start at k->loads[nl0] fail to load
 * one (failed), or need one restickified, which an epilogue cannot do?
 * As a row kernel of its own it could (be_collect_load stages it). */
static int epi_unloadable(const rk_plan *k, int nl0, int failed)
{
    for (int i = nl0; i < k->nl && !failed; i++)
        failed = k->loads[i].staged;
    return failed;
}

static void note_index(void *ctx, const ir_expr *x)
{
    *(int *)ctx |= x->kind == IR_E_INDEX;
}

/* Does expression e use an index value (eye's arange comparison)?  The
 * product's tiles do not track their rows' indices, so such a node is kept
 * out of the epilogue on the next attempt (compile.c), a row kernel of its own. */
static int computes_index(ir_prog *p, int e)
{
    int found = 0;
    ir_expr_walk(&p->A, e, note_index, &found);
    return found;
}

/* The epilogue as a row structure: node 0 stores acc, each later node
 * its epi value; results whose stick layout the store cannot take
 * directly go through a staged copy. */
static int mm_epilogue(be_ctx *c, int pos, mm_plan *m)
{
    ir_prog *p = c->p;
    const ir_kernel *K = m->K;
    const ir_node *mm = m->mm;
    char why[256];
    rk_plan *k = &m->ep;
    k->c = c;
    k->K = K;
    k->pos = pos;
    k->nvars = mm->nvars;
    k->colvar = m->vn;
    k->cols = m->N;
    k->G = m->GN;
    k->rsp = m->arsp;
    k->rows = m->nbatch * m->M;
    k->nodes = ir_xalloc((size_t)K->nnodes * sizeof *k->nodes);
    m->acc = ir_acc(&p->A, p->bufs[mm->out].type.dtype);
    rk_walk w = {k, ir_xalloc((size_t)p->nbufs), 0};
    char *seen = ir_xalloc((size_t)p->A.n + 1);
    for (int j = 0; j < K->nnodes && !w.failed; j++) {
        const ir_node *N = &p->nodes[K->nodes[j]];
        rk_node *rn = &k->nodes[k->nn++];
        rn->node = K->nodes[j];
        rn->expr = j ? N->epi : m->acc;
        rn->store = j ? N->epi_store : N->store;
        rn->cls = BE_V_TILE;
        rn->dram = c->lay[N->out].dram;
        if (j && N->epi < 0) {
            free(w.produced);
            free(seen);
            return be_error(c, K, "internal: node %s of a matmul kernel is not an epilogue", p->bufs[N->out].name);
        }
        if (j && computes_index(p, rn->expr)) {
            p->fail_epilogue = ir_node_op(N);
            free(w.produced);
            free(seen);
            return be_error(c, K, "index values in a matmul epilogue are not supported by the back half yet");
        }
        const int nl0 = k->nl;
        ir_expr_walk(&p->A, rn->expr, be_collect_load, &w);
        if (j && epi_unloadable(k, nl0, w.failed))
            p->fail_epilogue = ir_node_op(N); /* kept apart on the next attempt (compile.c) */
        /* the product itself is the PT's DL16 in the C slot: no SFP work,
         * no temps (counting them shrank plain products' blocks fourfold) */
        if (j)
            k->nexpr += be_count_temps(p, rn->expr, seen) + 2;
        if (rn->dram && !w.failed &&
            (be_view_of(c, N->out, &rn->store, k->nvars, m->vn, mm->ranges, &rn->sv, why, sizeof why) ||
             !be_lane_fits(c, N->out, &rn->store, m->N))) {
            rn->staged = 1; /* stored through sfp.rst into a staged copy */
            m->stage_bytes += be_buf_bytes(c, N->out);
        }
    }
    free(w.produced);
    free(seen);
    for (int i = 0; i < k->nl && !w.failed; i++)
        if (k->loads[i].staged)
            return be_error(c, K, "an epilogue operand of %s needs a restickify (not supported yet)",
                            p->bufs[p->A.e[k->loads[i].e].buf].name);
    return w.failed ? -1 : 0;
}

static int mm_aligned_a(const mm_plan *m, int pos);
static int mm_grid_tile_a(const mm_plan *m, int pos);

/* s's epilogue arrays copied into d (a copy of s otherwise). */
static void mm_ep_copy(mm_plan *d, const mm_plan *s)
{
    const size_t nodes = (size_t)s->K->nnodes * sizeof *s->ep.nodes, loads = (size_t)s->ep.nl * sizeof *s->ep.loads;
    d->ep.nodes = memcpy(ir_xmalloc(nodes), s->ep.nodes, nodes);
    d->ep.loads = s->ep.loads ? memcpy(ir_xmalloc(loads), s->ep.loads, loads) : NULL;
}

/* The plan as mm_shape, mm_lane_terms, mm_operands and mm_epilogue make
 * it.  They read the program, the layouts and the target, fixed from the
 * layout pass on, and write nothing the rest of the plan fills in (no
 * reads or outloads, no wspan, no memos); yet every plan, access,
 * estimate, LX probe and emission of the kernel built it again (BERT-base
 * 318 times, the Llama-8B decode step 400): made once per kernel position
 * (be_ctx.mmshape) and copied, its arrays too (a plan writes its nodes).
 * A failed build is not kept: the next one fails again, with its error. */
static int mm_structure(be_ctx *c, int pos, mm_plan *m)
{
    if (!c->mmshape)
        c->mmshape = ir_xalloc((size_t)(c->p->norder + 1) * sizeof *c->mmshape);
    const mm_plan *made = c->mmshape[pos];
    if (made) {
        *m = *made;
        mm_ep_copy(m, made);
        return 0;
    }
    memset(m, 0, sizeof *m);
    int rc = mm_shape(c, pos, m);
    if (!rc) {
        mm_lane_terms(m);
        rc = mm_operands(m);
    }
    if (!rc)
        rc = mm_epilogue(c, pos, m);
    if (!rc) {
        mm_plan *keep = ir_xmalloc(sizeof *keep);
        *keep = *m;
        mm_ep_copy(keep, m);
        c->mmshape[pos] = keep;
    }
    return rc;
}

/* The epilogue's tile loads an earlier kernel keeps (or could keep) in
 * LX on the rows this kernel's grid gives a core (m->elx): a one-channel
 * Conv3d's summing tap, its two other taps' products kept on a split of
 * the batch, was priced with them from DRAM alike on every split (82,598
 * cycles, DRAM-bound) and ran on one core. */
static uint64_t mm_ep_lx(be_ctx *c, int pos, mm_plan *m)
{
    uint64_t lx = 0;
    for (int i = 0; i < m->ep.nl && i < 64; i++) {
        const rk_load *L = &m->ep.loads[i];
        const int buf = c->p->A.e[L->e].buf;
        if (L->cls == BE_V_TILE && !L->staged && !L->gather && be_res_may_read(c, buf, pos) &&
            be_rows_aligned(&m->ep, buf, &L->v))
            lx |= (uint64_t)1 << i;
    }
    return lx;
}

/* The plan of the matmul kernel at pos: its shape, the lane terms put
 * back, its operands' views (or restickify), its epilogue, where the
 * estimates take A from and which results they leave in LX. */
static int mm_build(be_ctx *c, int pos, mm_plan *m)
{
    int rc = mm_structure(c, pos, m);
    if (!rc) {
        m->sscale = c->work[pos].stage_scale > 0 ? c->work[pos].stage_scale : 1;
        mm_set_whole(m, c->work[pos].stage_whole);
        m->gen = be_mmmemo_gen(c);
        m->atile = be_res_may_tile(c, m->mm->a, pos) ? mm_grid_tile_a(m, pos) : 0;
        m->alx = m->atile || (mm_aligned_a(m, pos) && be_res_may_read(c, m->mm->a, pos));
        m->ahd = be_heads_reads(c, m->mm->a, pos);
        m->elx = mm_ep_lx(c, pos, m);
        m->bhd = be_heads_reads(c, m->mm->b, pos);
        for (int j = 0; j < m->ep.nn; j++) {
            rk_node *rn = &m->ep.nodes[j];
            rn->lxonly = rn->dram && !rn->staged && be_res_may_keep(c, c->p->nodes[rn->node].out, pos);
            m->lxonly |= rn->lxonly;
        }
    }
    return rc;
}

/* Sticks one block's restickified operands read, estimated: the slot's
 * part plus one more stick group (a lane offset), or for an operand
 * whose lane variable walks across its buffer's sticks, the sticks of
 * its rows' groups; times sscale (raised when be_matmul_plan measures
 * more). */
static int64_t mm_stage_est(const mm_plan *m, int64_t MB, int64_t NBS, int64_t KC)
{
    const int64_t lanes = m->c->t.lanes16, kg = cc_ceil_div(KC, lanes);
    int64_t st = 0;
    if (m->ag && !m->aw)
        st += m->at ? (cc_ceil_div(MB, lanes) + 1) * KC : (kg + 1) * MB;
    if (m->bg && !m->bw)
        st += m->bt ? (kg + 1) * NBS * lanes : (NBS + 1) * KC;
    return (int64_t)((double)st * m->sscale) * m->c->t.stick;
}

static int64_t mm_lx_bytes(const mm_plan *m, int64_t MB, int64_t NBS, int64_t KC)
{
    return 2 * mm_cslot_bytes(m, MB, NBS) + 2 * (mm_abslot_bytes(m, MB, NBS, KC) + mm_stage_est(m, MB, NBS, KC)) +
           mm_p_bytes(m, MB, NBS, KC);
}

/* Estimate a tiling of the gm x gn grid whose largest tile is mt rows x
 * ns sticks: the slowest of the busier corelet's PT work, the core's DMA
 * in and out at its ring stop's rate, the epilogue's SFP work, and the
 * DRAM bytes of every core together at the chip's DRAM rate (a weight
 * re-read by each row of cores, or by each block of a core, counts each
 * time), after the first chunk's way in. */
/* The share of the chip's DRAM rate one core's DMA streams: on the Llama-8B
 * decode layer's weight reads, one core moved 0.70 to 0.89 of the peak
 * (k/v projections 8 MB at 0.70, q projection 33 MB 0.87, each MLP
 * product 117 MB 0.89), the same split over two or four cores 0.89 to
 * 0.93 (1x2: the MLP products 1,210,135 -> 1,161,412 cycles each). */
#define MM_CORE_DRAM_SHARE 0.85

/* An operand staged whole (restickified once per core, m->aw / m->bw) is
 * loaded before the first block, not while the PT works: it leaves the
 * per-chunk bytes (*core, *chip), and each of the grid's `cores` loads
 * its buffer's `bytes` whole, as codegen stages it (a core's share of the
 * batch indices counted instead, transformer_small's B broadcast over the
 * batch was priced twice what each core loads). */
static void mm_take_whole(int whole, double bytes, double cores, double *core, double *chip, double *stage_core,
                          double *stage_chip)
{
    if (!whole)
        return;
    *stage_core += bytes;
    *stage_chip += bytes * cores;
    *core = *chip = 0;
}

/* The cycles of staging whole operands before the blocks: a core's bytes
 * at the slower of its ring stop and its share of DRAM, or every core's
 * at the chip's DRAM rate, then the DRAM's wait (bert_base's QK^T on 2
 * cores staged 786 KB in 9,200 cycles, then ran its 8,131 of PT).  The
 * kernel ends with its slowest core: a one-off wait is priced on the
 * channels every core's reads span together, which for operands staged
 * whole, the same bytes on every core, are one core's (core). */
static double mm_stage_cycles(const cc_target *t, double core, double chip)
{
    if (core <= 0)
        return 0;
    double rate = t->dma_bytes_per_cycle, dram = t->dram_bytes_per_cycle;
    if (dram > 0 && MM_CORE_DRAM_SHARE * dram < rate)
        rate = MM_CORE_DRAM_SHARE * dram;
    double stream = core / rate;
    if (dram > 0 && chip / dram > stream)
        stream = chip / dram;
    return 2 * t->dma_insn_cycles + stream + cc_dram_wait(t, core, stream);
}

static int mm_rows_split(const mm_plan *m, const be_work *w);

/* Does a gm x gn grid (m's batch and K parts) leave each core a
 * contiguous part of the rows, as a row kernel on as many cores has them
 * (one grid column, no split of K)? */
static int mm_grid_rows(const mm_plan *m, int64_t gm, int64_t gn)
{
    return gn == 1 && m->gk <= 1 && mm_rows_split(m, &(be_work){.gm = gm, .gn = gn, .gb = m->gb});
}

/* Does such a grid of a batched product write its results as a row
 * kernel on as many cores would read them, so that they can stay in LX
 * (m->lxonly: the LX plan keeps them there only)?  Not asked of plain
 * products: on serve_tiny's prefill on spyre-4core, k17_silu_mm_mul's
 * kept result priced so moved it from a grid over the ring (2x2r, whose
 * estimate counts no DRAM write either way; 1,848 cycles) to 2x1,
 * estimated 2,593 and simulated 4,753. */
static int mm_keeps_rows(const mm_plan *m, int64_t gm, int64_t gn)
{
    return m->lxonly && m->nbatch > 1 && mm_grid_rows(m, gm, gn);
}

/* ... or reads epilogue tiles an earlier kernel may keep in LX on its
 * cores (m->elx): more batch parts on a near tie, as the producers split
 * the batch (a one-channel Conv3d's summing tap: 2 parts and the taps from
 * DRAM, 122,962 cycles; 16 as its taps, 68,586). */
static int mm_reads_rows(const mm_plan *m, int64_t gm, int64_t gn)
{
    return m->elx && m->nbatch > 1 && mm_grid_rows(m, gm, gn);
}

/* What mm_estimate prices alike for every tiling of one grid and tile
 * (mm_grid_of, once per mm_block: the tiling search asks for up to a few
 * dozen tilings of each). */
typedef struct {
    int64_t gm, gn, mt, ns;
    /* per core its share of the batch indices (nbc), over the grid all of them */
    double sb, nbat, nbc, cores;
    double a_bytes, b_bytes; /* a core's part of the operands, staged whole (mm_whole_share) */
    int a_lx, kept;
    uint64_t e_lx; /* m->elx on a grid of contiguous rows a core */
    double o_core, o_chip, w_core, w_chip, stage;
} mm_grid_est;

/* The bytes of operand wo (0 A, 1 B) a core of the grid stages whole, as
 * mm_core_span measures them in codegen: the sticks of its rows (A) or
 * sticks (B) for one batch index (m->wspan), times its batch indices when
 * the operand varies over the batch, at most its buffer.  A core's span
 * of a stick group is one run of rows, so over several batch indices it
 * covers each index's every row or stick (serve_tiny's decode QK^T of 4
 * indices split over N, k^T of the cache pool: 232 KB staged on each of 2
 * cores), and an operand read across its sticks spans most of them for a
 * few rows (decoder_small's QK^T, 31 of k^T's 32 sticks per head).
 * Products of a PT pass of rows or more, which also choose between
 * staging whole and per block, are priced with the whole buffer, as
 * before codegen staged a core's part: with its part BERT-base's QK^T
 * (one head of k^T a core, 16 KB for 590 KB) chose whole staging,
 * estimated 4,771 cycles against 2,205, and the layer ran 173,376 ->
 * 174,037 cycles. */
static double mm_whole_share(const mm_plan *m, int wo, const mm_grid_est *G)
{
    const ir_index *idx = wo ? &m->mm->bidx : &m->mm->aidx;
    const double buf = (double)be_buf_bytes(m->c, wo ? m->mm->b : m->mm->a);
    if (m->M >= m->c->cfg->pt_rows)
        return buf;
    int batched = 0;
    for (int i = 0; i < m->nb; i++)
        batched |= idx->coef[i] != 0;
    const int64_t all = wo ? m->GN : m->M, len = batched && G->nbc > 1 ? all : wo ? G->ns : G->mt;
    const double one = (double)(m->wspan[wo][cc_min(len, all)] * m->c->t.stick), share = batched ? G->nbc * one : one;
    return share < buf ? share : buf;
}

static void mm_grid_of(const mm_plan *m, int64_t gm, int64_t gn, int64_t mt, int64_t ns, mm_grid_est *G)
{
    const cc_target *t = &m->c->t;
    *G = (mm_grid_est){.gm = gm, .gn = gn, .mt = mt, .ns = ns};
    G->sb = (double)t->stick;
    G->nbat = (double)m->nbatch;
    G->nbc = (double)cc_ceil_div(m->nbatch, m->gb);
    G->cores = (double)(gm * gn * m->gb * m->gk);
    G->a_bytes = m->aw ? mm_whole_share(m, 0, G) : 0;
    G->b_bytes = m->bw ? mm_whole_share(m, 1, G) : 0;
    /* A read from LX (m->alx: kept there by the kernel before, on this
     * grid's rows; m->ahd: sent there by its producer, be_heads_reads)
     * moves no DRAM bytes: bert_base's PV, its A the softmax
     * kept in LX, was estimated 7,979 cycles for 2,942 simulated with
     * them counted */
    G->a_lx = m->ahd || (m->alx && (m->atile || mm_grid_rows(m, gm, gn)));
    G->e_lx = mm_reads_rows(m, gm, gn) ? m->elx : 0;
    double unused = 0;
    mm_take_whole(m->c->waits && m->aw, G->a_bytes, G->cores, &unused, &unused, &G->w_core, &G->w_chip);
    mm_take_whole(m->c->waits && m->bw, G->b_bytes, G->cores, &unused, &unused, &G->w_core, &G->w_chip);
    /* a result kept in LX only goes to its region, not to DRAM, when this
     * grid leaves each core the rows its readers take */
    G->kept = mm_keeps_rows(m, gm, gn);
    for (int j = 0; j < m->ep.nn; j++)
        if (m->ep.nodes[j].dram) {
            G->o_core += G->nbc * G->sb * (double)(mt * ns);
            G->o_chip += G->kept && m->ep.nodes[j].lxonly ? 0 : G->nbat * G->sb * (double)(m->M * m->GN);
        }
    G->stage = mm_stage_cycles(t, G->w_core, G->w_chip);
}

/* The operands' bytes in per core and over the grid for a tile in nbm x
 * nbn blocks (a restickified operand's staged sticks are counted as its
 * slot's). */
static inline void mm_in_bytes(const mm_plan *m, const mm_grid_est *G, int64_t nbm, int64_t nbn, double *a_core,
                               double *a_chip, double *b_core, double *b_chip)
{
    const double sb = G->sb, nbat = G->nbat, nbc = G->nbc;
    *a_core = nbc * (double)(nbn * G->mt * m->KGc) * sb;
    *a_chip = nbat * (double)(G->gn * nbn * m->M * m->KG) * sb;
    *b_core = nbc * (double)(nbm * G->ns * m->Kc) * sb;
    *b_chip = nbat * (double)(G->gm * nbm * m->GN * m->Kd) * sb;
    /* an operand staged whole is read whole by every core, once (when
     * staging whole and per block are compared, and in the grid search
     * of a product staging whole only: mm_plan_grid) */
    if (m->aw && m->whole_dram) {
        *a_core = G->a_bytes;
        *a_chip = G->cores * *a_core;
    }
    if (m->bw && m->whole_dram) {
        *b_core = G->b_bytes;
        *b_chip = G->cores * *b_core;
    }
    if (G->a_lx)
        *a_chip = 0;
    if (m->bhd)
        *b_chip = 0;
    /* staged whole (mm_take_whole: G's w_core, w_chip) */
    if (m->c->waits && m->aw)
        *a_core = *a_chip = 0;
    if (m->c->waits && m->bw)
        *b_core = *b_chip = 0;
}

/* mm_estimate's terms but the PT's, for blocks of MB rows of which the
 * tile has nbm (tl's NBS, KC and nch): the first chunk's way in (fill),
 * with m->ends the ends in series (head, tail: mm_ends), the staging
 * before the blocks (stage), the slowest of the DMA, DRAM, SFP and chunk
 * round-trip terms (c) and split-K's reduction; sets tl->bytes. */
typedef struct {
    double fill, head, tail, stage, c, reduce;
    double serial_core, serial_chip; /* bytes the ends move (one core's, the grid's) */
    int64_t blocks, chunks;
} mm_terms;

/* The ends of a core's blocks that nothing overlaps (tl's blocks, of
 * which the core runs n over its batch indices), for m->ends: the first
 * block's epilogue operands come in before its first chunk (dmai signals
 * them loaded, so waits for them, before it issues the chunk's loads);
 * then the first chunk, every core's at once (at the slower of the ring
 * stop and the DRAM's rate over the grid's bytes); the last block's
 * epilogue and stores follow its last product.  With one block a core
 * these are in series with the PT: on serve_tiny's prefill,
 * k17_silu_mm_mul on 1x3 (one 64-row block a core) loaded its 8 KB
 * epilogue tile in 614 cycles, then A and B (16 KB a core, 1,127), then
 * ran the PT (357), the epilogue (280) and the store, 2,705 cycles over 7
 * refresh phases against 1,092 estimated as a pipeline of blocks.  The
 * bytes they move leave the DRAM terms (serial_core, serial_chip).
 * e and o: the epilogue's loads and the results, per core and over the
 * grid; ab: the operands' bytes in (per core, the grid). */
typedef struct {
    double e_core, e_chip, o_core, o_chip, ab_core, ab_chip, slot, sfp;
} mm_end_bytes;

static void mm_ends(const mm_plan *m, const mm_grid_est *G, double n, double chunks, const mm_end_bytes *B,
                    mm_terms *T)
{
    const cc_target *t = &m->c->t;
    const double e_blk = B->e_core / n, o_blk = B->o_core / n, rate = t->dma_bytes_per_cycle;
    const double dram = t->dram_bytes_per_cycle > 0 ? t->dram_bytes_per_cycle : DBL_MAX;
    T->head = m->ep.nl > 0 ? (double)m->ep.nl * t->dma_insn_cycles + e_blk / rate +
                                 cc_dram_wait(t, e_blk * G->cores, e_blk / rate)
                           : 0;
    const double first = B->ab_chip / chunks, in = B->slot / rate > first / dram ? B->slot / rate : first / dram;
    T->fill = t->dma_insn_cycles + in + (G->w_core > 0 ? 0 : cc_dram_wait(t, B->slot * G->cores, in));
    T->tail = B->sfp / n + (o_blk > 0 ? o_blk / rate + t->dma_insn_cycles : 0);
    T->serial_core = e_blk + B->ab_core / chunks;
    T->serial_chip = B->e_chip / n + first + B->o_chip / n;
}

/* The bytes a tile in nbm x nbn blocks moves over the grid (tl->bytes),
 * given its operands' (mm_in_bytes); *e_chip the epilogue loads' part. */
static double mm_chip_bytes(const mm_plan *m, const mm_grid_est *G, int64_t nbm, int64_t nbn, double a_chip,
                            double b_chip, double *e_chip)
{
    double e = 0;
    for (int i = 0; i < m->ep.nl; i++) {
        be_vclass cls = m->ep.loads[i].cls;
        if (i < 64 && G->e_lx >> i & 1)
            continue;
        e += G->nbat * G->sb *
             (double)(cls == BE_V_TILE ? m->M * m->GN : cls == BE_V_COL ? G->gm * nbm * m->GN : G->gn * nbn * m->M);
    }
    *e_chip = e;
    return a_chip + b_chip + e + G->o_chip + G->w_chip;
}

static void mm_terms_of(const mm_plan *m, const mm_grid_est *G, int64_t nbm, int64_t MB, mm_tiling *tl, mm_terms *T)
{
    const cc_target *t = &m->c->t;
    const int64_t gm = G->gm, gn = G->gn, mt = G->mt, ns = G->ns;
    const double sb = G->sb, nbc = G->nbc;
    const int64_t nbn = cc_ceil_div(ns, tl->NBS), blocks = nbm * nbn;
    const int64_t chunks = blocks * tl->nch;
    double a_core, a_chip, b_core, b_chip;
    mm_in_bytes(m, G, nbm, nbn, &a_core, &a_chip, &b_core, &b_chip);
    double e_core = 0, e_chip = 0;
    const double o_core = G->o_core, o_chip = G->o_chip, w_core = G->w_core;
    for (int i = 0; i < m->ep.nl; i++) {
        be_vclass cls = m->ep.loads[i].cls;
        if (i < 64 && G->e_lx >> i & 1)
            continue;
        e_core += nbc * sb * (double)(cls == BE_V_TILE ? mt * ns : cls == BE_V_COL ? nbm * ns : nbn * mt);
    }
    const double nblk = nbc * (double)blocks, sfp = nblk * (double)m->ep.nexpr * (double)(tl->NBS * MB) * 0.5;
    const double reads = (G->a_lx ? 0 : a_core) + (m->bhd ? 0 : b_core);
    const double slot = (double)mm_abslot_bytes(m, MB, tl->NBS, tl->KC);
    tl->bytes = mm_chip_bytes(m, G, nbm, nbn, a_chip, b_chip, &e_chip);
    /* the first chunk's way in, and its DRAM wait unless staging waited
     * (on the channels the grid's first chunks span: mm_stage_cycles) */
    *T = (mm_terms){.fill = slot / t->dma_bytes_per_cycle + t->dma_insn_cycles +
                            (!m->c->waits || w_core > 0 ? 0
                                                        : cc_dram_wait(t, slot * (double)(gm * gn * m->gb),
                                                                       slot / t->dma_bytes_per_cycle)),
                    .stage = G->stage, .blocks = blocks, .chunks = chunks};
    /* the ends in series (mm_ends): the first block's epilogue operands
     * and the last block's epilogue and stores leave the totals below */
    const double last = m->ends ? 1 / nblk : 0;
    if (m->ends)
        mm_ends(m, G, nblk, nbc * (double)chunks,
                &(mm_end_bytes){e_core, e_chip, o_core, o_chip, reads, a_chip + b_chip, slot, sfp}, T);
    double dmai = (a_core + b_core + e_core - T->serial_core) / t->dma_bytes_per_cycle +
                  (nbc * (double)(2 * chunks + blocks * m->ep.nl) - (m->ends ? (double)m->ep.nl + 2 : 0)) *
                      t->dma_insn_cycles;
    /* a core's reads stream at most at a share of the chip's DRAM rate */
    const double stream = t->dram_bytes_per_cycle > 0 ? (reads + e_core - T->serial_core) /
                                                            (MM_CORE_DRAM_SHARE * t->dram_bytes_per_cycle)
                                                      : 0;
    double dmao = o_core * (1 - last) / t->dma_bytes_per_cycle + (nblk - (m->ends ? 1 : 0)) * t->dma_insn_cycles;
    double dram = t->dram_bytes_per_cycle > 0 ? (tl->bytes - T->serial_chip) / t->dram_bytes_per_cycle : 0;
    /* split-K: the fp32 partial sums reduced along the chain of K parts, then converted */
    /* (per step of the chain a ready message and the ring.red, each a
     * transfer's fixed cost, with the hand-offs; then two sfp.cvt) */
    T->reduce = m->gk > 1 ? (double)(m->gk - 1) * (2 * t->dma_insn_cycles + 4 * t->sync_cycles +
                                                   (double)mm_p_bytes(m, MB, tl->NBS, tl->KC) /
                                                       (double)t->cfg->ring_bytes_per_cycle) +
                                2 * (t->cfg->sfp_issue_cycles + (double)(tl->NBS * MB))
                          : 0;
    /* each K chunk's operands from DRAM (not staged whole once, nor read
     * from LX) are loaded while the PT works on the one before (two
     * slots), so a chunk takes at least their round trip: the loads'
     * issue, their bytes at the slower of the ring's and the DRAM's rate,
     * and the DRAM's wait (row latency, refresh); with the ends priced,
     * but the first chunk's when the fill waited for it (not after
     * staging: Llama decode's 1 x 64 x 64 products, A staged whole, then
     * estimated 571 cycles against 1,071) */
    const int a_chunked = a_core > 0 && !m->alx && !m->ahd, b_chunked = b_core > 0 && !m->bhd;
    const double trips =
        m->c->waits && (a_chunked || b_chunked) ? nbc * (double)chunks - (m->ends && w_core <= 0 ? 1 : 0) : 0;
    const double per_chunk = ((a_chunked ? a_core : 0) + (b_chunked ? b_core : 0)) / (nbc * (double)chunks);
    const double rate = t->dram_bytes_per_cycle > 0 && t->dram_bytes_per_cycle < t->dma_bytes_per_cycle
                            ? t->dram_bytes_per_cycle
                            : t->dma_bytes_per_cycle;
    /* (no trips, as in every choice priced without the waits: nothing to price) */
    double c = trips > 0 ? trips * ((a_chunked + b_chunked) * t->dma_insn_cycles + per_chunk / rate +
                                    cc_dram_wait(t, per_chunk, per_chunk / rate))
                         : 0;
    c = c > dmai ? c : dmai;
    c = c > dmao ? c : dmao;
    c = c > sfp * (1 - last) ? c : sfp * (1 - last);
    c = c > dram ? c : dram;
    T->c = c > stream ? c : stream;
}

/* The PT's term: the busier corelet's passes per block, and per chunk
 * an issue and the hand-offs. */
static double mm_pt_term(const mm_plan *m, const mm_grid_est *G, const mm_tiling *tl, const mm_terms *T)
{
    const cc_target *t = &m->c->t;
    int64_t rows = tl->split == SPLIT_ROWS ? cc_max(tl->r0, tl->MB - tl->r0) : tl->MB;
    int64_t sticks = tl->split == SPLIT_STICKS ? cc_max(tl->s0, tl->NBS - tl->s0) : tl->NBS;
    /* (with the ends priced, as the kernel runs: each K step's pass time) */
    const double step = m->ends ? t->cfg->pt_k_step_cycles : 1;
    return G->nbc * ((double)T->blocks * (mm_pt_cycles(t, rows, sticks, m->Kc) - t->pt_insn_cycles) * step +
                     (double)T->chunks * (t->pt_insn_cycles + 2 * t->sync_cycles));
}

static int mm_estimate(const mm_plan *m, const mm_grid_est *G, double cap, mm_tiling *tl)
{
    mm_terms T;
    mm_terms_of(m, G, cc_ceil_div(G->mt, tl->MB), tl->MB, tl, &T);
    /* every term is >= 0 and rounding is monotone: the estimate is at
     * least this sum without the PT's term, so past cap it is not priced */
    if (T.fill + T.head + T.tail + T.stage + T.c + T.reduce > cap)
        return 1;
    mm_split_block(m, tl);
    double pt = mm_pt_term(m, G, tl, &T), c = T.c;
    c = c > pt ? c : pt;
    tl->cycles = T.fill + T.head + T.stage + c + T.tail + T.reduce;
    return 0;
}

/* A floor under mm_estimate of every tiling of nbs sticks and K chunks
 * of kc with blocks of at most MB rows: of its terms (mm_terms_of) the
 * first chunk's way in (its B part), the staging, and the slowest of the
 * DMA in, a core's stream and the DRAM (A and B, at the fewest blocks
 * such rows leave: no epilogue operand) and the PT's issue per chunk;
 * less a relative 1e-9, far above the rounding of either sum.  A floor
 * past the best's slack proves the tiling loses mm_better before
 * mm_most_rows is asked its rows.  *rest: the same with the way in at its
 * least (one DMA issue), which more column blocks (nbn) or chunks per
 * block never lower: every other term grows with them. */
static double mm_floor_in(const mm_plan *m, const mm_grid_est *G, int64_t nbm, int64_t nbn, int64_t nbs, int64_t kc,
                          double a_core, double a_chip, double b_core, double b_chip, double *rest)
{
    const cc_target *t = &m->c->t;
    const double blocks = (double)(nbm * nbn), chunks = blocks * (double)cc_ceil_div(m->Kc, kc);
    double c = G->nbc * chunks * (t->pt_insn_cycles + 2 * t->sync_cycles);
    const double dmai = (a_core + b_core) / t->dma_bytes_per_cycle +
                        G->nbc * (2 * chunks + blocks * m->ep.nl) * t->dma_insn_cycles;
    c = c > dmai ? c : dmai;
    if (t->dram_bytes_per_cycle > 0) {
        const double stream =
            ((G->a_lx ? 0 : a_core) + (m->bhd ? 0 : b_core)) / (MM_CORE_DRAM_SHARE * t->dram_bytes_per_cycle);
        const double dram = (a_chip + b_chip + G->o_chip + G->w_chip) / t->dram_bytes_per_cycle;
        c = c > stream ? c : stream;
        c = c > dram ? c : dram;
    }
    const double fill = (double)(nbs * kc * t->stick) / t->dma_bytes_per_cycle + t->dma_insn_cycles;
    if (rest)
        *rest = (t->dma_insn_cycles + G->stage + c) * (1 - 1e-9);
    return (fill + G->stage + c) * (1 - 1e-9);
}

/* mm_floor_in for blocks of at most MB rows. */
static double mm_floor(const mm_plan *m, const mm_grid_est *G, int64_t MB, int64_t nbs, int64_t kc, double *rest)
{
    const int64_t nbm = cc_ceil_div(G->mt, MB), nbn = cc_ceil_div(G->ns, nbs);
    double a_core, a_chip, b_core, b_chip;
    mm_in_bytes(m, G, nbm, nbn, &a_core, &a_chip, &b_core, &b_chip);
    return mm_floor_in(m, G, nbm, nbn, nbs, kc, a_core, a_chip, b_core, b_chip, rest);
}

/* Does tl (its NBS, KC, MB set) lose mm_better to best whatever its
 * estimate?  It does when best stays within the slack of it (its floor
 * within the slack of best's cycles: best's is within the slack of the
 * lower of the two) and it moves more bytes, or as many with a smaller K
 * chunk: most tilings of a one-row product (the decode step's 8,000
 * estimates, of which 6,800 lost so), where the floor alone never gets
 * past the slack.  Without the ends priced (mm_floor_in's).  low: tl's
 * floor when the caller has made it, else 0 (then *rest, when asked and
 * tl loses, gets mm_floor_in's rest). */
static inline int mm_loses_in(const mm_plan *m, const mm_grid_est *G, const mm_tiling *tl, const mm_tiling *best,
                              double low, double *rest)
{
    if (m->ends)
        return 0;
    const int64_t nbm = cc_ceil_div(G->mt, tl->MB), nbn = cc_ceil_div(G->ns, tl->NBS);
    double a_core, a_chip, b_core, b_chip, e_chip;
    mm_in_bytes(m, G, nbm, nbn, &a_core, &a_chip, &b_core, &b_chip);
    const double bytes = mm_chip_bytes(m, G, nbm, nbn, a_chip, b_chip, &e_chip);
    if (bytes < best->bytes || (bytes == best->bytes && tl->KC >= best->KC))
        return 0;
    if (low <= 0)
        low = mm_floor_in(m, G, nbm, nbn, tl->NBS, tl->KC, a_core, a_chip, b_core, b_chip, rest);
    return best->cycles <= low * (1 + MM_SLACK);
}

static int mm_loses(const mm_plan *m, const mm_grid_est *G, const mm_tiling *tl, const mm_tiling *best, double low)
{
    return mm_loses_in(m, G, tl, best, low, NULL);
}

/* mm_loses of a one-row product's tiling of nbs sticks and K chunks of
 * kc: 0 when it may win, 1 when it loses, 2 when so does every later
 * split of these chunks (more column blocks) and every smaller chunk's,
 * as best is within the slack of its floor's rest: their bytes are at
 * least its (the chip's bytes grow with the column blocks, none with the
 * chunk) and their rests at least its (mm_floor_in). */
static int mm_row_loses(const mm_plan *m, const mm_grid_est *G, int64_t nbs, int64_t kc, const mm_tiling *best)
{
    double rest = 0;
    if (!mm_loses_in(m, G, &(mm_tiling){.MB = 1, .NBS = nbs, .KC = kc}, best, 0, &rest))
        return 0;
    return best->cycles <= rest * (1 + MM_SLACK) ? 2 : 1;
}

/* A split of K must look this many cycles better than the best grid
 * without one: the chain of reductions adds latencies (a ready message,
 * the ring.red, the conversion, the units draining before the next bar)
 * the estimate only roughly counts; on traces/mlp's 8 x 64 x 256 product
 * a 97-cycle lead in the estimate made the graph 366 cycles slower. */
#define MM_SPLITK_CYCLES 1000.0

static int mm_better(const mm_tiling *a, const mm_tiling *b)
{
    double lo = a->cycles < b->cycles ? a->cycles : b->cycles;
    int a_ok = a->cycles <= lo * (1 + MM_SLACK), b_ok = b->cycles <= lo * (1 + MM_SLACK);
    if (a_ok != b_ok)
        return a_ok;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes;
    if (a->KC != b->KC)
        return a->KC > b->KC;
    return a->cycles < b->cycles;
}

/* The most block rows of nbs sticks and K chunks of kc that fit budget,
 * up to hi: mm_most_rows's, from workdiv's memo.  LX bytes never fall as
 * rows grow (mm_most_rows), so the most up to hi is the least of hi and
 * the most up to any count at least hi: the memo keeps the most up to
 * M's rows (or pt.mm's largest count), as every tile's rows are a part
 * of M.  Up to pt.mm's largest count, a one-row product's plan (the
 * decode step's) searched past its one row at each miss. */
static int64_t mm_block_rows(const mm_plan *m, int64_t hi, int64_t nbs, int64_t kc, int64_t budget)
{
    mm_rows_memo *q = m->gen ? be_mmmemo_rows(m->c, (uint64_t)(nbs * 131 + kc / m->c->t.lanes16)) : NULL;
    if (!q)
        return mm_most_rows(m, mm_lx_bytes, hi, nbs, kc, budget);
    if (!(q->gen == m->gen && q->nbs == nbs && q->kc == kc && q->budget == budget && q->Kc == m->Kc &&
          q->gk == m->gk && q->sscale == m->sscale && q->aw == m->aw && q->bw == m->bw))
        *q = (mm_rows_memo){.gen = m->gen, .aw = m->aw, .bw = m->bw, .nbs = nbs, .kc = kc, .budget = budget,
                            .Kc = m->Kc, .gk = m->gk, .sscale = m->sscale,
                            .rows = mm_most_rows(m, mm_lx_bytes, cc_min(m->M, ISA_COUNT_MAX), nbs, kc, budget)};
    assert(hi <= m->M); /* (a tile's rows are a part of M) */
    return cc_min(q->rows, hi);
}

/* Blocks of half the rows that fit are tried too, when each half is a
 * whole number of groups of this many PT passes (torch-spyre's
 * _TARGET_PT_PASSES: fewer do not fill the PT's pipeline): a tile of one
 * block runs its epilogue and stores after all of its products, two
 * overlap the first block's with the second's products (BERT-base's QK^T
 * and PV, 128 rows a head: 64-row blocks, k3_bmm 2,659 -> 2,076 cycles).
 * serve_tiny's prefill of 192 tokens: a 128-row product halved, the
 * layer 1.0% slower over 7 refresh phases with every estimate the same. */
#define MM_HALF_PASSES 8

/* The tiling work_div forces (w, clipped to the tile), if it fits: 0, or
 * -1 (mm_block_priced). */
static int mm_block_forced(const mm_plan *m, const mm_grid_est *G, const be_work *w, int64_t budget,
                           int64_t max_sticks, mm_tiling *out)
{
    mm_tiling tl = {0};
    tl.MB = cc_min(w->mb, G->mt);
    tl.NBS = cc_min(cc_min(w->nbs, G->ns), max_sticks);
    tl.KC = cc_min(w->kc, m->Kc);
    tl.nch = cc_ceil_div(m->Kc, tl.KC);
    if (mm_lx_bytes(m, tl.MB, tl.NBS, tl.KC) > budget || (tl.KC < m->Kc && tl.KC % m->c->t.lanes16) ||
        (m->gk > 1 && (tl.MB < G->mt || tl.NBS < G->ns)))
        return -1;
    mm_estimate(m, G, DBL_MAX, &tl);
    *out = tl;
    return 0;
}

/* mm_block_priced's blocks of nbs sticks and kc-element chunks with the
 * most rows LX holds (lo) and half as many: each that beats *out (found:
 * there is one) taken.  most and low: the floor's rows and its value (0:
 * none taken); hi: the most rows a block may have. */
static void mm_block_rows_priced(const mm_plan *m, const mm_grid_est *G, int64_t nbs, int64_t kc, int64_t lo,
                                 int64_t hi, int64_t most, double low, mm_tiling *out, int *found)
{
    const int64_t mt = G->mt;
    for (int64_t h = 1; h <= 2; h++) { /* the most rows, and half as many */
        mm_tiling tl = {.NBS = nbs, .KC = kc, .nch = cc_ceil_div(m->Kc, kc)};
        tl.MB = cc_ceil_div(mt, cc_ceil_div(mt, lo) * h);
        if (h > 1 && tl.MB % (MM_HALF_PASSES * m->c->cfg->pt_rows))
            continue;
        /* (one row's asked before; the floor taken when it is tl's) */
        if (*found && hi > 1 && mm_loses(m, G, &tl, out, tl.MB == most ? low : 0))
            continue;
        /* a tiling estimated over the best's slack loses (mm_better) */
        if (mm_estimate(m, G, *found ? out->cycles * (1 + MM_SLACK) : DBL_MAX, &tl))
            continue;
        assert(tl.cycles >= low); /* mm_floor is one: more blocks only add */
        if (!*found || mm_better(&tl, out))
            *out = tl;
        *found = 1;
    }
}

/* The tiling of the grid's tile of mt rows x ns sticks: every K chunk
 * (all of K, else 4096 down to 64 rows), every distinct split of the
 * sticks into blocks, with the most rows that fit LX with every buffer
 * doubled (balanced over the row blocks) or half as many; the cheapest
 * estimate wins. */
static int mm_block_priced(const mm_plan *m, const mm_grid_est *G, mm_tiling *out)
{
    const int64_t budget = be_lx_budget(m->c, m->ep.pos) - m->stage_bytes - m->whole_bytes, lanes = m->c->t.lanes16;
    const int64_t max_sticks = ISA_COUNT_MAX / lanes; /* pt.mm n field */
    const be_work *w = &m->c->work[m->ep.pos];
    const int64_t mt = G->mt, ns = G->ns;
    int found = 0;
    if (w->mb) /* forced by work_div */
        return mm_block_forced(m, G, w, budget, max_sticks, out);
    for (int64_t ks = 128; ks >= 0; ks = ks ? ks / 2 : -1) {
        int64_t kc = ks == 128 ? m->Kc : ks * lanes;
        if (!kc || (ks != 128 && kc >= m->Kc))
            continue;
        /* split-K: one block per core (the tile's partial sums stay in LX until reduced) */
        int lead = 1; /* the first split of at most max_sticks */
        for (int64_t q = 1; q <= (m->gk > 1 ? 1 : ns); q = mm_next_split(ns, q)) {
            int64_t nbs = cc_ceil_div(ns, q);
            if (nbs > max_sticks)
                continue;
            const int64_t hi = cc_min(mt, ISA_COUNT_MAX);
            /* no tiling of these sticks and chunks can beat the best (not
             * asked of one row: its LX is priced once, its estimate stops
             * before the PT's term, and the floor cost the decode step more
             * than it saved) */
            double rest = 0;
            const int64_t most = cc_ceil_div(mt, cc_ceil_div(mt, hi));
            const double low = found && hi > 1 && !m->ends /* (the ends move its terms' bytes: no floor) */
                                   ? mm_floor(m, G, most, nbs, kc, &rest)
                                   : 0;
            if (found && low > out->cycles * (1 + MM_SLACK)) {
                /* nor can any later split's (more column blocks) or, from
                 * the lead split on, any smaller chunk's (mm_floor_in's
                 * rest): the best only improves, so each would stop here */
                if (rest > out->cycles * (1 + MM_SLACK)) {
                    if (lead)
                        return 0;
                    break;
                }
                lead = 0;
                continue;
            }
            const int first = lead;
            lead = 0;
            /* one row's only tiling is of one-row blocks, whatever fits LX
             * (and no half of it is a group of passes): asked before LX */
            const int row = found && hi == 1 ? mm_row_loses(m, G, nbs, kc, out) : 0;
            if (row > 1 && first)
                return 0;
            if (row > 1)
                break;
            if (row)
                continue;
            int64_t lo = mm_block_rows(m, hi, nbs, kc, budget);
            if (lo < 1 || (m->gk > 1 && lo < mt))
                continue;
            mm_block_rows_priced(m, G, nbs, kc, lo, hi, most, low, out, &found);
        }
    }
    return found ? 0 : -1;
}

/* The tiling of a gm x gn grid's tile of mt rows x ns sticks
 * (mm_block_priced).  A product of fewer rows than a PT pass takes the
 * tiling best with the DRAM's waits priced: each of its K chunks waits
 * for its loads (a signal on dmai waits for every load before it, so the
 * next chunk's loads start after it), which the estimate without them
 * does not see (serve_tiny's decode PV, 2 rows of K 256 a core: chunks
 * of 64 chosen, 1,787 cycles simulated against 1,505 with K whole).  The
 * grid is still priced as before (out's estimate without the waits):
 * priced with them, gpt2_gen decode's QK^T on spyre-4core went from 4
 * cores to 2 and its rope-table index select ran beside it, 282 -> 755
 * cycles against 329 estimated. */
static int mm_block_search(const mm_plan *m, const mm_grid_est *G, mm_tiling *out)
{
    be_ctx *c = m->c;
    const int waits = c->waits;
    if (waits || m->M >= c->cfg->pt_rows || c->work[m->ep.pos].mb) {
        const int rc = mm_block_priced(m, G, out);
        out->waited = -1;
        return rc;
    }
    c->waits = 1; /* (mm_grid_of reads the waits: its parts with them) */
    mm_grid_est Gw;
    mm_grid_of(m, G->gm, G->gn, G->mt, G->ns, &Gw);
    const int rc = mm_block_priced(m, &Gw, out);
    c->waits = 0;
    if (!rc) {
        out->waited = out->cycles;
        mm_estimate(m, G, DBL_MAX, out);
    }
    return rc;
}

/* Everything mm_block_search reads but the target (be_mmblock_find's
 * memo keeps one's): the tile, the grid's estimate parts (mm_grid_of,
 * which alone reads the product's operands and their whole spans), the
 * plan's sizes and flags, its epilogue's loads and results, the DRAM's
 * waits, the tiling work_div forces and the LX budget.  Built from
 * zeroed bytes and compared as bytes.  A field mm_block_search comes
 * to read must be added here, or a tiling of other inputs is recalled. */
enum { MM_KEY_LOADS = 16, MM_KEY_NODES = 16 };
typedef struct {
    int64_t gm, gn, mt, ns;
    /* G's parts but those made from the key's grid, tile and sizes and
     * the target (its gm, gn, mt, ns, sb, nbat, nbc and cores): each of
     * BERT-base's some 400 keys is written once, to fresh memory */
    double a_bytes, b_bytes, o_core, o_chip, w_core, w_chip, stage;
    int64_t nbatch, M, GN, KG, Kd, Kc, KGc, gk, gb, stage_bytes, whole_bytes, mb, nbs, kc, budget;
    double sscale;
    uint64_t elx, e_lx;
    int a_lx, kept, waits, ag, bg, at, bt, aw, bw, whole_dram, ends, atile, alx, ahd, bhd, lxonly, nl, nexpr, nn;
    signed char cls[MM_KEY_LOADS], dram[MM_KEY_NODES], lxo[MM_KEY_NODES];
} mm_block_key;

/* v as the key's byte at *to; -1 when it does not fit one. */
static int mm_key_byte(int v, signed char *to)
{
    *to = (signed char)v;
    return *to == v ? 0 : -1;
}

/* m's key without a grid or tile (their fields zero); -1: too many
 * epilogue loads or results for one. */
static int mm_plan_key_of(const mm_plan *m, mm_block_key *k)
{
    const be_ctx *c = m->c;
    const be_work *w = &c->work[m->ep.pos];
    if (m->ep.nl > MM_KEY_LOADS || m->ep.nn > MM_KEY_NODES)
        return -1;
    memset(k, 0, sizeof *k);
    k->nbatch = m->nbatch, k->M = m->M, k->GN = m->GN, k->KG = m->KG, k->Kd = m->Kd, k->Kc = m->Kc;
    k->KGc = m->KGc, k->gk = m->gk, k->gb = m->gb, k->stage_bytes = m->stage_bytes, k->whole_bytes = m->whole_bytes;
    k->mb = w->mb, k->nbs = w->nbs, k->kc = w->kc, k->budget = be_lx_budget(c, m->ep.pos);
    k->sscale = m->sscale;
    k->waits = c->waits, k->ag = m->ag, k->bg = m->bg, k->at = m->at, k->bt = m->bt, k->aw = m->aw, k->bw = m->bw;
    k->whole_dram = m->whole_dram, k->ends = m->ends, k->atile = m->atile, k->alx = m->alx, k->ahd = m->ahd;
    k->bhd = m->bhd, k->elx = m->elx, k->lxonly = m->lxonly, k->nl = m->ep.nl, k->nexpr = m->ep.nexpr, k->nn = m->ep.nn;
    int rc = 0;
    for (int i = 0; i < m->ep.nl; i++)
        rc |= mm_key_byte((int)m->ep.loads[i].cls, &k->cls[i]);
    for (int j = 0; j < m->ep.nn; j++)
        rc |= mm_key_byte(m->ep.nodes[j].dram, &k->dram[j]) | mm_key_byte(m->ep.nodes[j].lxonly, &k->lxo[j]);
    return rc;
}

/* m's key for a gm x gn grid's tile of mt rows x ns sticks; -1: too
 * many epilogue loads or results for one.  The tiling search reads the
 * results' lxonly flags only in mm_grid_of (G->kept, G->o_chip, which the
 * key holds; the DRAM's waits do not change them): plans that differ in
 * those flags alone share a search (BERT-base's second workdiv round). */
static int mm_block_key_of(const mm_plan *m, const mm_grid_est *G, mm_block_key *k)
{
    if (mm_plan_key_of(m, k))
        return -1;
    k->lxonly = 0;
    memset(k->lxo, 0, sizeof k->lxo);
    k->gm = G->gm, k->gn = G->gn, k->mt = G->mt, k->ns = G->ns;
    k->a_bytes = G->a_bytes, k->b_bytes = G->b_bytes, k->o_core = G->o_core, k->o_chip = G->o_chip;
    k->w_core = G->w_core, k->w_chip = G->w_chip, k->stage = G->stage, k->a_lx = G->a_lx, k->kept = G->kept;
    k->e_lx = G->e_lx;
    return 0;
}

/* (the high bits folded down once at the end, not after every word: the
 * memo's slots take the low bits, and a key is some 43 words; G's are
 * left out, made from the grid, the tile and the plan: keys are still
 * compared whole) */
static uint64_t mm_block_hash(const mm_block_key *k)
{
    uint64_t h = 0, v;
    for (size_t i = 0; i < offsetof(mm_block_key, a_bytes); i += sizeof v) {
        memcpy(&v, (const char *)k + i, sizeof v);
        h = (h ^ v) * 0x9e3779b97f4a7c15u;
    }
    for (size_t i = offsetof(mm_block_key, nbatch); i + sizeof v <= sizeof *k; i += sizeof v) {
        memcpy(&v, (const char *)k + i, sizeof v);
        h = (h ^ v) * 0x9e3779b97f4a7c15u;
    }
    h = (h ^ (h >> 32)) * 0xbf58476d1ce4e5b9u;
    return h ^ (h >> 29);
}

/* mm_block_search, remembered for the compile by everything it reads
 * (mm_block_key): workdiv prices the same tiles for the kernel ahead,
 * the alignments, both rounds and each of cc_compile's attempts (the
 * products fused and apart), and each plan's staging masks and scales
 * price some tiles again.  A tile that fits no tiling is remembered so
 * too (out is then left as it is: no caller reads it). */
static int mm_block(const mm_plan *m, int64_t gm, int64_t gn, int64_t mt, int64_t ns, mm_tiling *out)
{
    mm_grid_est G;
    mm_grid_of(m, gm, gn, mt, ns, &G);
    mm_block_key k;
    if (mm_block_key_of(m, &G, &k))
        return mm_block_search(m, &G, out);
    const uint64_t h = mm_block_hash(&k);
    const int found = be_mmblock_find(m->c, &k, sizeof k, h, out);
    if (found >= 0)
        return found ? -1 : 0;
    const int rc = mm_block_search(m, &G, out);
    be_mmblock_keep(m->c, &k, sizeof k, h, rc ? NULL : out);
    return rc;
}

/* search's answer for grid gm x gn, remembered under the plan's key with
 * the grid and tag as its tile (mm_rg_tiling, mm_bc_kept). */
static int tiling_kept(const mm_plan *m, int64_t gm, int64_t gn, int64_t tag,
                       int (*search)(const mm_plan *, int64_t, int64_t, mm_tiling *), mm_tiling *out)
{
    mm_block_key k;
    if (mm_plan_key_of(m, &k))
        return search(m, gm, gn, out);
    k.gm = gm, k.gn = gn, k.mt = k.ns = tag;
    k.lxonly = 0;
    memset(k.lxo, 0, sizeof k.lxo);
    const uint64_t h = mm_block_hash(&k);
    const int found = be_mmblock_find(m->c, &k, sizeof k, h, out);
    if (found >= 0)
        return found ? -1 : 0;
    const int rc = search(m, gm, gn, out);
    be_mmblock_keep(m->c, &k, sizeof k, h, rc ? NULL : out);
    return rc;
}

/* mm_rg_search (the tiling of the grid over the ring), remembered for
 * the compile as mm_block's searches are, in the same memo: its key is
 * the plan's (it reads the plan's sizes, staging, A's tiles and LX, the
 * epilogue's loads and expressions, the forced tiling and the LX budget,
 * all in it) with the grid, and no tile (mt and ns -1, which no block
 * key has); without the results' lxonly flags, which neither be_ring.c
 * nor be_mmblock.c reads (a second workdiv round's plans differ in
 * them).  Planning asks it for the same grids in the kernel ahead, both
 * workdiv rounds and both attempts, and codegen once more. */
int mm_rg_tiling(const mm_plan *m, int64_t gm, int64_t gn, mm_tiling *out)
{
    return tiling_kept(m, gm, gn, -1, mm_rg_search, out);
}

static int bc_search(const mm_plan *m, int64_t gm, int64_t gn, mm_tiling *out)
{
    (void)gn; /* (always 1) */
    return mm_bc_tiling(m, gm, out);
}

/* mm_bc_tiling (B broadcast over the ring on gm cores), remembered as
 * mm_rg_tiling's searches are: it reads the plan's sizes, staging flags,
 * the epilogue's loads and expressions, the forced tiling and the LX
 * budget, all in the plan's key; with the grid gm x 1 and mt and ns -3,
 * without the lxonly flags (as mm_rg_tiling).  Both attempts and the
 * second round plan the same products. */
static int mm_bc_kept(const mm_plan *m, int64_t gm, mm_tiling *out)
{
    return tiling_kept(m, gm, 1, -3, bc_search, out);
}

/* The batch loops' values at batch index b (row-major over them). */
static void batch_vals(const mm_plan *m, int64_t b, int64_t *val)
{
    for (int i = m->nb - 1; i >= 0; i--) {
        val[i] = b % m->mm->ranges[i];
        b /= m->mm->ranges[i];
    }
}

/* How many of the rows after the row of n elements from flat f0, step
 * apart, each row `down` after the one before, touch the sticks f0's row
 * touched (at most `most`).  A row does when the stick dim is the
 * innermost (nothing carries into it), the step moves no lane (step a
 * multiple of its length s), both rows lie at flat >= 0, and it is f0's
 * moved along the lanes inside f0's stick group: every element is then
 * f0's row's with the same layout row and group (a transposed operand's
 * rows, one lane apart, read the same sticks 63 times in 64).  Each of
 * those conditions is linear in the row, so the rows that pass are a run
 * from the first, found by one division (BERT-base's plans asked it of
 * 15,120 rows one by one). */
static int64_t mm_rows_same(const be_walk *w, int64_t f0, int64_t down, int64_t step, int64_t n, int64_t most)
{
    if (!w->rank || w->sd != w->rank - 1)
        return 0;
    const int64_t s = w->shape[w->sd];
    if (step % s || f0 < 0 || f0 + (n - 1) * step < 0) /* the conditions that do not move with the row */
        return 0;
    const int64_t co = f0 % s, g0 = co / w->lanes * w->lanes;
    const int64_t hi = cc_min(g0 + w->lanes, s) - 1 - co;                  /* row * down <= hi (>= 0) */
    const int64_t lo = cc_max(g0 - co, -cc_min(f0, f0 + (n - 1) * step)); /* row * down >= lo (<= 0) */
    return down > 0 ? cc_min(most, hi / down) : down < 0 ? cc_min(most, lo / down) : most;
}

/* Rows each the one before moved along coordinate d by `by`
 * (be_walk_axis; -1: not moved), after a row walked as one run inside
 * the buffer (the walk still at its first element): do they read sticks
 * of the row's groups, each group's layout rows moved alike?  d must be
 * neither the stick dim nor the coordinate the run walks (then the rows'
 * elements are the run's with d moved), and stay in its range
 * (mm_rows_in). */
static int mm_rows_movable(const be_walk *w, int d)
{
    return d == -1 || (d >= 0 && d != w->sd && d != w->d1);
}

/* ... the n rows after the row the walk is at (its first element) with
 * coordinate d in range: their spans then lie between the row's and the
 * last row's. */
static int mm_rows_in(const be_walk *w, int d, int64_t by, int64_t n)
{
    const int64_t v = d >= 0 ? w->co[d] + n * by : 0;
    return v >= 0 && (d < 0 || v < w->shape[d]);
}

/* Add to the spans lo[g]..hi[g] of buf's stick groups the sticks an
 * operand block reads (batch index b, rowvar over [r0, r0 + nr), lanevar
 * over [l0, l0 + nl)); a row that reads the sticks of the row walked
 * last (mm_rows_same) is not walked, nor are the rows between the first
 * and the last when each is the one before moved (mm_rows_movable:
 * BERT-base's LX plan walked each of q's 128 rows a head to find the
 * stick groups a core reads). */
static void mm_span_add(const mm_plan *m, int buf, const ir_index *idx, int64_t b, int rowvar, int64_t r0,
                        int64_t nr, int lanevar, int64_t l0, int64_t nl, int64_t *lo, int64_t *hi)
{
    const be_ctx *c = m->c;
    const be_layout *L = &c->lay[buf];
    int64_t val[IR_MAX_VARS] = {0};
    be_walk w;
    be_walk_init(&w, c, buf);
    batch_vals(m, b, val);
    val[lanevar] = l0;
    val[rowvar] = r0;
    const int64_t f0 = be_index_at(idx, m->mm->nvars, val), step = idx->coef[lanevar], down = idx->coef[rowvar];
    int64_t i = 0;
    /* (a row step inside an innermost stick dim moves that dim, as a
     * transposed operand's rows do, mm_rows_same's: not asked) */
    if (nr > 2 && w.rank && !(w.sd == w.rank - 1 && down % w.shape[w.sd])) {
        int64_t by = 0;
        const int one = be_walk_run(&w, L, f0, step, nl, -1, lo, hi), d = one ? be_walk_axis(&w, down, &by) : -2;
        if (one && mm_rows_movable(&w, d) && mm_rows_in(&w, d, by, nr - 1)) {
            be_walk_run(&w, L, f0 + (nr - 1) * down, step, nl, -1, lo, hi);
            return;
        }
        i = 1 + mm_rows_same(&w, f0, down, step, nl, nr - 1);
    }
    for (; i < nr; i++) {
        const int64_t f = f0 + i * down;
        be_walk_run(&w, L, f, step, nl, -1, lo, hi);
        i += mm_rows_same(&w, f, down, step, nl, nr - 1 - i);
    }
}

/* The sticks of buf's device layout a restickified operand block reads
 * (as mm_span_add): per stick group g of the buffer, the layout rows
 * lo[g]..hi[g] (lo > hi: none).  Returns the sticks in all (at least one). */
static int64_t mm_span(const mm_plan *m, int buf, const ir_index *idx, int64_t b, int rowvar, int64_t r0,
                       int64_t nr, int lanevar, int64_t l0, int64_t nl, int64_t *lo, int64_t *hi)
{
    be_span_init(&m->c->lay[buf], lo, hi);
    mm_span_add(m, buf, idx, b, rowvar, r0, nr, lanevar, l0, nl, lo, hi);
    return be_span_total(&m->c->lay[buf], lo, hi);
}

/* The most sticks operand w (0 A, 1 B) stages in one A/B slot, over the
 * blocks and K chunks of the core tile of its rows [at, at + len) (A) or
 * sticks [at, at + len) (B) walked with tiling tl. */
static int64_t mm_stage_most(const mm_plan *m, const mm_tiling *tl, int w, int64_t at, int64_t len)
{
    const int64_t lanes = m->c->t.lanes16;
    const int buf = w ? m->mm->b : m->mm->a;
    const int64_t groups = m->c->lay[buf].groups;
    int64_t most = 0;
    int64_t *lo = ir_xmalloc((size_t)groups * 2 * sizeof *lo);
    for (int64_t b = 0; b < m->nbatch; b++)
        for (int64_t k0 = 0; k0 < m->Kd; k0 += tl->KC) {
            int64_t kc = cc_min(tl->KC, m->Kd - k0);
            if (!w)
                for (int64_t r = at; r < at + len; r += tl->MB)
                    most = cc_max(most, mm_span(m, buf, &m->mm->aidx, b, m->vm, r, cc_min(tl->MB, at + len - r),
                                                m->vk, k0, kc, lo, lo + groups));
            else
                for (int64_t g = at; g < at + len; g += tl->NBS) {
                    int64_t nbs = cc_min(tl->NBS, at + len - g);
                    int64_t cols = cc_min(nbs * lanes, m->N - g * lanes);
                    most = cc_max(most,
                                  mm_span(m, buf, &m->mm->bidx, b, m->vk, k0, kc, m->vn, g * lanes, cols, lo, lo + groups));
                }
        }
    free(lo);
    return most;
}

/* Does operand w stage sticks of its own (restickified, not whole)? */
static int mm_stages(const mm_plan *m, int w)
{
    return w ? m->bg && !m->bw : m->ag && !m->aw;
}

/* The most LX bytes the staged sticks of A (*na) and of B (*nb) take in
 * one A/B slot, over the blocks and K chunks of the core tile of rows
 * [m0, m0 + mt) and sticks [g0, g0 + ns) walked with tiling tl. */
static void mm_stage_need(const mm_plan *m, const mm_tiling *tl, int64_t m0, int64_t mt, int64_t g0, int64_t ns,
                          int64_t *na, int64_t *nb)
{
    const int64_t sb = m->c->t.stick;
    *na = mm_stages(m, 0) ? mm_stage_most(m, tl, 0, m0, mt) * sb : 0;
    *nb = mm_stages(m, 1) ? mm_stage_most(m, tl, 1, g0, ns) * sb : 0;
}

/* mm_stage_need for a core's emission: each operand's figure is the last
 * core's when its part is the same (the cores of a grid row share A's
 * rows, of a column B's sticks: measuring each again walked every
 * element of their spans once per core). */
static void mm_stage_need_memo(mm_plan *m, const mm_tiling *tl, int64_t m0, int64_t mt, int64_t g0, int64_t ns,
                               int64_t *na, int64_t *nb)
{
    const int64_t at[2] = {m0, g0}, len[2] = {mt, ns};
    for (int w = 0; w < 2; w++) {
        mm_stage_memo *q = &m->smemo[w];
        int64_t *out = w ? nb : na;
        if (!mm_stages(m, w)) {
            *out = 0;
            continue;
        }
        if (!(q->set && q->MB == tl->MB && q->NBS == tl->NBS && q->KC == tl->KC && q->at == at[w] &&
              q->len == len[w]))
            *q = (mm_stage_memo){1, tl->MB, tl->NBS, tl->KC, at[w], len[w],
                                 mm_stage_most(m, tl, w, at[w], len[w]) * m->c->t.stick};
        *out = q->bytes;
    }
}

/* LX a core of tile (m0, mt, g0, ns) needs with tiling tl, the staged
 * sticks measured; *est the same with them estimated. */
static int64_t mm_lx_measured(const mm_plan *m, const mm_tiling *tl, int64_t m0, int64_t mt, int64_t g0, int64_t ns,
                              int64_t *est)
{
    int64_t na, nb;
    mm_stage_need(m, tl, m0, mt, g0, ns, &na, &nb);
    *est = mm_lx_bytes(m, tl->MB, tl->NBS, tl->KC) + m->stage_bytes + m->whole_bytes;
    return *est + 2 * (na + nb - mm_stage_est(m, tl->MB, tl->NBS, tl->KC));
}

/* Split-K takes one block per core (the partial sums of the whole tile
 * stay in LX until reduced), operands the PT reads as they are, no batch. */
static int mm_splitk_ok(const mm_plan *m, const mm_tiling *tl, int64_t mt, int64_t ns)
{
    return cc_ceil_div(mt, tl->MB) * cc_ceil_div(ns, tl->NBS) == 1 && m->nbatch == 1 && !m->ag && !m->bg &&
           !m->stage_bytes && m->gk <= m->KG;
}

/* Estimated cycles of the kernel on a gm x gn grid (DBL_MAX: no tiling
 * fits LX), the DRAM bytes it moves and the tiling of its largest tile. */
static double mm_cost_tiled(const mm_plan *m, int64_t gm, int64_t gn, double *bytes, mm_tiling *tl)
{
    if (mm_block(m, gm, gn, cc_ceil_div(m->M, gm), cc_ceil_div(m->GN, gn), tl))
        return DBL_MAX;
    if (m->gk > 1 && !mm_splitk_ok(m, tl, cc_ceil_div(m->M, gm), cc_ceil_div(m->GN, gn)))
        return DBL_MAX;
    *bytes = tl->bytes;
    return tl->cycles;
}

/* mm_cost_tiled without the tiling. */
static double mm_cost(const mm_plan *m, int64_t gm, int64_t gn, double *bytes)
{
    mm_tiling tl;
    return mm_cost_tiled(m, gm, gn, bytes, &tl);
}

/* Does each core's part of the rows (batch indices times M) lie where a
 * row kernel on as many cores would have it?  Without a batch, any
 * split of M does; a batch split only with whole M per index (gm 1) and
 * the indices divided evenly: core c's indices [c*nb, (c+1)*nb) are
 * then rows [c*nb*M, (c+1)*nb*M), cc_split's part of the rows (the
 * attention scores, one head per core, stay in LX from QK^T through
 * the softmax to PV). */
static int mm_rows_split(const mm_plan *m, const be_work *w)
{
    /* the work's batch parts: a plan built for the access or the
     * alignment check has none of its own (mm_shape's gb 1) */
    return m->nbatch == 1 || (w->gm == 1 && m->nbatch % (w->gb > 1 ? w->gb : 1) == 0 && !w->bcast);
}

/* Can this kernel take A and its epilogue's tiles from, and leave its
 * results in, LX regions kept across kernels?  With one core per row
 * part (gn 1) a core's rows are a contiguous part as in row kernels
 * (mm_rows_split); then each buffer walked aligned (be_rows_aligned)
 * qualifies. */
static int mm_may_align_a(const mm_plan *m)
{
    if (m->ag)
        return 0;
    rk_plan a = {0};
    a.c = m->c;
    a.rsp = m->arsp;
    a.rows = m->nbatch * m->M;
    a.G = m->KG;
    a.cols = m->Kd;
    return be_rows_aligned(&a, m->mm->a, &m->av);
}

/* ... on the split the kernel has: A's rows (as mm_may_align_a finds,
 * on any split: mm_build reads none of the split for them) each core's
 * contiguous part. */
static int mm_aligned_a(const mm_plan *m, int pos)
{
    const be_work *w = &m->c->work[pos];
    return (w->gn == 1 || w->bcast) && w->gk <= 1 && mm_rows_split(m, w) && mm_may_align_a(m);
}

/* ... a tile the epilogue reads (out 0) or writes (out 1): a grid over
 * the ring (gm x gn r) computes other cores' rows, so it reads their
 * tiles from DRAM, and sends its results to the cores that keep them. */
static int mm_aligned_tile(const mm_plan *m, int pos, int buf, const be_view *v, int out)
{
    const be_work *w = &m->c->work[pos];
    return (w->gn == 1 || (w->bcast && out)) && w->gk <= 1 && mm_rows_split(m, w) && be_rows_aligned(&m->ep, buf, v);
}

/* ... or as the tiles of its cores, a grid over the ring (be_access.grid:
 * its columns), for another product on the same grid: k1 of Llama-8B's
 * MLP reads the gate product's result as its epilogue's tiles. */
static int mm_grid_tile(const mm_plan *m, int pos, int buf, const be_view *v)
{
    const be_work *w = &m->c->work[pos];
    return w->bcast && w->gn > 1 && w->gk <= 1 && m->nbatch == 1 && be_rows_aligned(&m->ep, buf, v) ? (int)w->gn : 0;
}

/* ... A, as the tiles of its cores that a product on the same grid kept
 * (its result's column block j is the K stick groups core j of a grid row
 * multiplies): Llama-8B's down product reads the SiLU product's result
 * so.  A's rows aligned as for mm_aligned_a, and B streamed in K chunks:
 * the core holding a chunk's tile sends the grid row's rows of it, gn
 * times a core's own rows, so the first chunk comes in later; a product
 * whose B fits whole is short enough for that to show (the 1024 chain's
 * middle product: 0.708 -> 0.702 of peak with A in tiles). */
static int mm_grid_tile_a(const mm_plan *m, int pos)
{
    const be_work *w = &m->c->work[pos];
    if (!w->bcast || w->gn < 2 || !mm_aligned_a(m, pos) || m->nbatch != 1 || !mm_rg_tile_chunks(m, w->gn, 0))
        return 0;
    mm_plan t = *m; /* tiled as it would be with A in tiles */
    t.atile = (int)w->gn;
    t.alx = 1;
    mm_tiling tl;
    return !mm_rg_tiling(&t, w->gm, w->gn, &tl) && tl.slots ? (int)w->gn : 0;
}

int be_matmul_access(be_ctx *c, int pos, be_access **out, int *n)
{
    mm_plan m;
    *out = NULL;
    *n = 0;
    if (mm_build(c, pos, &m)) {
        mm_free(&m);
        return -1;
    }
    be_access *a = ir_xalloc((size_t)(m.ep.nl + m.ep.nn + 3) * sizeof *a);
    const be_work *w = &c->work[pos];
    const int bcast = w->bcast; /* rg_a_out copies A's own rows: be_res_fill */
    /* every core reads all of its batches' rows, only its own groups (staged whole or per block alike) */
    const int whole = !bcast && w->gm == 1 && w->gn == 1 && w->gk <= 1;
    a[(*n)++] = (be_access){.buf = m.mm->a,
                            .aligned = mm_aligned_a(&m, pos),
                            .may_align = mm_may_align_a(&m),
                            .grid = mm_grid_tile_a(&m, pos),
                            .keeps = bcast,
                            .groups = whole};
    a[(*n)++] = (be_access){.buf = m.mm->b, .groups = whole};
    for (int i = 0; i < m.ep.nl; i++) {
        const rk_load *L = &m.ep.loads[i];
        const int buf = c->p->A.e[L->e].buf, tile = L->cls == BE_V_TILE && !L->staged && !L->gather;
        a[(*n)++] = (be_access){.buf = buf,
                                .aligned = tile && mm_aligned_tile(&m, pos, buf, &L->v, 0),
                                .may_align = tile && be_rows_aligned(&m.ep, buf, &L->v),
                                .grid = tile ? mm_grid_tile(&m, pos, buf, &L->v) : 0};
    }
    for (int j = 0; j < m.ep.nn; j++) {
        const rk_node *rn = &m.ep.nodes[j];
        const int buf = c->p->nodes[rn->node].out;
        const int aligned = !rn->staged && mm_aligned_tile(&m, pos, buf, &rn->sv, 1);
        if (rn->dram) /* a grid over the ring sends its pieces anywhere (be_heads_send) */
            a[(*n)++] = (be_access){.buf = buf,
                                    .write = 1,
                                    .aligned = aligned,
                                    .grid = rn->staged ? 0 : mm_grid_tile(&m, pos, buf, &rn->sv),
                                    .sends = aligned && bcast && w->gn > 1};
    }
    mm_free(&m);
    *out = a;
    return 0;
}

/* The stick groups of buf operand w (0 A, 1 B) of batch index b reads,
 * into held; -1 when one is read only in part. */
static int mm_held(const mm_plan *m, int w, int buf, int64_t b, char *held)
{
    const be_layout *L = &m->c->lay[buf];
    int64_t *lo = ir_xmalloc((size_t)L->groups * 2 * sizeof *lo), *hi = lo + L->groups, rc = 0;
    if (w)
        mm_span(m, buf, &m->mm->bidx, b, m->vk, 0, m->Kd, m->vn, 0, m->N, lo, hi);
    else
        mm_span(m, buf, &m->mm->aidx, b, m->vm, 0, m->M, m->vk, 0, m->Kd, lo, hi);
    for (int64_t g = 0; g < L->groups; g++) {
        if (lo[g] > hi[g])
            continue;
        held[g] = 1;
        rc |= lo[g] != 0 || hi[g] != L->rows - 1 ? -1 : 0;
    }
    free(lo);
    return (int)rc;
}

int be_matmul_groups(be_ctx *c, int pos, int buf, int core, char *held)
{
    mm_plan m;
    if (mm_build(c, pos, &m)) {
        mm_free(&m);
        return -1;
    }
    int64_t b0, bt;
    const int gb = c->work[pos].gb > 1 ? (int)c->work[pos].gb : 1;
    cc_split(m.nbatch, gb, core, &b0, &bt);
    int rc = 0;
    for (int64_t b = b0; b < b0 + bt && !rc; b++)
        for (int w = 0; w < 2 && !rc; w++)
            if ((w ? m.mm->b : m.mm->a) == buf)
                rc = mm_held(&m, w, buf, b, held);
    mm_free(&m);
    return rc;
}

double be_matmul_estimate(be_ctx *c, int pos)
{
    mm_plan m;
    double e = DBL_MAX, bytes;
    if (!mm_build(c, pos, &m)) {
        m.ends = c->waits; /* the report's: as the kernel runs */
        mm_set_whole(&m, c->work[pos].stage_whole);
        mm_set_gk(&m, c->work[pos].gk ? c->work[pos].gk : 1);
        m.gb = c->work[pos].gb > 1 ? c->work[pos].gb : 1;
        mm_tiling tl;
        if (c->work[pos].bcast)
            e = mm_ring_tiling(&m, &c->work[pos], &tl) ? DBL_MAX : tl.cycles;
        else
            e = mm_cost(&m, c->work[pos].gm, c->work[pos].gn, &bytes);
    }
    mm_free(&m);
    return e;
}

/* A work_div override (backend.c checked the core count): its grid's
 * estimate, or an error when the operands are too small for it. */
static int mm_plan_override(be_ctx *c, int pos, mm_plan *m, double *best)
{
    be_work *w = &c->work[pos];
    double bytes;
    const char *r = w->bcast ? "r" : "";
    if (w->gm > m->M)
        return be_error(c, m->K, "work_div %" PRId64 "x%" PRId64 "%s: M has %" PRId64 " rows, fewer than %" PRId64
                        " parts", w->gm, w->gn, r, m->M, w->gm);
    if (w->gn > m->GN)
        return be_error(c, m->K, "work_div %" PRId64 "x%" PRId64 "%s: N has %" PRId64 " sticks (%" PRId64
                        " columns), fewer than %" PRId64 " parts", w->gm, w->gn, r, m->GN, m->N, w->gn);
    if (w->gk > m->KG)
        return be_error(c, m->K, "work_div %" PRId64 "x%" PRId64 "x%" PRId64 ": K has %" PRId64
                        " sticks, fewer than %" PRId64 " parts", w->gm, w->gn, w->gk, m->KG, w->gk);
    if (w->gb > m->nbatch)
        return be_error(c, m->K, "work_div %" PRId64 "x%" PRId64 "b%" PRId64 ": the product has %" PRId64
                        " batch indices, fewer than %" PRId64 " parts", w->gm, w->gn, w->gb, m->nbatch, w->gb);
    mm_set_gk(m, w->gk);
    m->gb = w->gb > 1 ? w->gb : 1;
    *best = mm_cost(m, w->gm, w->gn, &bytes);
    if (*best == DBL_MAX && w->gk > 1)
        return be_error(c, m->K, "work_div %" PRId64 "x%" PRId64 "x%" PRId64 ": split-K needs one block "
                        "per core that fits LX, no batch and no restickified operand", w->gm, w->gn, w->gk);
    return 0;
}

/* The axes the cores split a product along (mm_parts_whole). */
enum { MM_SPLIT_BATCH, MM_SPLIT_ROWS, MM_SPLIT_COLS };

/* Where in rn's stored buffer part i of `parts` along axis begins: its
 * first batch index, row or stick of columns (cc_split's parts). */
static int64_t mm_part_at(const mm_plan *m, const rk_node *rn, int axis, int64_t parts, int64_t i)
{
    int64_t p0, pt, at = rn->store.offset;
    if (axis == MM_SPLIT_ROWS) {
        cc_split(m->M, parts, i, &p0, &pt);
        return at + rn->store.coef[m->vm] * p0;
    }
    if (axis == MM_SPLIT_COLS) {
        cc_split(m->GN, parts, i, &p0, &pt);
        return at + rn->store.coef[m->vn] * p0 * m->c->t.lanes16;
    }
    cc_split(m->nbatch, parts, i, &p0, &pt);
    for (int v = m->nb - 1; v >= 0; v--) {
        at += rn->store.coef[v] * (p0 % m->mm->ranges[v]);
        p0 /= m->mm->ranges[v];
    }
    return at;
}

/* Does every core's part of a split of axis in `parts` start its staged
 * results at a stick's start?  A staged result is stored in whole sticks
 * only (be_store_staged): a part starting mid-stick would leave the
 * stick's rest to another core.  Rows: a conv's NCHW output, m along a
 * row of ow.  Batch: a grouped convolution's groups, their columns side
 * by side in a stick (8 channels a group, 16 in all).  Columns: mv's 250
 * results stored as [5, 5, 10], a stick of columns 6.4 rows.  A row or
 * column variable that does not walk the stick dim parts no stick. */
static int mm_parts_whole(const be_ctx *c, const mm_plan *m, int axis, int64_t parts)
{
    const int v = axis == MM_SPLIT_ROWS ? m->vm : axis == MM_SPLIT_COLS ? m->vn : -1;
    for (int j = 0; j < m->ep.nn; j++) {
        const rk_node *rn = &m->ep.nodes[j];
        const ir_node *N = &c->p->nodes[rn->node];
        const gr_ttype *t = &c->p->bufs[N->out].type;
        const int sd = c->lay[N->out].stick_dim;
        int64_t co[GR_MAX_RANK];
        if (!rn->staged || !t->rank)
            continue;
        if (v >= 0) {
            if (rn->store.coef[v] <= 0)
                continue;
            be_coords_of(t, rn->store.coef[v], co);
            if (!co[sd])
                continue;
        }
        for (int64_t i = 1; i < parts; i++) {
            be_coords_of(t, mm_part_at(m, rn, axis, parts, i), co);
            if (co[sd] % c->t.lanes16)
                return 0;
        }
    }
    return 1;
}

/* A split of the batch must look this much better than the best
 * division without one: the splits of products of many rows estimated
 * 12% and more better ran faster (prefill's QK^T 1x2b2: 270,400 against
 * 308,288, simulated 368,287 against 479,183).  Products of fewer rows
 * than a PT pass were not split while an operand staged whole was loaded
 * whole by every core (spyre serve's decode layer at context 2,688, 4
 * rows per KV head: 1x1b8 simulated 16,099 against 9,878 on the 2x2
 * grid); each core now stages its part, and serve_tiny's decode steps
 * split QK^T and PV over the KV heads of their sequences (decode_b4_c256
 * 27,119 -> 16,654 cycles, its PV over 8 cores 9,186 -> 3,535). */
#define MM_BATCH_GAIN 0.10

/* The cheapest gb x gm x gn x gk division by the cost model; near-ties
 * go to the one found first: the batch whole, fewer rows of cores, no
 * split of K (which a batched product cannot take), except between
 * splits of the batch whose K runs in chunks: there the one of more
 * parts wins.  The estimate is DRAM-bound for these and alike for any
 * number of parts, but a core streams its chunks slower than its share
 * of the DRAM (the prefill layer's PV product, K 512 in chunks of 64:
 * 1x1b5 estimated 232,136 cycles and simulated 488,589, 1x1b32 231,703
 * and 275,451); with K whole fewer parts ran faster (its QK^T, K 128:
 * 1x2b2 370,097, 1x1b32 441,546), except when the result stays in LX
 * (mm_keeps_rows): the row kernel reading it aligns with the product's
 * cores and runs faster on more (BERT-base's QK^T, softmax and PV, K 64:
 * 1x1b4 227,915 cycles for the layer, 1x1b12 218,443). */
/* The grid memo emptied, for the state m is priced in now: only the
 * entries priced since it was last emptied are cleared (a search prices
 * some 30 of the 1,089 on 32 cores). */
static void mm_gmemo_begin(mm_plan *m, int64_t cores)
{
    mm_grid_memo *g = &m->gmemo;
    const size_t n = (size_t)(cores + 1) * (size_t)(cores + 1);
    if (!g->e && !be_mmmemo_grid_take(m->c, g)) {
        g->e = ir_xmalloc(n * sizeof *g->e);
        g->waited = ir_xmalloc(n * sizeof *g->waited);
        g->set = ir_xmalloc(n * sizeof *g->set);
        for (size_t i = 0; i < n; i++)
            g->e[i] = -1;
    }
    for (int i = 0; i < g->nset; i++)
        g->e[g->set[i]] = -1;
    g->nset = 0;
    g->aw = m->aw;
    g->bw = m->bw;
    g->whole_dram = m->whole_dram;
    g->ends = m->ends;
    g->waits = m->c->waits;
    g->sscale = m->sscale;
}

/* Where the memo keeps gm x gn's estimate in m's state now (K and the
 * batch whole), or NULL: priced in another.  whole_dram is read only
 * for an operand staged whole (mm_in_bytes). */
static double *mm_gmemo_at(const mm_plan *m, int64_t gm, int64_t gn)
{
    const mm_grid_memo *g = &m->gmemo;
    const int64_t cores = m->c->cfg->cores;
    if (!g->e || m->gk != 1 || m->gb != 1 || g->aw != m->aw || g->bw != m->bw || g->ends != m->ends ||
        g->waits != m->c->waits || g->sscale != m->sscale ||
        (g->whole_dram != m->whole_dram && (m->aw || m->bw)) || gm > cores || gn > cores)
        return NULL;
    return &g->e[gm * (cores + 1) + gn];
}

/* Entry i of the grid memo priced e (waited: mm_gmemo's). */
static void mm_gmemo_put(mm_grid_memo *g, int32_t i, double e, double waited)
{
    if (g->e[i] < 0)
        g->set[g->nset++] = i;
    g->e[i] = e;
    g->waited[i] = waited;
}

/* A floor under mm_cost_tiled of grid gm x gn in m's state: the
 * estimate is at least the staging before the first block and the DRAM
 * term, whose bytes are at least those of a tile of one block (more
 * blocks read A or B again: mm_in_bytes grows with nbm and nbn), without
 * the epilogue's operands; 0 with the ends priced (their serial bytes
 * leave the DRAM term).  Less a relative 1e-9, far above the rounding of
 * either sum.  With no operand staged whole it never falls as gn grows
 * (gm, gk, gb the same): no staging, A's bytes over the grid grow with
 * gn, B's stay, and A from LX and results kept in LX (G's a_lx, kept)
 * take bytes off at gn 1 only; each sum's addends never falling, nor do
 * their rounded sums. */
static double mm_grid_floor(const mm_plan *m, int64_t gm, int64_t gn)
{
    const cc_target *t = &m->c->t;
    if (m->ends || t->dram_bytes_per_cycle <= 0)
        return 0;
    mm_grid_est G;
    double a_core, a_chip, b_core, b_chip;
    mm_grid_of(m, gm, gn, cc_ceil_div(m->M, gm), cc_ceil_div(m->GN, gn), &G);
    mm_in_bytes(m, &G, 1, 1, &a_core, &a_chip, &b_core, &b_chip);
    return (G.stage + (a_chip + b_chip + G.o_chip + G.w_chip) / t->dram_bytes_per_cycle) * (1 - 1e-9);
}

/* Can the search's grid gm x gn (m's gb, gk) not be picked, its estimate
 * at least mm_grid_floor?  The decode layer's one-row products are
 * DRAM-bound on every grid, within the slack of the floor, and its
 * batched products with K or V staged whole read it once per core: their
 * splits were most of the search's 2,141 estimates.  A plain grid (K
 * whole, no batch) skipped leaves its entry of the grid memo unset; the
 * tie break (mm_plan_ties) then prices it itself, the same call and the
 * same double.  BERT-base's plain grids past their floor: 1,386 of 1,470,
 * 658 of them first searches of a tile (the more cores, the more bytes
 * each grid row or column reads again). */
static int mm_search_skips(const be_work *w, const mm_plan *m, int64_t gm, int64_t gn, double best, double *floor)
{
    if (best == DBL_MAX)
        return 0;
    const double slack = m->gb > 1 && w->gb == 1 ? MM_BATCH_GAIN : MM_SLACK;
    const double low = (*floor = mm_grid_floor(m, gm, gn)) + (m->gk > 1 ? MM_SPLITK_CYCLES : 0);
    if (m->gb > w->gb && w->gb > 1 && low < best * (1 + MM_SLACK))
        return 0;
    return low >= best * (1 - slack);
}

/* mm_cost_tiled of gm x gn, kept in the grid memo when m is in the
 * memo's state (with the estimate of a short product's tiling chosen
 * with the DRAM's waits priced: mm_cost_waits_k1). */
static double mm_grid_cost(mm_plan *m, int64_t gm, int64_t gn, mm_tiling *tl)
{
    double bytes;
    const double e = mm_cost_tiled(m, gm, gn, &bytes, tl);
    const double *memo = mm_gmemo_at(m, gm, gn);
    if (memo)
        mm_gmemo_put(&m->gmemo, (int32_t)(memo - m->gmemo.e), e, e == DBL_MAX ? DBL_MAX : tl->waited);
    return e;
}

/* Bit g set when g parts of axis (rows of M, sticks of columns or the
 * batch) keep the staged results' sticks whole (mm_parts_whole), for g up
 * to the cores, the axis's extent and 63. */
static uint64_t mm_whole_parts(const be_ctx *c, const mm_plan *m, int axis)
{
    const int64_t extent = axis == MM_SPLIT_ROWS ? m->M : axis == MM_SPLIT_COLS ? m->GN : m->nbatch;
    const int64_t most = cc_min(cc_min(c->cfg->cores, extent), 63);
    uint64_t whole = 0;
    for (int64_t g = 1; g <= most; g++)
        whole |= (uint64_t)mm_parts_whole(c, m, axis, g) << g;
    return whole;
}

/* Are g parts of axis whole: bit g of whole (mm_whole_parts) or, past 63, asked. */
static int mm_whole_at(const be_ctx *c, const mm_plan *m, uint64_t whole, int axis, int64_t g)
{
    return g < 64 ? (int)(whole >> g & 1) : mm_parts_whole(c, m, axis, g);
}

/* Every gb x gk x gm x gn grid not skipped, priced (mm_plan_search);
 * whole[]: mm_whole_parts of the rows, the columns and the batch. */
static void mm_grid_search(be_ctx *c, int pos, mm_plan *m, const uint64_t whole[3], double *best)
{
    be_work *w = &c->work[pos];
    const int64_t cores = c->cfg->cores;
    const int64_t most_gb = cc_min(cores, m->nbatch);
    for (int64_t gb = 1; gb <= most_gb; gb++) {
        if (gb > 1 && !mm_whole_at(c, m, whole[2], MM_SPLIT_BATCH, gb))
            continue;
        for (int64_t gk = 1; gk <= (m->nbatch > 1 ? 1 : cc_min(cores, m->KG)); gk++)
            for (int64_t gm = 1; gm <= cc_min(cores / (gb * gk), m->M); gm++) {
                if (!mm_whole_at(c, m, whole[0], MM_SPLIT_ROWS, gm))
                    continue;
                for (int64_t gn = 1; gn <= cc_min(cores / (gb * gm * gk), m->GN); gn++) {
                    if (!mm_whole_at(c, m, whole[1], MM_SPLIT_COLS, gn))
                        continue;
                    mm_set_gk(m, gk);
                    m->gb = gb;
                    double floor = -1; /* (mm_search_skips's, when it made it) */
                    if (mm_search_skips(w, m, gm, gn, *best, &floor)) {
                        if (!m->aw && !m->bw) /* then so is every later gn (mm_grid_floor) */
                            break;
                        continue;
                    }
                    mm_tiling tl;
                    const double e = mm_grid_cost(m, gm, gn, &tl);
                    assert(e >= (floor >= 0 ? floor : mm_grid_floor(m, gm, gn))); /* a floor under every grid */
                    const double slack = gb > 1 && w->gb == 1 ? MM_BATCH_GAIN : MM_SLACK;
                    if (e + (gk > 1 ? MM_SPLITK_CYCLES : 0) < *best * (1 - slack) ||
                        (gb > w->gb && w->gb > 1 && (tl.nch > 1 || mm_keeps_rows(m, gm, gn) || mm_reads_rows(m, gm, gn)) &&
                         e < *best * (1 + MM_SLACK))) {
                        *best = e < *best ? e : *best;
                        w->gm = gm;
                        w->gn = gn;
                        w->gk = gk;
                        w->gb = gb;
                    }
                }
            }
    }
}

/* m's key for its grid search: the plan's (mm_plan_key_of), which with a
 * grid and tile gives mm_grid_of's parts, so the tiling search's key, and
 * the floors, given what mm_whole_share reads of an operand staged whole:
 * for a product of a PT pass of rows or more its buffer's bytes, kept in
 * the key's G (the search's key has no grid), else more (no key); whole
 * (mm_whole_parts of the rows, the columns and the batch, read from the
 * program; up to 63 cores, else no key) as gm, gn and ns; mt -2, which no
 * tile's key has.  The results' lxonly flags
 * are read only for a batch (mm_keeps_rows): without one they are left
 * out, as mm_block_key_of leaves them.  -1: no key. */
static int mm_search_key_of(const be_ctx *c, const mm_plan *m, const uint64_t whole[3], mm_block_key *k)
{
    if (((m->aw || m->bw) && m->M < c->cfg->pt_rows) || c->cfg->cores > 63 || mm_plan_key_of(m, k))
        return -1;
    if (m->nbatch == 1) {
        k->lxonly = 0;
        memset(k->lxo, 0, sizeof k->lxo);
    }
    k->a_bytes = m->aw ? (double)be_buf_bytes(c, m->mm->a) : 0;
    k->b_bytes = m->bw ? (double)be_buf_bytes(c, m->mm->b) : 0;
    k->gm = (int64_t)whole[0];
    k->gn = (int64_t)whole[1];
    k->ns = (int64_t)whole[2];
    k->mt = -2;
    return 0;
}

/* The grid memo's entries the search priced, in r (their arrays from
 * ir_xmalloc, which be_mmsearch_keep copies). */
static void mm_search_entries(const mm_plan *m, mm_search_result *r)
{
    const mm_grid_memo *g = &m->gmemo;
    r->n = g->nset;
    r->at = ir_xmalloc((size_t)g->nset * sizeof *r->at);
    r->e = ir_xmalloc((size_t)g->nset * sizeof *r->e);
    r->waited = ir_xmalloc((size_t)g->nset * sizeof *r->waited);
    for (int i = 0; i < g->nset; i++) {
        r->at[i] = g->set[i];
        r->e[i] = g->e[g->set[i]];
        r->waited[i] = g->waited[g->set[i]];
    }
}

/* The cheapest grid by the cost model (mm_grid_search), remembered for
 * the compile by everything the search reads (mm_search_key_of): the
 * products apart search the fused attempt's grids again (BERT-base's
 * output projection, FFN pair, QK^T and PV), and projections of one
 * shape and epilogue each other's (its k and v apart, q's).  A search
 * recalled puts back its grid, its estimate and the grid memo's entries
 * as it left them. */
static void mm_plan_search(be_ctx *c, int pos, mm_plan *m, double *best)
{
    be_work *w = &c->work[pos];
    w->gk = w->gb = 1;
    mm_gmemo_begin(m, c->cfg->cores);
    mm_block_key k;
    const uint64_t whole[3] = {mm_whole_parts(c, m, MM_SPLIT_ROWS), mm_whole_parts(c, m, MM_SPLIT_COLS),
                               mm_whole_parts(c, m, MM_SPLIT_BATCH)};
    const int keyed = !mm_search_key_of(c, m, whole, &k);
    const uint64_t h = keyed ? mm_block_hash(&k) : 0;
    const mm_search_result *r = keyed ? be_mmsearch_find(c, &k, sizeof k, h) : NULL;
    if (r) {
        w->gm = r->gm, w->gn = r->gn, w->gk = r->gk, w->gb = r->gb;
        *best = r->best;
        for (int i = 0; i < r->n; i++)
            mm_gmemo_put(&m->gmemo, r->at[i], r->e[i], r->waited[i]);
    } else {
        mm_grid_search(c, pos, m, whole, best);
        if (keyed) {
            mm_search_result got = {.gm = w->gm, .gn = w->gn, .gk = w->gk, .gb = w->gb, .best = *best};
            mm_search_entries(m, &got);
            be_mmsearch_keep(c, &k, sizeof k, h, &got);
            free(got.at);
            free(got.e);
            free(got.waited);
        }
    }
    mm_set_gk(m, w->gk);
    m->gb = w->gb;
}

/* How much more the staged sticks of some core's blocks measure than
 * estimated, where that core's LX would overflow (0: none does). */
static double mm_stage_growth(be_ctx *c, int pos, const mm_plan *m)
{
    const be_work *w = &c->work[pos];
    double grow = 0;
    for (int64_t core = 0; core < w->gm * w->gn; core++) {
        int64_t m0, mt, g0, ns, est;
        mm_tiling tl;
        cc_split(m->M, w->gm, core / w->gn, &m0, &mt);
        cc_split(m->GN, w->gn, core % w->gn, &g0, &ns);
        if (!mt || !ns || mm_block(m, w->gm, w->gn, mt, ns, &tl))
            continue;
        int64_t need = mm_lx_measured(m, &tl, m0, mt, g0, ns, &est);
        if (need > be_lx_budget(c, pos)) {
            double se = (double)mm_stage_est(m, tl.MB, tl.NBS, tl.KC);
            double sm = se + (double)(need - est) / 2;
            grow = grow > sm / se ? grow : sm / se;
        }
    }
    return grow;
}

/* The grid of one staging mask (over: a work_div's): pick with the
 * staged sticks estimated, measure them on every core's blocks, and pick
 * again with the estimate scaled up while some core's LX would overflow. */
static int mm_plan_mask(be_ctx *c, int pos, mm_plan *m, int over, int mask, double *best)
{
    be_work *w = &c->work[pos];
    int rc = 0;
    w->stage_whole = mask;
    mm_set_whole(m, mask);
    m->sscale = 1;
    w->stage_scale = 0;
    for (int round = 0; round < 8 && !rc; round++) {
        *best = DBL_MAX;
        if (over) {
            rc = mm_plan_override(c, pos, m, best);
        } else {
            w->gm = w->gn = 0;
            mm_plan_search(c, pos, m, best);
        }
        if (rc || *best == DBL_MAX || !((m->ag && !m->aw) || (m->bg && !m->bw)))
            break;
        double grow = mm_stage_growth(c, pos, m);
        if (grow == 0)
            break;
        m->sscale *= grow > 1.1 ? grow : 1.1;
        w->stage_scale = m->sscale;
        *best = DBL_MAX;
    }
    return rc;
}

/* Staging fewer operands whole must look this much better: each block
 * then stages its own sticks, a DRAM latency per block the estimate does
 * not count (BERT-base's QK^T, k^T staged per head instead of whole on
 * each of 2 cores: 19% better estimated, 15,767 -> 10,733 cycles).  Nor
 * is it tried for products of fewer rows than a PT pass, where that
 * latency is most of a block (gpt2_gen's decode step, k^T of 4 heads of
 * one row staged per head: 1,338 -> 2,171 cycles). */
#define MM_STAGE_GAIN 0.10

/* The grid (over: a work_div's). Restickified operands are staged whole
 * once per core (both, one or none; whole, every core reads the operand's
 * every stick) or per block, whichever the cost model prefers by
 * MM_STAGE_GAIN, else the first of both, one, none.  A product of fewer
 * rows than a PT pass stages whole only, and its grid is searched with
 * every core reading the operand whole (serve_tiny's decode QK^T, k^T
 * from the cache pool: 1x4, each core staging all of it, 6,549 cycles;
 * 1x1 2,294).  Where the masks are compared the grid is searched with a
 * core's share: the choices do not price the staging before the first
 * block (the report does), and so pricing it whole there moved
 * encoder_small's QK^T and PV from per-block staging on 8 cores to whole
 * on 3 (13,015 -> 15,945 cycles). */
static int mm_plan_grid(be_ctx *c, int pos, mm_plan *m, int over, double *best)
{
    be_work *w = &c->work[pos];
    const int full = (m->ag ? 1 : 0) | (m->bg ? 2 : 0);
    const int masks[4] = {full, full == 3 ? 1 : 0, full == 3 ? 2 : 0, 0};
    be_work keep = *w, start = *w;
    double sscale = 1, e, cmp = DBL_MAX;
    int rc = 0, kept = -1;
    const int nmasks = m->M >= c->cfg->pt_rows ? 4 : 1;
    *best = DBL_MAX;
    for (int mi = 0; mi < 4 && !rc; mi++) {
        if ((mi && masks[mi] == masks[mi - 1]) || (mi >= nmasks && kept >= 0)) /* (else: none fits whole) */
            continue;
        *w = start;
        m->whole_dram = nmasks == 1;
        rc = mm_plan_mask(c, pos, m, over, masks[mi], &e);
        m->whole_dram = 0;
        double bytes, whole = e;
        mm_tiling tl;
        if (!rc && e != DBL_MAX && (m->aw || m->bw)) {
            m->whole_dram = 1;
            whole = mm_cost_tiled(m, w->gm, w->gn, &bytes, &tl);
            m->whole_dram = 0;
        }
        if (!rc && e != DBL_MAX && (kept < 0 || whole < cmp * (1 - MM_STAGE_GAIN))) {
            cmp = whole;
            *best = e;
            keep = *w;
            sscale = m->sscale;
            kept = masks[mi];
        }
    }
    if (kept >= 0) {
        *w = keep;
        mm_set_whole(m, kept);
        m->sscale = sscale;
    }
    return rc;
}

/* No grid fits: name the forced tiling, or LX's size. */
static int mm_plan_unfit(be_ctx *c, int pos, const mm_plan *m)
{
    const be_work *w = &c->work[pos];
    if (w->mb)
        return be_error(c, m->K,
                        "work_div tiling %" PRId64 "x%" PRId64 "x%" PRId64
                        ": the blocks do not fit %llu bytes of LX, or the K chunk is not a multiple of %" PRId64,
                        w->mb, w->nbs, w->kc, (unsigned long long)be_lx_budget(c, pos), c->t.lanes16);
    return be_error(c, m->K, "no block of the product fits %llu bytes of LX", (unsigned long long)be_lx_budget(c, pos));
}

/* A work_div asking for B over the ring (GMx1r, GMxGNr): its estimate, or
 * why it cannot run. */
static int mm_plan_ring_override(be_ctx *c, int pos, mm_plan *m, double *best)
{
    be_work *w = &c->work[pos];
    mm_tiling tl;
    int rc = 0;
    if (mm_ring_tiling(m, w, &tl))
        rc = be_error(c, m->K, "work_div %" PRId64 "x%" PRId64 "r: %s cannot run over the ring here (a batch, "
                      "a restickified operand or staged result, fewer rows than cores, no tiling that "
                      "fits LX%s)", w->gm, w->gn, w->gn > 1 ? "the grid" : "B",
                      w->gn > 1 ? ", or forced blocks smaller than a core's whole tile" : "");
    *best = rc ? DBL_MAX : tl.cycles;
    return rc;
}

/* Does the grid chosen give each core one block (one batch index, one
 * block of its tile)?  Then nothing overlaps the DRAM's waits, its ends
 * run in series (mm_ends), and *cmp becomes its estimate so priced, to
 * be set against the schemes over the ring with their way in's wait
 * (serve_tiny's prefill, the MLP's up product 64 x 160 x 64: 1x3
 * estimated 1,092 cycles without either, 2,422 with, simulated 2,705
 * over 7 refresh phases; 16x2r estimated 2,212, simulated 1,916). */
static double mm_cost_waits(be_ctx *c, mm_plan *m, int64_t gm, int64_t gn, int64_t gk);

static int mm_one_block_waits(be_ctx *c, mm_plan *m, double *cmp)
{
    const be_work *w = &c->work[m->ep.pos];
    const int64_t mt = cc_ceil_div(m->M, w->gm), ns = cc_ceil_div(m->GN, w->gn);
    mm_tiling tl;
    if (w->gk > 1 || cc_ceil_div(m->nbatch, m->gb) > 1 || mm_block(m, w->gm, w->gn, mt, ns, &tl) ||
        tl.MB < mt || tl.NBS < ns)
        return 0;
    m->ends = 1;
    *cmp = mm_cost_waits(c, m, w->gm, w->gn, w->gk);
    m->ends = 0;
    return 1;
}

/* How much slower a grid over the ring streaming B in K chunks may look
 * than another grid of more columns and still win: the estimate misses a
 * cost that grows with the columns (BERT-base's FFN up-projection: 16x2r
 * streamed estimated 50,748 and simulated 60,048, 4x8r whole 48,484 and
 * 65,881, 8x4r streamed 48,428 and 85,044; its down-projection 16x2r
 * streamed 55,884 and 59,071, 8x4r whole 52,620 and 71,155).  Not so for
 * grids holding B's column block whole (bench_mm's third 1024 linear:
 * 16x2r 47,682 estimated, 0.488 of peak; 8x4r 45,890, 0.509). */
#define RG_NARROW 0.10

/* B broadcast over the ring on every core (cores x 1), or a grid over
 * the ring, when the cost model prefers it.  The ring schemes' estimates
 * count DRAM's wait on the way in (tl.wait), the grid's does not: they are
 * compared without it (on 200 x 130 x 300 over 32 cores the grid's 5,362
 * beat the ring's 5,259 by the slack; simulated 8,581 against 6,563);
 * but a grid of one block a core is priced with its waits and ends in
 * series, and then the ring with its wait (mm_one_block_waits). */
static void mm_plan_ring_search(be_ctx *c, int pos, mm_plan *m, double *best)
{
    be_work *w = &c->work[pos];
    const int64_t cores = c->cfg->cores;
    double cmp = *best;
    const int lat = !mm_one_block_waits(c, m, &cmp); /* compared without the ring's way-in wait */
    mm_tiling tl;
    if (cores <= m->M && !mm_bc_kept(m, cores, &tl) && tl.cycles - lat * tl.wait < cmp * (1 - MM_SLACK)) {
        *best = tl.cycles;
        cmp = tl.cycles - lat * tl.wait;
        w->gm = cores;
        w->gn = 1;
        w->gk = w->gb = 1;
        w->bcast = 1;
    }
    /* grids over the ring whose B column block fits LX whole, then those
     * streaming it (which must beat the choice so far: their estimate
     * counts no cost per block, 48,428 estimated and 87,285 simulated on
     * BERT-base's FFN up-projection; but need only tie with B broadcast,
     * whose estimate is the more optimistic on large products: 2048^3
     * 351,343 estimated and 447,244 simulated, the streamed grid 349,167
     * and 355,300); a streaming grid of fewer columns than the grid
     * chosen need only come within RG_NARROW of it, one of more must beat
     * it by as much) */
    for (int stream = 0; stream < 2; stream++)
        for (int64_t gn = 2; gn <= RG_MAX_GN; gn++) {
            const int grid = stream && w->bcast && w->gn > 1 && gn != w->gn;
            const double need = grid ? (gn < w->gn ? 1 + RG_NARROW : 1 - RG_NARROW)
                                : stream && w->bcast && w->gn == 1 ? 1 + MM_SLACK
                                                                   : 1 - MM_SLACK;
            if (cores % gn == 0 && !mm_rg_tiling(m, cores / gn, gn, &tl) && (tl.slots > 0) == stream &&
                tl.cycles - lat * tl.wait < cmp * need) {
                *best = tl.cycles;
                cmp = tl.cycles - lat * tl.wait;
                w->gm = cores / gn;
                w->gn = gn;
                w->gk = w->gb = 1;
                w->bcast = 1;
            }
        }
}

/* The plan's note: the core tile, its blocks, K's chunks, the corelets'
 * split, the ring's scheme and the estimate; 1 noted (which clears the
 * restickify notes), 0 no tiling to note. */
static int mm_note_tiles(be_ctx *c, int pos, mm_plan *m, double best)
{
    const be_work *w = &c->work[pos];
    int64_t mt = w->gm ? cc_ceil_div(m->M, w->gm) : 0, ns = w->gn ? cc_ceil_div(m->GN, w->gn) : 0;
    mm_tiling tl;
    if (w->bcast ? mm_ring_tiling(m, w, &tl) : mm_block(m, w->gm, w->gn, mt, ns, &tl))
        return 0;
    if (w->bcast && w->gn > 1) /* a grid over the ring: its largest grid row */
        mt = tl.MB;
    char kb[96], sp[96], rg[224] = "", slots[48] = "";
    if (tl.slots)
        be_fmt(slots, sizeof slots, "; B in K chunks through %" PRId64 " slots", tl.slots);
    if (w->bcast && w->gn > 1) /* (formatted only where the note says it) */
        be_fmt(rg, sizeof rg,
                 ", A shared in rows of the grid and B passed down its columns over the ring (each read from DRAM "
                 "once%s), results to the cores keeping their rows",
                 slots);
    if (w->gk > 1)
        be_fmt(kb, sizeof kb, "k %" PRId64 " in %" PRId64 " parts of up to %" PRId64 " in chunks of %" PRId64
                 " (fp32 partial sums)", m->Kd, w->gk, m->Kc, tl.KC);
    else if (tl.KC >= m->Kd)
        be_fmt(kb, sizeof kb, "k %" PRId64 " whole", m->Kd);
    else
        be_fmt(kb, sizeof kb, "k %" PRId64 " in chunks of %" PRId64 " (fp32 partial sums)", m->Kd, tl.KC);
    if (tl.split == SPLIT_ROWS)
        be_fmt(sp, sizeof sp, ", pt0/pt1 split rows at %" PRId64, tl.r0);
    else if (tl.split == SPLIT_STICKS)
        be_fmt(sp, sizeof sp, ", pt0/pt1 split sticks at %" PRId64, tl.s0);
    else
        be_fmt(sp, sizeof sp, ", pt0 only");
    be_note(c, pos, BE_NOTE_TILES,
            "core tile %" PRId64 " rows x %" PRId64 " sticks in blocks of %" PRId64 " rows x %" PRId64
            " sticks (%" PRId64 " columns), %s%s%s%s, estimate %.0f cycles",
            mt, ns, tl.MB, tl.NBS, cc_min(tl.NBS * c->t.lanes16, m->N), kb, sp,
            m->nbatch <= 1 ? "" : w->gb > 1 ? ", per batch index of the core's part" : ", per batch index",
            !w->bcast     ? ""
            : w->gn == 1 ? ", B broadcast over the ring (each chunk read from DRAM once)"
                         : rg,
            best);
    return 1;
}

/* The plan's notes on restickified operands and results. */
static void mm_note_restick(be_ctx *c, int pos, const mm_plan *m)
{
    if (m->ag)
        be_note(c, pos, BE_NOTE_RESTICK, m->aw ? "A %s (sfp.rst from its sticks, staged whole once per core)"
                                               : "A %s (sfp.rst from the sticks each block reads, staged)",
                c->p->bufs[m->mm->a].name);
    if (m->bg)
        be_note(c, pos, BE_NOTE_RESTICK, m->bw ? "B %s (sfp.rst from its sticks, staged whole once per core)"
                                               : "B %s (sfp.rst from the sticks each block reads, staged)",
                c->p->bufs[m->mm->b].name);
    for (int j = 0; j < m->ep.nn; j++)
        if (m->ep.nodes[j].dram && m->ep.nodes[j].staged)
            be_note(c, pos, BE_NOTE_RESTICK, "result %s (stored through a staged copy)",
                    c->p->bufs[c->p->nodes[m->ep.nodes[j].node].out].name);
}

/* A split of K priced with the DRAM's waits must look this much better
 * than the grid the choices gave, priced so too (mm_plan_ties). */
#define MM_SPLITK_WAIT_GAIN 0.15

/* The product's estimate on a gm x gn x gk grid with the DRAM's waits
 * priced (be_ctx.waits, as the report's estimate prices them). */
static double mm_cost_waits(be_ctx *c, mm_plan *m, int64_t gm, int64_t gn, int64_t gk)
{
    double bytes;
    mm_set_gk(m, gk);
    c->waits = 1;
    const double e = mm_cost(m, gm, gn, &bytes);
    c->waits = 0;
    return e;
}

/* The choices price no DRAM wait, so a split of K (which shortens each
 * core's DRAM round trips by its parts) had to look MM_SPLITK_CYCLES
 * better, and grids whose estimates tie there (within MM_SLACK) went to
 * the first found.  For a plain product (no batch, one grid) the
 * choices' grid with K split in 2 to KG parts is
 * priced with the waits and taken when MM_SPLITK_WAIT_GAIN better; else
 * the grids of as many rows of cores that tie are compared with the
 * waits priced (gpt2_small_block_tiny's MLP, 32 rows: the 64 x 256
 * projection 1x1 -> 1x1x4, 2,473 and 1,915 cycles with the waits,
 * simulated 2,666 and 2,002 over 7 refresh phases; the 256-column
 * product 1x2 -> 1x4, 754 and 765 without the waits, 1,545 and 1,247
 * with them, simulated 2,565 and 2,071).  Only the choices' grid is
 * split (over every grid the waits took the projection to 2x1x2, 1,757,
 * simulated 2,455), and only a product of a PT pass of rows or more
 * (gpt2_gen's decode step, 1 x 64 x 256: 1x1 -> 1x1x4 priced 2,011 and
 * 1,522 with the waits, simulated 1,207 and 1,252; mlp's 8 rows 1,590 and
 * 1,517), and only N among the tied grids: each row of cores
 * reads all of B, which the waits do not make up for
 * (bert_handwritten_small's output projection, 32 x 64 x 128: 1x1 ->
 * 2x1, 1,694 and 1,545 with the waits, simulated 1,344 and 1,765).
 * *best (the comparison with the schemes over the ring) stays the
 * choices'. */
/* mm_cost_waits of gm x gn with K whole.  A short product's tiling is
 * chosen with the waits priced (mm_block), and the grid search kept that
 * estimate of it (mm_grid_memo.waited): the same call, the same double. */
static double mm_cost_waits_k1(be_ctx *c, mm_plan *m, int64_t gm, int64_t gn)
{
    mm_set_gk(m, 1);
    const double *memo = mm_gmemo_at(m, gm, gn);
    const double w = memo && *memo >= 0 ? m->gmemo.waited[memo - m->gmemo.e] : -1;
    return w >= 0 ? w : mm_cost_waits(c, m, gm, gn, 1);
}

/* mm_grid_floor of gm x gn x gk with the DRAM's waits priced: under
 * mm_cost_waits's estimate, as the search's assert checks in that state. */
static double mm_waits_floor(be_ctx *c, mm_plan *m, int64_t gm, int64_t gn, int64_t gk)
{
    mm_set_gk(m, gk);
    c->waits = 1;
    const double low = mm_grid_floor(m, gm, gn);
    c->waits = 0;
    return low;
}

static void mm_plan_ties(be_ctx *c, int pos, mm_plan *m, double best)
{
    be_work *w = &c->work[pos];
    if (w->gb != 1 || w->gk != 1 || w->bcast)
        return;
    const int64_t cores = c->cfg->cores;
    double pick = mm_cost_waits_k1(c, m, w->gm, w->gn), tie = pick, split = DBL_MAX;
    int64_t g[3] = {w->gm, w->gn, 1};
    for (int64_t gk = 2; m->M >= c->cfg->pt_rows && gk <= cc_min(cores / (w->gm * w->gn), m->KG); gk++) {
        if (mm_waits_floor(c, m, w->gm, w->gn, gk) >= pick * (1 - MM_SPLITK_WAIT_GAIN))
            continue; /* (its estimate could neither be taken nor hide one taken) */
        const double e = mm_cost_waits(c, m, w->gm, w->gn, gk);
        if (e < split) {
            split = e;
            g[2] = gk;
        }
    }
    if (split >= pick * (1 - MM_SPLITK_WAIT_GAIN)) {
        g[2] = 1;
        for (int64_t gn = 1; gn <= cc_min(cores / w->gm, m->GN); gn++) {
            if (!mm_parts_whole(c, m, MM_SPLIT_COLS, gn))
                continue;
            mm_set_gk(m, 1);
            /* priced by the search, when it was (else priced into the
             * memo, unless its floor is past the slack already) */
            const double *memo = mm_gmemo_at(m, w->gm, gn), lim = best * (1 + MM_SLACK);
            mm_tiling tl;
            if (memo && *memo >= 0 ? *memo > lim
                                   : mm_grid_floor(m, w->gm, gn) > lim || mm_grid_cost(m, w->gm, gn, &tl) > lim)
                continue;
            const double e = mm_cost_waits_k1(c, m, w->gm, gn);
            if (e < tie) {
                tie = e;
                g[1] = gn;
            }
        }
    }
    w->gm = g[0], w->gn = g[1], w->gk = g[2];
    mm_set_gk(m, w->gk);
}

/* A product of at least this many rows (a PT pass on each of 8 cores)
 * left on one core by the choices is searched again with the DRAM's
 * waits priced (mm_plan_waits). */
#define MM_WAIT_ROWS 64

/* The grid (mm_plan_grid), searched again with the DRAM's waits priced
 * (be_ctx.waits, as the report's estimate prices them) when the choices
 * leave a product of MM_WAIT_ROWS rows or more, with no batch, on one
 * core: there one core streams A, B and
 * the result in turn and the waits are most of its time, which the
 * choices do not see (serve_tiny's prefill q projection, 64 x 64 x 64:
 * 1x1 priced 474 cycles and 5x1 591 without the waits, 1,396 and 1,158
 * with them; simulated 2,809 and 1,802).  *best stays the estimate
 * without the waits, as the schemes over the ring are priced.  Not for
 * fewer rows nor for every product: with the waits in every choice the
 * 32-row products of llama_tiny, bert_handwritten_small, encoder_small
 * and gpt2_small_block_tiny moved to 3 or 4 cores and those graphs ran
 * 3 to 5% slower (docs/compiler.md, "A product left on one core,
 * priced with its DRAM waits").  A restickified operand too (it was
 * left out): serve_tiny's prefill output projection, its A the heads
 * transposed back and staged, 1x1 -> 5x1 (estimated with the waits
 * 1,396 and 1,158, simulated 1,668 and 1,346 at 4x1; prefill_c0 28,658 ->
 * 27,738 cycles).  Other plain products: mm_plan_ties. */
static int mm_plan_waits(be_ctx *c, int pos, mm_plan *m, int over, double *best)
{
    be_work *w = &c->work[pos];
    const be_work start = *w;
    int rc = mm_plan_grid(c, pos, m, over, best);
    if (rc || over || *best == DBL_MAX || m->nbatch != 1)
        return rc;
    if (w->gm * w->gn * w->gk * w->gb != 1 || m->M < MM_WAIT_ROWS) {
        mm_plan_ties(c, pos, m, *best);
        return rc;
    }
    *w = start;
    c->waits = 1;
    rc = mm_plan_grid(c, pos, m, over, best);
    c->waits = 0;
    double bytes;
    if (!rc && *best != DBL_MAX)
        *best = mm_cost(m, w->gm, w->gn, &bytes);
    return rc;
}

/* The work division of a matmul: the grid (a work_div's or the cost
 * model's), then the schemes over the ring, then the notes (*fresh:
 * written anew, mm_note_tiles). */
static int mm_plan_work(be_ctx *c, int pos, mm_plan *m, int *fresh)
{
    be_work *w = &c->work[pos];
    double best = DBL_MAX;
    const int over = w->gm != 0;
    if (!w->gk)
        w->gk = 1;
    int rc = mm_plan_waits(c, pos, m, over, &best);
    if (!rc && best == DBL_MAX)
        rc = mm_plan_unfit(c, pos, m);
    if (!rc && over && w->bcast)
        rc = mm_plan_ring_override(c, pos, m, &best);
    else if (!over)
        w->bcast = 0;
    if (!over) /* the schemes over the ring do not split K (nor a batch) */
        mm_set_gk(m, 1);
    if (!w->gb)
        w->gb = 1;
    if (!rc && !over && best != DBL_MAX)
        mm_plan_ring_search(c, pos, m, &best);
    mm_set_gk(m, w->gk);
    w->cores = (int)(w->gm * w->gn * w->gk * w->gb);
    w->est_cycles = best;
    w->rows = m->M;
    w->cols = m->N;
    w->batches = m->nbatch;
    if (!rc) {
        *fresh = mm_note_tiles(c, pos, m, best);
        mm_note_restick(c, pos, m);
    }
    return rc;
}

int be_matmul_plan(be_ctx *c, int pos)
{
    mm_plan m;
    int rc = mm_build(c, pos, &m);
    int fresh = 0;
    if (!rc && be_mmmemo_recall(c, pos, &m)) {
        rc = mm_plan_work(c, pos, &m, &fresh);
        if (!rc)
            be_mmmemo_keep(c, pos, &m, fresh);
    }
    mm_free(&m);
    return rc;
}

/* Does the kernel as planned fit LX_KERNEL_SHARE of LX (be_matmul_need
 * under that budget), leaving the rest to tensors kept across kernels?
 * (A K^T staged whole once per core does not: 8 heads' 1 MB beside each
 * core's one head, and the product, aligned for nothing, ran 11% slower.) */
static int mm_leaves_room(be_ctx *c, int pos)
{
    int64_t *had = c->lx_floor;
    c->lx_floor = ir_xalloc((size_t)(c->p->norder + 1) * sizeof *c->lx_floor);
    c->lx_floor[pos] = (int64_t)(c->cfg->lx_usable_bytes * LX_KERNEL_SHARE) / c->t.stick * c->t.stick;
    const int fits = be_matmul_need(c, pos) >= 0;
    free(c->lx_floor);
    c->lx_floor = had;
    c->p->err[0] = 0; /* need's error when it does not fit */
    return fits;
}

/* A batched product whose A an earlier kernel writes aligned on C cores
 * (the rotary embedding's q, one head per core; the softmax's
 * probabilities) takes the batch in C parts of whole indices, one core
 * each (1x1bC), when the estimate grows by less than A's DRAM round trip:
 * A then stays in LX, and so can its result for a row kernel that aligns
 * with it in turn (the attention scores).  Planned again either way. */
void be_matmul_align(be_ctx *c, int pos, const int *writer)
{
    be_work *w = &c->work[pos];
    const be_work was = *w;
    mm_plan m;
    if (mm_build(c, pos, &m)) {
        mm_free(&m);
        return;
    }
    const int src = writer[m.mm->a];
    const int64_t cores = src >= 0 ? c->work[src].cores : 0;
    const double trip = c->t.dram_bytes_per_cycle > 0 ? 2.0 * (double)be_buf_bytes(c, m.mm->a) / c->t.dram_bytes_per_cycle : 0;
    mm_free(&m);
    if (cores < 2 || was.gb == cores || m.nbatch % cores || cores > (int64_t)c->cfg->cores)
        return;
    *w = (be_work){.gm = 1, .gn = 1, .gk = 1, .gb = cores};
    int ok = !be_matmul_plan(c, pos) && w->est_cycles - was.est_cycles < trip;
    if (ok) {
        ok = !mm_build(c, pos, &m) && mm_aligned_a(&m, pos) && mm_leaves_room(c, pos);
        mm_free(&m);
    }
    if (ok) {
        w->aligned_to = src + 1;
        return;
    }
    *w = (be_work){0};
    be_matmul_plan(c, pos); /* as it was */
}

/* The host memory a core's emission holds (every path out frees it). */
static void mm_core_free(mm_core *mc, int nn)
{
    be_tile_memo_end(&mc->T);
    for (int j = 0; mc->ocount && j < nn; j++)
        free(mc->ocount[j]);
    free(mc->ocount);
    free(mc->ostage);
    free(mc->alo);
    free(mc->ago);
    free(mc->blo);
    free(mc->bgo);
    free(mc->ahi);
    free(mc->bhi);
}

/* Stage the sticks of buf an operand block reads (as mm_span) at st
 * (dmai): one contiguous run per stick group of the buffer.  Fills lo
 * (layout row of each group's first staged stick) and go (its offset
 * from st). */
static void mm_stage_block(mm_core *mc, int buf, const ir_index *idx, int64_t b, int rowvar, int64_t r0, int64_t nr,
                           int lanevar, int64_t l0, int64_t nl, int64_t st, int64_t *lo, int64_t *go)
{
    const mm_plan *m = mc->m;
    int64_t *hi = ir_xalloc((size_t)m->c->lay[buf].groups * sizeof *hi);
    mm_span(m, buf, idx, b, rowvar, r0, nr, lanevar, l0, nl, lo, hi);
    be_stage_spans(m->c, mc->e, buf, lo, hi, st, go);
    free(hi);
}

/* Rows from one at coordinate v on (at most n), each moving coordinate d
 * by `by` (d -1: none), whose runs are the first's with its source moved
 * alike (*smove a row): d stays in the buffer and, the stick dim, in its
 * stick. */
static int64_t mm_rows_left(const be_walk *w, int64_t v, int d, int64_t by, int64_t n, int64_t *smove)
{
    *smove = 0;
    if (d < 0 || !by)
        return n;
    int64_t left = by > 0 ? (w->shape[d] - 1 - v) / by : v / -by; /* rows after this one */
    *smove = by * w->rs[d] * w->stick;
    if (d == w->sd) {
        const int64_t lane = v % w->lanes;
        left = cc_min(left, by > 0 ? (w->lanes - 1 - lane) / by : lane / -by);
        *smove = by * w->esz;
    }
    return cc_min(n, left + 1);
}

/* Restickify an operand block from its staged sticks (at st, placed as
 * mm_stage_block's lo and go say) into an A or B slot: the slot's stick
 * (row i, group g) at slot + g*gs + i*stick gets, in lane l, the element
 * at rowvar = r0 + i, lanevar = l0 + g*lanes + l (nl lanes in all) of
 * batch index b. */
static void mm_gather(mm_core *mc, int buf, const ir_index *idx, int64_t st, const int64_t *lo, const int64_t *go,
                      int64_t b, int rowvar, int64_t r0, int64_t nrows, int lanevar, int64_t l0, int64_t nl,
                      int64_t slot, int64_t gs)
{
    const mm_plan *m = mc->m;
    be_ctx *c = m->c;
    const int64_t sb = c->t.stick, lanes = c->t.lanes16, lrows = c->lay[buf].rows;
    int64_t val[IR_MAX_VARS] = {0};
    be_wseg ws[BE_LANES_MAX];
    be_rst_seg seg[BE_LANES_MAX];
    batch_vals(m, b, val);
    be_rst r;
    be_walk w;
    be_walk_init(&w, c, buf);
    be_rst_begin(&r, mc->e, 0, &c->rst);
    /* the index is affine: a row on moves it by the row variable's coefficient */
    const int64_t down = rowvar != lanevar && rowvar < m->mm->nvars ? idx->coef[rowvar] : 0;
    int64_t flat = 0, by;
    const int d = be_walk_axis(&w, down, &by);
    for (int64_t g = 0; g * lanes < nl; g++) {
        be_wseg u0;      /* the last row walked, when one segment (one run) and movable: its segment, */
        int64_t i0 = -1; /* its row, and its first element's coordinates */
        int64_t co[GR_MAX_RANK];
        for (int64_t i = 0; i < nrows; i++, flat += down) {
            int64_t n = cc_min(lanes, nl - g * lanes);
            if (!i) {
                val[rowvar] = r0;
                val[lanevar] = l0 + g * lanes;
                flat = be_index_at(idx, m->mm->nvars, val);
            }
            be_wseg u;
            if (i0 >= 0 && be_wseg_move(&w, &u0, 1, co, d, (i - i0) * by, &u)) {
                /* the row walked last's run moved by whole rows (K's tokens
                 * in QK^T, a lane on each: a walk each was 2.3 M of the
                 * Llama-8B decode step's 3.7 M gathering); the rows after
                 * whose source moves alike are taken at once */
                seg[0] = (be_rst_seg){st + go[u.g] + (u.r - lo[u.g]) * sb + u.byte, u.dr * sb + u.db, u.n};
                be_rst_segs(&r, slot + g * gs + i * sb, seg, 1);
                int64_t smove;
                const int64_t k = mm_rows_left(&w, co[d >= 0 ? d : 0] + (i - i0) * by, d, by, nrows - i, &smove);
                be_rst_segs_moved(&r, sb, smove, k - 1);
                i += k - 1;
                flat += (k - 1) * down;
                continue;
            }
            const int64_t step = idx->coef[lanevar];
            be_walk_at(&w, flat, step);
            memcpy(co, w.co, sizeof co);
            const int ns = be_walk_segs(&w, n, ws); /* per run between carries, not per element */
            i0 = ns == 1 && be_wseg_movable(&w, ws, 1, d) ? i : -1; /* (one segment: one run between carries) */
            u0 = ws[0];
            for (int q = 0, l = 0; q < ns; l += ws[q++].n) {
                be_wseg u = ws[q];
                if (u.g < 0) { /* outside the buffer: its offset as be_elem_off has it */
                    be_walk_at(&w, flat + l * step, step);
                    int64_t off = be_walk_off(&w), s = off / sb;
                    u.g = s / lrows;
                    u.r = s % lrows;
                    u.byte = off % sb;
                }
                seg[q] = (be_rst_seg){st + go[u.g] + (u.r - lo[u.g]) * sb + u.byte, u.dr * sb + u.db, u.n};
            }
            be_rst_segs(&r, slot + g * gs + i * sb, seg, ns);
        }
    }
    be_rst_flush(&r);
}

/* Restickify a result tile (mb rows x cols, group stride gs, at lx) into
 * the staged copy of node j's buffer, counting the elements each stick
 * receives. */
static void mm_scatter(mm_core *mc, int j, int64_t lx, int64_t gs, int64_t b, int64_t m0, int64_t mb, int64_t n0,
                       int64_t cols)
{
    const mm_plan *m = mc->m;
    be_ctx *c = m->c;
    const rk_node *rn = &m->ep.nodes[j];
    const int out = c->p->nodes[rn->node].out;
    const int64_t sb = c->t.stick, lanes = c->t.lanes16;
    int64_t val[IR_MAX_VARS] = {0}, dst[BE_LANES_MAX], src[BE_LANES_MAX];
    batch_vals(m, b, val);
    be_rst r;
    be_walk w;
    be_walk_init(&w, c, out);
    be_rst_begin(&r, mc->e, 0, &c->rst);
    for (int64_t g = 0; g * lanes < cols; g++)
        for (int64_t i = 0; i < mb; i++) {
            int64_t n = cc_min(lanes, cols - g * lanes);
            val[m->vm] = m0 + i;
            val[m->vn] = n0 + g * lanes;
            be_walk_at(&w, be_index_at(&rn->store, m->mm->nvars, val), rn->store.coef[m->vn]);
            for (int64_t l = 0; l < n; l++, be_walk_next(&w)) {
                int64_t off = be_walk_off(&w);
                mc->ocount[j][off / sb]++;
                dst[l] = mc->ostage[j] + off;
                src[l] = lx + g * gs + i * sb + l * 2;
            }
            be_rst_row(&r, dst, src, n);
        }
    be_rst_flush(&r);
}

/* A block under way: batch b, rows [m0, m0 + mb) (arow in A, prow in
 * the core's part of a tensor kept in LX), sticks [g0, g0 + nbs) (cols
 * columns), its C slot q at C, its corelets' parts, B's view from its
 * first stick. */
typedef struct {
    int64_t b, m0, mb, g0, nbs, cols, arow, prow, C;
    int q;
    mm_parts cp;
    be_view bv0;
} mm_blk;

/* Chunk of K number j of a block: A/B slot s at A and B, K rows
 * [k0, k0 + kc), the step of the chunk in the core's sequence. */
typedef struct {
    int s, first, last;
    int64_t k0, kc, A, B, step;
} mm_chunk;

/* The operands staged whole, loaded after the first chunk's A and B (the
 * other order measured 1-4% slower on 16 of 29 traces): a
 * signal on dmai waits for every load before it, and the first block's
 * epilogue signal came between the staging and the chunk's loads, so the
 * two DRAM latencies ran one after the other (llama_gen's prefill QK^T,
 * k^T staged whole on each of 4 cores: 839 -> 1,145 cycles). */
static void mm_load_whole(mm_core *mc)
{
    const mm_plan *m = mc->m;
    if (!mc->wld_due)
        return;
    for (int wo = 0; wo < 2; wo++)
        if (wo ? m->bw : m->aw)
            be_stage_spans(m->c, mc->e, wo ? m->mm->b : m->mm->a, wo ? mc->blo : mc->alo, wo ? mc->bhi : mc->ahi,
                           wo ? mc->bws : mc->aws, wo ? mc->bgo : mc->ago);
    cc_emit_sig(mc->e, ISA_U_DMAI, mc->wld);
    mc->wld_due = 0;
}

/* dmai: the chunk's A and B into its slot (B from the ring when
 * broadcast); sfp0: restickified operands into the slot's parts. */
static void mm_chunk_in(mm_core *mc, const mm_blk *bk, const mm_chunk *ch)
{
    mm_plan *m = mc->m;
    be_ctx *c = m->c;
    cc_emit *e = mc->e;
    const int64_t sb = c->t.stick, lanes = c->t.lanes16, MB = mc->MB, KC = mc->KC;
    const int64_t k0 = ch->k0, kc = ch->kc, A = ch->A, B = ch->B, b = bk->b, m0 = bk->m0, mb = bk->mb;
    const int s = ch->s;
    for (int u = 0; u < mc->nc; u++)
        cc_emit_wait(e, ISA_U_DMAI, mc->abempty[s][u]);
    if (m->ares) {
        be_res_copy(c, e, 0, m->mm->a, bk->prow, mb, k0 / lanes, cc_ceil_div(kc, lanes), A, MB * sb);
    } else if (!m->ag) {
        be_view av = mm_shifted(&m->av, k0 / lanes);
        be_dma_rows(c, e, ISA_OP_DMA_LD, A, MB * sb, &av, &m->arsp, bk->arow, mb, cc_ceil_div(kc, lanes));
    }
    if (!m->bg && !mc->bc)
        be_dma_rows(c, e, ISA_OP_DMA_LD, B, KC * sb, &bk->bv0, &m->brsp, b * m->Kd + k0, kc, bk->nbs);
    if (m->ag && !m->aw)
        mm_stage_block(mc, m->mm->a, &m->mm->aidx, b, m->vm, m0, mb, m->vk, k0, kc, A + mc->ast, mc->alo, mc->ago);
    if (m->bg && !m->bw)
        mm_stage_block(mc, m->mm->b, &m->mm->bidx, b, m->vk, k0, kc, m->vn, bk->g0 * lanes, bk->cols, A + mc->bst,
                       mc->blo, mc->bgo);
    mm_load_whole(mc);
    for (int u = 0; u < mc->nc; u++)
        cc_emit_sig(e, ISA_U_DMAI, mc->abfull[s][u]);
    if (mc->bc) /* B comes over the ring: corelet u can start after its last stick's piece */
        bc_chunk(mc, ch->step, &bk->bv0, b * m->Kd + k0, kc, bk->nbs, bk->cp.last);
    if (!m->ag && !m->bg)
        return;
    /* sfp0 restickifies the operands into the slot */
    for (int u = 0; u < mc->nc; u++)
        cc_emit_wait(e, ISA_U_SFP0, mc->abfull[s][u]);
    if (m->ag)
        mm_gather(mc, m->mm->a, &m->mm->aidx, m->aw ? mc->aws : A + mc->ast, mc->alo, mc->ago, b, m->vm, m0, mb, m->vk,
                  k0, kc, A, MB * sb);
    if (m->bg)
        mm_gather(mc, m->mm->b, &m->mm->bidx, m->bw ? mc->bws : A + mc->bst, mc->blo, mc->bgo, b, m->vk, k0, kc, m->vn,
                  bk->g0 * lanes, bk->cols, B, KC * sb);
    for (int u = 0; u < mc->nc; u++)
        cc_emit_sig(e, ISA_U_SFP0, mc->abrst[s][u]);
}

/* pt u: its part of the block's product over the chunk (DL16 into C on
 * the last chunk, fp32 partial sums before it and under split-K). */
static void mm_chunk_pt(mm_core *mc, const mm_blk *bk, const mm_chunk *ch)
{
    mm_plan *m = mc->m;
    be_ctx *c = m->c;
    cc_emit *e = mc->e;
    const int64_t sb = c->t.stick, lanes = c->t.lanes16, MB = mc->MB, KC = mc->KC;
    const int64_t *crow = bk->cp.crow, *cnr = bk->cp.cnr, *cst = bk->cp.cst, *cns = bk->cp.cns;
    const int s = ch->s, q = bk->q, first = ch->first, last = ch->last;
    for (int u = 0; u < mc->nc; u++) {
        const isa_unit pt = u ? ISA_U_PT1 : ISA_U_PT0;
        cc_emit_wait(e, pt, m->ag || m->bg ? mc->abrst[s][u] : mc->abfull[s][u]);
        if (mc->bc)
            cc_emit_wait(e, pt, mc->have[u]);
        if (first)
            cc_emit_wait(e, pt, mc->cempty[q][u]);
        const int64_t ncols = cc_min(cns[u] * lanes, bk->cols - cst[u] * lanes);
        if (cnr[u] > 0 && cns[u] > 0 && ncols > 0) { /* an edge block can leave corelet 1 nothing */
            const int64_t roff = crow[u] * sb;
            const int64_t poff = roff + cst[u] * cc_ceil_div(lanes, c->t.lanes32) * MB * sb;
            cc_pt_args pa = {0};
            pa.c = u;
            pa.a = cc_abs(ch->A + roff);
            pa.b = cc_abs((mc->bc ? mc->bslot[ch->step % BC_SLOTS] : ch->B) + cst[u] * KC * sb);
            pa.m = cnr[u];
            pa.n = ncols;
            pa.k = ch->kc;
            pa.ds = pa.ps = MB * sb;
            pa.as = MB * sb;
            pa.bs = KC * sb;
            const int dl16 = last && mc->gk == 1; /* split-K: fp32 sums to reduce */
            pa.flags = (first ? 0 : ISA_F_ACC) | (dl16 ? 0 : ISA_F_F32);
            pa.d = cc_abs(dl16 ? bk->C + roff + cst[u] * MB * sb : mc->P + poff);
            pa.p = cc_abs(first ? 0 : mc->P + poff);
            if (first)
                pa.ps = 0;
            /* a copy of the corelet's last product where only the addresses differ */
            mc->ptlike[u] = (int)cc_emit_pt_like(e, mc->ptlike[u], &pa);
        }
        cc_emit_sig(e, pt, mc->abempty[s][u]);
        if (mc->bc)
            cc_emit_sig(e, pt, mc->ptdone[u]);
        if (last)
            cc_emit_sig(e, pt, mc->mmd[q][u]);
        if (last && mc->gk > 1)
            cc_emit_sig(e, pt, mc->pdone[u]);
    }
}

/* Split-K: the reduced fp32 sums of the block into C as DL16 (even / odd
 * fp32 groups: lanes 0-31 / 32-63). */
static void mm_splitk_cvt(mm_core *mc, const mm_blk *bk)
{
    cc_emit *e = mc->e;
    const int64_t sb = mc->m->c->t.stick, MB = mc->MB;
    cc_emit_wait(e, ISA_U_SFP0, mc->red);
    for (int h = 0; h < 2; h++) {
        cc_sfp_args cv = {0};
        cv.op = ISA_OP_SFP_CVT;
        cv.t = ISA_T_F32;
        cv.d = cc_abs(bk->C + h * (sb / 2));
        cv.a = cc_abs(mc->P + h * MB * sb);
        cv.n0 = bk->mb;
        cv.ds0 = sb;
        cv.as0 = sb;
        cv.n1 = bk->nbs;
        cv.ds1 = MB * sb;
        cv.as1 = 2 * MB * sb;
        cc_emit_sfp(e, &cv);
    }
}

/* dmao: the block's results leaving the kernel (DRAM, then the rows of
 * kept ones); the block's slots free again. */
static void mm_block_store(mm_core *mc, const mm_blk *bk, const be_val *vals)
{
    mm_plan *m = mc->m;
    be_ctx *c = m->c;
    cc_emit *e = mc->e;
    const rk_plan *k = &m->ep;
    const int64_t sb = c->t.stick, MB = mc->MB;
    cc_emit_wait(e, ISA_U_DMAO, mc->done[bk->q]);
    for (int j = 0; j < k->nn && j < IR_KERNEL_NODES; j++) {
        if (!k->nodes[j].dram || k->nodes[j].staged)
            continue;
        be_view v = mm_shifted(&k->nodes[j].sv, bk->g0);
        be_dma_rows(c, e, ISA_OP_DMA_ST, vals[j].lx, MB * sb, &v, &k->rsp, bk->arow, bk->mb, bk->nbs);
    }
    for (int j = 0; j < k->nn && j < IR_KERNEL_NODES; j++) /* after the DRAM stores, which take longer */
        if (k->nodes[j].res)
            be_res_copy(c, e, 1, c->p->nodes[k->nodes[j].node].out, bk->prow, bk->mb, bk->g0, bk->nbs,
                        vals[j].lx, MB * sb);
    cc_emit_sig(e, ISA_U_DMAO, mc->eempty[bk->q]);
    for (int u = 0; u < mc->nc; u++)
        cc_emit_sig(e, ISA_U_DMAO, mc->cempty[bk->q][u]);
}

/* After the block's last chunk: split-K's reduction, then the epilogue
 * over the block (sfp0) and its results' stores (dmao). */
static int mm_block_finish(mm_core *mc, const mm_blk *bk, int64_t at)
{
    mm_plan *m = mc->m;
    cc_emit *e = mc->e;
    const int q = bk->q;
    if (mc->gk > 1)
        mm_splitk_reduce(mc);
    for (int u = 0; u < mc->nc; u++)
        cc_emit_wait(e, ISA_U_SFP0, mc->mmd[q][u]);
    cc_emit_wait(e, ISA_U_SFP0, mc->efull[q]);
    if (mc->ik) { /* split-K part > 0: its sums went to part ik - 1; no epilogue, no stores */
        cc_emit_sig(e, ISA_U_SFP0, mc->done[q]);
        cc_emit_wait(e, ISA_U_DMAO, mc->done[q]);
        cc_emit_sig(e, ISA_U_DMAO, mc->eempty[q]);
        for (int u = 0; u < mc->nc; u++)
            cc_emit_sig(e, ISA_U_DMAO, mc->cempty[q][u]);
        return 0;
    }
    if (mc->gk > 1)
        mm_splitk_cvt(mc, bk);
    be_val vals[IR_KERNEL_NODES];
    if (mm_ep_eval(mc, bk->mb, bk->nbs, at, bk->C, bk->C + mc->cslot_bytes, vals))
        return -1;
    for (int j = 0; j < m->ep.nn && j < IR_KERNEL_NODES; j++)
        if (m->ep.nodes[j].dram && m->ep.nodes[j].staged)
            mm_scatter(mc, j, vals[j].lx, mc->MB * m->c->t.stick, bk->b, bk->m0, bk->mb, bk->g0 * m->c->t.lanes16,
                       bk->cols);
    cc_emit_sig(e, ISA_U_SFP0, mc->done[q]);
    mm_block_store(mc, bk, vals);
    return 0;
}

/* One block: its epilogue's operands into C slot q, K in chunks through
 * the A/B slots (corelet u computes its part of the block: rows from
 * crow, sticks from cst), then the epilogue and the stores. */
static int mm_block_emit(mm_core *mc, int64_t b, int64_t m0, int64_t mb, int64_t g0, int64_t nbs)
{
    mm_plan *m = mc->m;
    be_ctx *c = m->c;
    cc_emit *e = mc->e;
    const int64_t sb = c->t.stick, lanes = c->t.lanes16, KC = mc->KC;
    mm_blk bk = {0};
    bk.b = b;
    bk.m0 = m0;
    bk.mb = mb;
    bk.g0 = g0;
    bk.nbs = nbs;
    bk.cols = cc_min(nbs * lanes, m->N - g0 * lanes);
    bk.arow = b * m->M + m0;
    bk.prow = (b - mc->b0) * m->M + m0 - mc->m0; /* mm_rows_split: gm 1 when b0 > 0 */
    bk.q = (int)(mc->nblk++ % 2);
    bk.C = mc->cs[bk.q];
    int64_t at = bk.C + mc->NBS * mc->MB * sb;

    cc_emit_wait(e, ISA_U_DMAI, mc->eempty[bk.q]);
    const mm_rows rs = {1, {bk.arow}, {0}, {mb}};
    if (!mc->ik) /* split-K: only part 0 runs the epilogue */
        at = mm_ep_load(mc, &rs, bk.prow, g0, nbs, at, NULL);
    cc_emit_sig(e, ISA_U_DMAI, mc->efull[bk.q]);

    mm_corelet_parts(&mc->tl, mc->nc, mb, nbs, &bk.cp);
    bk.bv0 = mm_shifted(&m->bv, g0);
    for (int64_t j = 0; j < mc->nch; j++) {
        mm_chunk ch;
        ch.s = (int)(mc->nchunk++ % 2);
        ch.step = mc->nchunk - 1;
        ch.k0 = mc->kb + j * KC;
        ch.kc = cc_min(KC, mc->kb + mc->kt - ch.k0);
        ch.A = mc->ab[ch.s];
        ch.B = ch.A + cc_ceil_div(KC, lanes) * mc->MB * sb;
        ch.first = j == 0;
        ch.last = j == mc->nch - 1;
        mm_chunk_in(mc, &bk, &ch);
        mm_chunk_pt(mc, &bk, &ch);
    }
    return mm_block_finish(mc, &bk, at);
}

/* Tensors kept in LX across kernels (the lxplan's decisions): A and the
 * epilogue's tiles read from LX, results written there; noted for the
 * report when `note` (codegen; not the LX plan's trials). */
static void mm_emit_residency(be_ctx *c, int pos, mm_plan *m, int note)
{
    m->ares = !m->atile && mm_aligned_a(m, pos) && be_res_reads(c, m->mm->a, pos);
    m->akeep = !m->ares && !m->atile && be_res_writes(c, m->mm->a, pos);
    assert(!m->akeep || c->work[pos].bcast);
    if ((m->ares || m->atile) && note)
        be_note(c, pos, BE_NOTE_LXREAD, "%s", c->p->bufs[m->mm->a].name);
    for (int i = 0; i < m->ep.nl; i++) {
        rk_load *L = &m->ep.loads[i];
        const int buf = c->p->A.e[L->e].buf;
        L->res = L->cls == BE_V_TILE && !L->staged && !L->gather && be_res_reads(c, buf, pos) &&
                 (c->res[buf].grid ? c->res[buf].grid == mm_grid_tile(m, pos, buf, &L->v)
                                   : mm_aligned_tile(m, pos, buf, &L->v, 0));
        if (L->res && note)
            be_note(c, pos, BE_NOTE_LXREAD, "%s", c->p->bufs[buf].name);
    }
    for (int j = 0; j < m->ep.nn; j++) {
        rk_node *rn = &m->ep.nodes[j];
        const int buf = c->p->nodes[rn->node].out;
        rn->res = rn->dram && !rn->staged && be_res_writes(c, buf, pos);
        rn->heads = rn->dram && !rn->staged && be_heads_writes(c, buf, pos);
        rn->dram = rn->dram && (!rn->res || c->res[buf].dram) && (!rn->heads || c->res[buf].dram);
    }
}

/* The tiling of a core tile of mt rows x ns sticks: its entry in the
 * plan's memo (made on first asking). */
static int mm_tile_tiling(mm_plan *m, const be_work *w, int64_t mt, int64_t ns)
{
    int t = 0; /* w, and so gm x gn, are the plan's (be_matmul_emit, be_matmul_need) */
    while (t < m->ntmemo && (m->tmemo[t].mt != mt || m->tmemo[t].ns != ns))
        t++;
    if (t == m->ntmemo) {
        t = m->ntmemo < 4 ? m->ntmemo++ : 3;
        m->tmemo[t].mt = mt;
        m->tmemo[t].ns = ns;
        m->tmemo[t].rc = w->bcast ? mm_bc_tiling(m, w->gm, &m->tmemo[t].tl)
                                  : mm_block(m, w->gm, w->gn, mt, ns, &m->tmemo[t].tl);
    }
    return t;
}

/* The core's blocking: tiling for its tile of mt rows x ns sticks, K
 * chunks, corelets, slot sizes (B over the ring: slots for A only). */
static int mm_core_shape(mm_core *mc, const be_work *w, int64_t mt, int64_t ns)
{
    mm_plan *m = mc->m;
    be_ctx *c = m->c;
    const int t = mm_tile_tiling(m, w, mt, ns);
    mc->tl = m->tmemo[t].tl;
    if (m->tmemo[t].rc)
        return be_error(c, m->K, "no block of the product fits LX");
    mc->MB = mc->tl.MB;
    mc->NBS = mc->tl.NBS;
    mc->KC = mc->tl.KC;
    mc->nch = cc_ceil_div(mc->kt, mc->KC);
    mc->nc = mc->tl.split == SPLIT_NONE ? 1 : 2;
    mc->cslot_bytes = mm_cslot_bytes(m, mc->MB, mc->NBS);
    mc->abslot_bytes = mm_abslot_bytes(m, mc->MB, mc->NBS, mc->KC);
    if (w->bcast) { /* the A/B slots hold A; B has its own slots */
        mc->bc = 1;
        mc->gm = w->gm;
        mc->wrap = w->gm == (int64_t)c->cfg->cores;
        mc->nsteps = cc_ceil_div(mt, mc->MB) * cc_ceil_div(ns, mc->NBS) * mc->nch;
        mc->abslot_bytes = cc_ceil_div(mc->KC, c->t.lanes16) * mc->MB * c->t.stick;
    }
    return 0;
}

/* Restickified operands: the staged sticks after the A and B parts of a
 * slot, and the host tables of where each group's sticks are. */
static void mm_core_stage(mm_core *mc, int64_t m0, int64_t mt, int64_t g0, int64_t ns)
{
    mm_plan *m = mc->m;
    be_ctx *c = m->c;
    if (!m->ag && !m->bg)
        return;
    int64_t na, nb;
    mm_stage_need_memo(m, &mc->tl, m0, mt, g0, ns, &na, &nb);
    mc->ast = mc->abslot_bytes;
    mc->bst = mc->ast + na;
    mc->abslot_bytes = mc->bst + nb;
    if (m->ag) {
        mc->alo = ir_xalloc((size_t)c->lay[m->mm->a].groups * sizeof *mc->alo);
        mc->ago = ir_xalloc((size_t)c->lay[m->mm->a].groups * sizeof *mc->ago);
    }
    if (m->bg) {
        mc->blo = ir_xalloc((size_t)c->lay[m->mm->b].groups * sizeof *mc->blo);
        mc->bgo = ir_xalloc((size_t)c->lay[m->mm->b].groups * sizeof *mc->bgo);
    }
}

/* The sticks of operand wo (0 A, 1 B) the core's blocks read, over its
 * batch indices, its rows (A) or sticks (B) and all of K: per stick group
 * g the layout rows lo[g]..hi[g].  Returns their bytes. */
static int64_t mm_core_span(mm_core *mc, int wo, int64_t *lo, int64_t *hi)
{
    const mm_plan *m = mc->m;
    const be_ctx *c = m->c;
    const int buf = wo ? m->mm->b : m->mm->a;
    const int64_t l0 = wo ? mc->g0 * c->t.lanes16 : 0, nl = wo ? cc_min(mc->ns * c->t.lanes16, m->N - l0) : m->Kd;
    be_span_init(&c->lay[buf], lo, hi);
    for (int64_t b = mc->b0; b < mc->b0 + mc->bt; b++)
        if (wo)
            mm_span_add(m, buf, &m->mm->bidx, b, m->vk, 0, m->Kd, m->vn, l0, nl, lo, hi);
        else
            mm_span_add(m, buf, &m->mm->aidx, b, m->vm, mc->m0, mc->mt, m->vk, l0, nl, lo, hi);
    return be_span_total(&c->lay[buf], lo, hi) * c->t.stick;
}

/* The two A/B and C slots with their tokens, and the operands staged
 * whole: the sticks of the core's part (mm_core_span), loaded once
 * (before, every core loaded the whole buffer: a batch split of
 * serve_tiny's decode QK^T over the KV pool read the pool on each of 8
 * cores, 2.1 MB for 131 KB). */
static void mm_core_slots(mm_core *mc)
{
    mm_plan *m = mc->m;
    be_ctx *c = m->c;
    cc_emit *e = mc->e;
    for (int s = 0; s < 2; s++) {
        mc->ab[s] = cc_lx_alloc(e, mc->abslot_bytes, "matmul A/B chunk (and staged sticks)");
        mc->cs[s] = cc_lx_alloc(e, mc->cslot_bytes, "matmul block");
        for (int u = 0; u < mc->nc; u++) {
            mc->abfull[s][u] = cc_tok_alloc(e, "matmul A/B full");
            mc->abempty[s][u] = cc_tok_alloc(e, "matmul A/B empty");
            mc->mmd[s][u] = cc_tok_alloc(e, "matmul product done");
            mc->cempty[s][u] = cc_tok_alloc(e, "matmul result empty");
        }
        mc->efull[s] = cc_tok_alloc(e, "matmul epilogue operands full");
        mc->eempty[s] = cc_tok_alloc(e, "matmul block empty");
        mc->done[s] = cc_tok_alloc(e, "matmul epilogue done");
    }
    for (int wo = 0; wo < 2; wo++) {
        if (!(wo ? m->bw : m->aw))
            continue;
        int buf = wo ? m->mm->b : m->mm->a;
        int64_t **hi = wo ? &mc->bhi : &mc->ahi;
        *hi = ir_xalloc((size_t)c->lay[buf].groups * sizeof **hi);
        int64_t bytes = mm_core_span(mc, wo, wo ? mc->blo : mc->alo, *hi);
        *(wo ? &mc->bws : &mc->aws) =
            cc_lx_alloc(e, bytes, wo ? "restickify: B staged whole" : "restickify: A staged whole");
    }
    if (m->aw || m->bw)
        mc->wld = cc_tok_alloc(e, "restickify: operands staged whole");
}

/* Restickified results: each stored through a staged copy of its buffer
 * (with per-stick element counts); returns how many. */
static int mm_core_staged(mm_core *mc)
{
    mm_plan *m = mc->m;
    be_ctx *c = m->c;
    cc_emit *e = mc->e;
    int nstaged = 0;
    mc->ostage = ir_xalloc((size_t)m->ep.nn * sizeof *mc->ostage);
    mc->ocount = ir_xalloc((size_t)m->ep.nn * sizeof *mc->ocount);
    if (m->ag || m->bg) {
        for (int s = 0; s < 2; s++)
            for (int u = 0; u < mc->nc; u++)
                mc->abrst[s][u] = cc_tok_alloc(e, "restickify: A/B slot written");
    }
    for (int j = 0; j < m->ep.nn; j++)
        if (m->ep.nodes[j].dram && m->ep.nodes[j].staged) {
            int out = c->p->nodes[m->ep.nodes[j].node].out;
            mc->ostage[j] = cc_lx_alloc(e, be_buf_bytes(c, out), "restickify: staged result");
            mc->ocount[j] = ir_xalloc((size_t)(be_buf_bytes(c, out) / c->t.stick) * sizeof **mc->ocount);
            nstaged++;
        }
    if (nstaged)
        mc->strd = cc_tok_alloc(e, "restickify: staged results written");
    return nstaged;
}

/* The kernel's start: every slot empty, the operands staged whole due
 * with the first chunk (sfp0 waits once before its first sfp.rst), every
 * B slot free. */
static void mm_core_begin(mm_core *mc)
{
    mm_plan *m = mc->m;
    cc_emit *e = mc->e;
    cc_kernel_begin(e, m->K->name);
    mc->ptlike[0] = mc->ptlike[1] = -1;
    for (int s = 0; s < 2; s++) {
        for (int u = 0; u < mc->nc; u++) {
            cc_emit_sig(e, ISA_U_DMAI, mc->abempty[s][u]);
            cc_emit_sig(e, ISA_U_DMAO, mc->cempty[s][u]);
        }
        cc_emit_sig(e, ISA_U_DMAI, mc->eempty[s]);
    }
    if (m->aw || m->bw) {
        mc->wld_due = 1;
        cc_emit_wait(e, ISA_U_SFP0, mc->wld);
    }
    for (int64_t i = 0; mc->bc && i < BC_SLOTS; i++) /* every slot starts free */
        bc_release(mc, i);
}

/* The kernel's end: the last chunk's B slot, the staged results stored,
 * every slot drained. */
static int mm_core_end(mm_core *mc, int nstaged, int rc)
{
    mm_plan *m = mc->m;
    be_ctx *c = m->c;
    cc_emit *e = mc->e;
    for (int u = 0; mc->bc && u < mc->nc; u++)
        cc_emit_wait(e, ISA_U_RING, mc->ptdone[u]);
    mm_load_whole(mc); /* no chunk came (an error): sfp0 still waits for it */
    if (nstaged && !rc) {
        cc_emit_sig(e, ISA_U_SFP0, mc->strd);
        cc_emit_wait(e, ISA_U_DMAO, mc->strd);
        for (int j = 0; j < m->ep.nn && !rc; j++)
            if (m->ep.nodes[j].dram && m->ep.nodes[j].staged)
                rc = be_store_staged(c, m->K, e, c->p->nodes[m->ep.nodes[j].node].out, mc->ostage[j], mc->ocount[j]);
    }
    for (int s = 0; s < 2; s++) {
        for (int u = 0; u < mc->nc; u++) {
            cc_emit_wait(e, ISA_U_DMAI, mc->abempty[s][u]);
            cc_emit_wait(e, u ? ISA_U_PT1 : ISA_U_PT0, mc->cempty[s][u]);
        }
        cc_emit_wait(e, ISA_U_DMAI, mc->eempty[s]);
    }
    cc_kernel_end(e);
    return rc;
}

/* A core's tile of the gm x gn (x gk, x gb) grid: rows [m0, m0 + mt),
 * stick groups [g0, g0 + ns), K's stick groups [ks0, ks0 + ksn), batch
 * indices [b0, b0 + bt); 1 when it has none (idle). */
typedef struct {
    int64_t m0, mt, g0, ns, ks0, ksn, b0, bt;
} mm_tile;
static int mm_core_tile(const mm_plan *m, const be_work *w, int core, mm_tile *t)
{
    const int64_t grid = w->gm * w->gn * w->gk, at = core % grid, cell = at / w->gk;
    cc_split(m->M, w->gm, cell / w->gn, &t->m0, &t->mt);
    cc_split(m->GN, w->gn, cell % w->gn, &t->g0, &t->ns);
    cc_split(m->KG, w->gk, at % w->gk, &t->ks0, &t->ksn);
    cc_split(m->nbatch, m->gb, core / grid, &t->b0, &t->bt);
    return !t->mt || !t->ns || !t->ksn || !t->bt;
}

/* A core of a gm x gn (x gk split-K) grid on emitter e: its tile,
 * blocking, LX and tokens (*idle: it has no tile).  All of its LX is
 * taken here, before any instruction: its working LX is e->lx_top after
 * it (be_matmul_need). */
static int mm_grid_setup(mm_core *mc, be_ctx *c, mm_plan *m, int core, cc_emit *e, int *idle)
{
    const be_work *w = &c->work[m->ep.pos];
    const int64_t grid = w->gm * w->gn * w->gk, at = core % grid;
    mm_tile tile;
    *idle = mm_core_tile(m, w, core, &tile);
    const int64_t m0 = tile.m0, mt = tile.mt, g0 = tile.g0, ns = tile.ns, ks0 = tile.ks0, ksn = tile.ksn,
                  b0 = tile.b0, bt = tile.bt;
    memset(mc, 0, sizeof *mc);
    if (*idle)
        return 0;
    e->lx_top = 0;
    e->ntokens = 0;
    mc->m = m;
    mc->e = e;
    mc->m0 = m0;
    mc->mt = mt;
    mc->g0 = g0;
    mc->ns = ns;
    mc->b0 = b0;
    mc->bt = bt;
    mc->gk = w->gk;
    mc->ik = at % w->gk;
    mc->kb = ks0 * c->t.lanes16;
    mc->kt = cc_min(ksn * c->t.lanes16, m->Kd - mc->kb);
    int rc = mm_core_shape(mc, w, mt, ns);
    if (rc)
        return rc;
    mm_core_stage(mc, m0, mt, g0, ns);
    mm_core_slots(mc);
    mm_core_ring(mc);
    mc->nstaged = mm_core_staged(mc);
    return cc_emit_failed(e) ? -1 : 0;
}

/* Its blocks in order. */
static int mm_grid_emit(mm_core *mc, be_ctx *c)
{
    int rc = 0;
    mm_tile_init(mc, c, mc->MB);
    mm_core_begin(mc);
    for (int64_t b = mc->b0; b < mc->b0 + mc->bt && !rc; b++)
        for (int64_t r = mc->m0; r < mc->m0 + mc->mt && !rc; r += mc->MB)
            for (int64_t g = mc->g0; g < mc->g0 + mc->ns && !rc; g += mc->NBS)
                rc = mm_block_emit(mc, b, r, cc_min(mc->MB, mc->m0 + mc->mt - r), g, cc_min(mc->NBS, mc->g0 + mc->ns - g));
    rc = mm_core_end(mc, mc->nstaged, rc);
    return rc || cc_emit_failed(mc->e) ? -1 : 0;
}

static int mm_grid_core(be_ctx *c, mm_plan *m, int core)
{
    mm_core mc;
    int idle, rc = mm_grid_setup(&mc, c, m, core, &c->em[core], &idle);
    if (!rc && !idle)
        rc = mm_grid_emit(&mc, c);
    mm_core_free(&mc, m->ep.nn);
    return rc;
}

/* Kernel pos's plan for codegen, with the lxplan's decisions (-1 with an
 * error); note: for the report (mm_emit_residency). */
static int mm_prepare(be_ctx *c, int pos, mm_plan *m, int note)
{
    if (mm_build(c, pos, m))
        return -1;
    if (m->ep.nn > IR_KERNEL_NODES)
        return be_error(c, m->K, "more than %d epilogue nodes (not supported yet)", IR_KERNEL_NODES);
    mm_set_gk(m, c->work[pos].gk ? c->work[pos].gk : 1);
    m->gb = c->work[pos].gb > 1 ? c->work[pos].gb : 1;
    mm_emit_residency(c, pos, m, note);
    return 0;
}

/* Whether core's setup repeats one made (then 1), else notes its shape:
 * with no operand restickified or staged whole (mm_core_stage and
 * mm_core_span read the tile's place) a core's LX hangs on its tile's
 * rows, sticks and K alone. */
#define MM_NEED_SHAPES 8
static int mm_need_seen(const be_ctx *c, const mm_plan *m, const be_work *w, int core, int64_t (*seen)[3], int *nseen)
{
    mm_tile t;
    if (m->ag || m->bg || m->aw || m->bw || mm_core_tile(m, w, core, &t))
        return 0;
    const int64_t key[3] = {t.mt, t.ns, cc_min(t.ksn * c->t.lanes16, m->Kd - t.ks0 * c->t.lanes16)};
    for (int i = 0; i < *nseen; i++)
        if (seen[i][0] == key[0] && seen[i][1] == key[1] && seen[i][2] == key[2])
            return 1;
    if (*nseen < MM_NEED_SHAPES)
        memcpy(seen[(*nseen)++], key, sizeof key);
    return 0;
}

int64_t be_matmul_need(be_ctx *c, int pos)
{
    mm_plan m;
    int64_t need = mm_prepare(c, pos, &m, 0) ? -1 : 0;
    const be_work *w = &c->work[pos];
    int64_t seen[2] = {-1, -1}; /* a grid over the ring: the column sticks set up so far */
    int64_t shapes[MM_NEED_SHAPES][3];
    int nshapes = 0;
    for (int core = 0; core < w->cores && need >= 0; core++) {
        cc_emit e;
        int rc, idle = 0;
        if (w->bcast && w->gn > 1) {
            /* a core's LX hangs on its column's sticks alone (mm_rg_need):
             * one such core set up, the others take as much */
            int64_t g0, ns;
            cc_split(m.GN, w->gn, core % w->gn, &g0, &ns);
            if (ns == seen[0] || ns == seen[1])
                continue;
            be_lx_probe(c, pos, core, &e);
            rc = mm_rg_need(c, &m, core, &e);
            seen[seen[0] >= 0] = ns;
        } else {
            if (mm_need_seen(c, &m, w, core, shapes, &nshapes))
                continue;
            be_lx_probe(c, pos, core, &e);
            mm_core mc;
            rc = mm_grid_setup(&mc, c, &m, core, &e, &idle);
            mm_core_free(&mc, m.ep.nn);
        }
        need = rc ? -1 : cc_max(need, (int64_t)e.lx_top);
    }
    mm_free(&m);
    return need;
}

int be_matmul_prefetch(be_ctx *c, int pos, int64_t above)
{
    const be_work *w = &c->work[pos];
    c->pre.n = 0;
    /* only a grid over the ring streams B from one loader a column; and
     * only a kernel before it with a drain leaves the DRAM time to */
    if (!w->bcast || w->gn < 2)
        return 0;
    mm_plan m;
    int rc = mm_prepare(c, pos, &m, 0);
    if (!rc)
        rc = mm_rg_prefetch(c, &m, pos - 1, above, c->drain_pos == pos - 1 ? c->drain : 0, &c->pre);
    mm_free(&m);
    return rc < 0 ? -1 : 0;
}

/* The most LX the kernels after from and before pos take, or -1; and
 * their estimates' sum: the time loads ahead have besides from's drain. */
static int64_t between_need(be_ctx *c, int from, int pos, double *est)
{
    int64_t need = 0;
    *est = 0;
    for (int i = from + 1; i < pos && need >= 0; i++) {
        const int64_t n = be_kind_of(c, i)->need(c, i);
        need = n < 0 ? -1 : cc_max(need, n);
        *est += be_kind_of(c, i)->estimate(c, i);
    }
    return need;
}

/* A grid over the ring that streams B (rg_tl.slots) ends the search for a
 * kernel to load ahead for; past the kernel after from, its first chunks
 * are loaded in from's drain and in the kernels between (a grid with B
 * whole or on its cores lets the loads pass: BERT-base's FFN up-projection
 * behind the fused q/k/v projection, past attention and its output
 * projection). */
int be_matmul_prefetch_far(be_ctx *c, int pos, int from, int64_t above)
{
    const be_work *w = &c->work[pos];
    if (!w->bcast || w->gn < 2)
        return 0;
    double est = 0;
    const int64_t need = between_need(c, from, pos, &est);
    if (need < 0)
        return -1;
    mm_plan m;
    int rc = mm_prepare(c, pos, &m, 0);
    if (!rc) {
        /* the kernel after from: be_kind.prefetch's (asked only whether it streams) */
        be_pre none, *out = pos > from + 1 ? &c->far : &none;
        rc = mm_rg_prefetch(c, &m, from, cc_max(above, need), pos > from + 1 ? c->drain + est : 0, out);
    }
    mm_free(&m);
    return rc;
}

/* Kernel pos's code on core (be_par_cores' fn). */
static int mm_core_emit(be_ctx *c, void *arg, int core)
{
    mm_plan *m = arg;
    const be_work *w = &c->work[m->ep.pos];
    return w->bcast && w->gn > 1 ? mm_rg_core(c, m, core) : mm_grid_core(c, m, core);
}

/* A copy of the plan on another view of the back half (be_par_cores). */
static void mm_view(be_ctx *c, void *arg)
{
    mm_plan *m = arg;
    m->c = c;
    m->ep.c = c;
}

/* The worker's cores: a grid over the ring's odd columns when it has an
 * even number (its cores' code differs by column: the ring sends of the
 * kept results, B's way down the column), else the last half. */
static int mm_side(const void *arg, int core)
{
    const mm_plan *m = arg;
    const be_work *w = &m->c->work[m->ep.pos];
    if (w->bcast && w->gn > 1 && w->gn % 2 == 0)
        return core % w->gn % 2;
    return core >= w->cores - w->cores / 2;
}

/* The tilings every core reads, made before the cores are emitted (on two
 * threads they only read them; the searches' memos are the compile's),
 * in core order as the cores would have asked. */
static void mm_shared(be_ctx *c, mm_plan *m)
{
    const be_work *w = &c->work[m->ep.pos];
    if (w->bcast && w->gn > 1) {
        mm_rg_plan_tiling(m);
        return;
    }
    mm_tile t;
    for (int core = 0; core < w->cores; core++)
        if (!mm_core_tile(m, w, core, &t))
            mm_tile_tiling(m, w, t.mt, t.ns);
}

int be_matmul_emit(be_ctx *c, int pos)
{
    mm_plan m;
    int rc = mm_prepare(c, pos, &m, 1);
    const be_work *w = &c->work[pos];
    if (!rc) {
        mm_shared(c, &m);
        rc = be_par_cores(c, w->cores, mm_core_emit, &m, sizeof m, mm_view, mm_side);
    }
    if (!rc && w->bcast && w->gn > 1 && m.rg_tl.slots) { /* a streamed grid: its drain, for the loads ahead */
        c->drain = mm_rg_drain(&m, w->gm, &m.rg_tl);
        c->drain_pos = pos;
    }
    mm_free(&m);
    return rc;
}
