/* backend.c: the back half's passes layout, workdiv and codegen, and the
 * tensor table.  The kernel generators are be_matmul.c and be_rows.c
 * (through the kernel-kind table, be_kind.c), the LX plan be_lxplan.c;
 * cc_codegen (passes.c) runs the back half of the pass table (the file
 * map: docs/compiler.md). */
#include "backend.h"
#include "be_bound.h"
#include "be_diag.h"

#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- layout ---- */

/* The tensor role of a DRAM buffer in the program. */
static isa_role buf_role(const ir_buf *B)
{
    return B->kind == IR_BUF_INPUT   ? ISA_ROLE_INPUT
           : B->kind == IR_BUF_PARAM ? ISA_ROLE_WEIGHT
           : B->output               ? ISA_ROLE_OUTPUT
                                     : ISA_ROLE_SCRATCH;
}

/* A compiler-made constant's values into the program's constant data, in
 * T's device layout (the runtime writes them with the weights). */
static void bake_const(isa_program *prog, isa_tensor *T, const float *data)
{
    size_t off = (prog->nconsts + 63) / 64 * 64;
    uint8_t *c = realloc(prog->consts, off + T->bytes);
    if (!c)
        abort();
    memset(c + prog->nconsts, 0, off - prog->nconsts);
    isa_layout_pack(T, prog->stick_bytes, data, c + off);
    prog->consts = c;
    prog->nconsts = off + T->bytes;
    T->const_off = (int64_t)off;
}

/* The name a DRAM buffer's tensor gets (gr_tensor_name of): a graph
 * output's value name, else the buffer's (an input's or parameter's value
 * name), ".tmp" added to a scratch buffer's when an output has it (a fused
 * view chain's buffer named as the output value that reshapes it). */
static void tensor_name(const ir_prog *p, int b, const gr_ttype **type, char name[ISA_NAME_MAX])
{
    _Static_assert(GR_TENSOR_NAME_MAX == ISA_NAME_MAX, "device tensor names are the ELF's");
    *type = &p->bufs[b].type;
    for (int o = 0; o < p->noutputs; o++)
        if (p->outputs[o].buf == b) {
            *type = &p->outputs[o].type;
            gr_tensor_name(p->outputs[o].name, name);
            return;
        }
    const char *own = p->bufs[b].name;
    for (int o = 0; buf_role(&p->bufs[b]) == ISA_ROLE_SCRATCH && o < p->noutputs; o++)
        if (!strcmp(p->outputs[o].name, own)) { /* an output is named so (its buffer renamed): not this scratch */
            size_t n = strlen(own) + sizeof ".tmp";
            char *tmp = malloc(n);
            if (!tmp)
                abort();
            snprintf(tmp, n, "%s.tmp", own);
            gr_tensor_name(tmp, name);
            free(tmp);
            return;
        }
    gr_tensor_name(own, name);
}

/* Types a and b have the same dims (an output that is its buffer, not a
 * reshape of it). */
static int same_dims(const gr_ttype *a, const gr_ttype *b)
{
    if (a->rank != b->rank)
        return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

_Static_assert(IR_WRAP_ROWS_MAX == ISA_WRAP_ROWS_MAX, "a table's rows fit the tensor record's bits");

/* Weight b is the row numbers of gathers, a negative one counted from the
 * end: uploaded wrapped (ISA_TF_WRAP; a compiler-made constant's values
 * are baked as they are). */
static int wraps(const ir_prog *p, int b)
{
    const ir_buf *B = &p->bufs[b];
    return B->kind == IR_BUF_PARAM && B->wrap_rows > 0 && !B->cdata;
}

/* Does a live node read buffer b: a host op (not a collective) when
 * host, else a device kernel or a collective (which reads its device copy)? */
static int read_by(const ir_prog *p, int b, int host)
{
    for (int n = 0; n < p->nnodes; n++) {
        const ir_node *N = &p->nodes[n];
        if (N->dead || (N->kind == IR_HOST && !be_host_coll(p, N)) != host)
            continue;
        for (int r = 0; N->kind == IR_HOST && r < N->nhin; r++)
            if (N->hin[r] == b)
                return 1;
        for (int r = 0; N->kind != IR_HOST && r < N->nreads; r++)
            if (N->reads[r].buf == b)
                return 1;
    }
    return 0;
}

static int device_reads(const ir_prog *p, int b)
{
    return read_by(p, b, 0);
}

/* The one rule of the host fallback's fp32 values, recorded in the
 * program (ISA_TF_HOST, ISA_TF_HOSTONLY) for the runtime and the stepwise
 * check: a host op's result that host ops read, they take in fp32 from
 * the host (runtime/fallback.c); one that only they read and no output
 * is gets no device copy. */
static uint32_t host_flags(const ir_prog *p, int b)
{
    if (!be_host_result(p, b) || !read_by(p, b, 1))
        return 0;
    return be_host_only(p, b) ? ISA_TF_HOST | ISA_TF_HOSTONLY : ISA_TF_HOST;
}

int be_host_only(const ir_prog *p, int b)
{
    return be_host_result(p, b) && !p->bufs[b].output && !p->opts.write_values && !device_reads(p, b);
}

/* Buffer b holds fp32 values on the device, else DL16.  Integer inputs
 * that are row numbers (token ids, a state update's positions) are fp32,
 * exact up to 2^24: dma.gather and dma.scatter read them; so are a host op's integer results (the host writes them,
 * and DL16 would round them unchecked), and integer inputs only host ops
 * read (the host gets the user's values).  Other integer inputs (positions
 * compared, masks) are DL16 like any value; the runtime refuses values
 * DL16 cannot hold exactly at launch (rt_ranges_check), and a declared
 * range past them sends their readers to the host (intexact.c). */
static int dev_f32(ir_prog *p, int b)
{
    const ir_buf *B = &p->bufs[b];
    int from_host = be_host_result(p, b);
    if (B->type.dtype == GR_I64 || B->type.dtype == GR_I32)
        return from_host ||
               (B->kind != IR_BUF_COMPUTED && (ir_gather_rows(p, b) || be_update_index(p, b) || !device_reads(p, b)));
    /* a host op's float result that only goes back to the host (an output
     * no device kernel reads) stays fp32: DL16 would round it and turn what
     * lies beyond its range into NaN on the way */
    return from_host && B->type.dtype == GR_F32 && B->output && !device_reads(p, b);
}

/* A scratch buffer [.., n, 1] that a pointwise kernel writes and only
 * device kernels read (einsum's operands, permuted to a trailing dim of
 * one; a reduction's row values [.., 1] keep theirs) takes the type
 * [.., n]: the same elements at the same flat indices, sticked on n, not a
 * stick of one element per element. */
static void drop_unit_tail(ir_prog *p, const be_ctx *c)
{
    for (int b = 0; b < p->nbufs; b++) {
        ir_buf *B = &p->bufs[b];
        if (B->kind != IR_BUF_COMPUTED || B->output || !c->lay[b].dram || B->type.rank < 2 ||
            B->type.shape[B->type.rank - 1] != 1 || B->node < 0 || p->nodes[B->node].kind != IR_POINTWISE ||
            read_by(p, b, 1))
            continue;
        while (B->type.rank > 1 && B->type.shape[B->type.rank - 1] == 1)
            B->type.rank--;
        c->lay[b].stick_dim = B->type.rank - 1;
    }
}

/* A scratch buffer [.., h, d] that a matmul kernel writes and whose only
 * readers are matmuls of at least a PT pass of rows whose A walk runs
 * over d past its end into h (attention's output read by the output
 * projection as [t, h*d]; a decode step's row is contiguous sticks
 * either way, and its whole-model decode ran 0.01% slower merged) takes
 * the type [.., h*d] (a row kernel's columns would change): the same
 * elements at the same flat indices, sticked across the heads, so the
 * product reads whole stick groups instead of a wrapped view's runs of
 * one stick, and the writer steps whole groups per head (be_view_of). */
static void merge_wrapped(ir_prog *p, be_ctx *c)
{
    for (int b = 0; b < p->nbufs; b++) {
        ir_buf *B = &p->bufs[b];
        const int r = B->type.rank;
        if (B->kind != IR_BUF_COMPUTED || B->output || !c->lay[b].dram || c->lay[b].f32 || r < 2 ||
            B->type.shape[r - 1] % c->t.lanes16 || B->node < 0 ||
            (p->nodes[B->node].kind != IR_MATMUL && p->nodes[B->node].epi < 0))
            continue;
        int readers = 0, ok = 1;
        for (int n = 0; n < p->nnodes && ok; n++) {
            const ir_node *N = &p->nodes[n];
            for (int i = 0; !N->dead && i < N->nreads; i++)
                if (N->reads[i].buf == b) {
                    const int vk = N->nbatch + 2;
                    ok &= N->kind == IR_MATMUL && N->a == b && N->b != b && N->aidx.coef[vk] == 1 &&
                          N->ranges[vk] > B->type.shape[r - 1] && N->ranges[vk - 2] >= c->cfg->pt_rows;
                    readers++;
                }
        }
        if (!ok || !readers)
            continue;
        B->type.shape[r - 2] *= B->type.shape[r - 1];
        B->type.rank--;
        c->lay[b].stick_dim = r - 2;
    }
}

/* The host dim a variable walks with unit coordinate step, or -1. */
static int walked_dim(const gr_ttype *t, int64_t coef);

/* An input or parameter read only by pointwise nodes (kernels, or a
 * product's epilogue, its lanes along n), whose lanes (the innermost loop)
 * all walk one dim d of it with unit stride, is sticked on d, so their
 * loads walk its sticks (a conv's weight read as its taps' B,
 * wr[kh, kw, ci, co], walks co; a [C, 1, 1] scale of a conv's output,
 * C).  One not read at all, or read
 * otherwise, keeps the layout it has. */
/* Read R of node N, sticked on dim d, walks the sticks without carrying
 * into or out of d: over all of N's loops the dims after d, taken as one
 * row-major block, stay inside it, and d's coordinate inside d.  Stick
 * views compute a row from each loop's steps per dim, linear in the rows
 * of the dims other than d, so carries among the dims before d or among
 * those after it are exact (a conv weight's taps kh, kw merged into one
 * loop); a carry across d is not (unfold's overlapping windows merge a
 * loop that runs from d into the dim before it: it came back wrong). */
static int walks_without_carry(const ir_prog *p, const ir_node *N, const ir_dep *R, int d)
{
    const gr_ttype *t = &p->bufs[R->buf].type;
    int64_t hi[GR_MAX_RANK] = {0}, co[GR_MAX_RANK];
    if (R->idx.offset < 0 || d < 0)
        return 0;
    be_coords_of(t, R->idx.offset, hi);
    for (int v = 0; v < N->nvars; v++) {
        if (R->idx.coef[v] < 0)
            return 0;
        memset(co, 0, sizeof co);
        be_coords_of(t, R->idx.coef[v], co);
        for (int e = 0; e < t->rank; e++)
            hi[e] += co[e] * (N->ranges[v] - 1);
    }
    int64_t after = 0, block = 1;
    for (int e = t->rank - 1; e > d; e--) {
        after += hi[e] * block;
        block *= t->shape[e];
    }
    return after < block && hi[d] < t->shape[d];
}

static void pointwise_sticks(ir_prog *p, be_ctx *c)
{
    int *dim = ir_xalloc((size_t)(p->nbufs ? p->nbufs : 1) * sizeof *dim);
    for (int b = 0; b < p->nbufs; b++)
        dim[b] = p->bufs[b].kind == IR_BUF_COMPUTED || c->lay[b].want_dim != -1 ? -2 : -1;
    for (int n = 0; n < p->nnodes; n++) {
        const ir_node *N = &p->nodes[n];
        for (int r = 0; !N->dead && r < N->nreads; r++) {
            const ir_dep *R = &N->reads[r];
            if (dim[R->buf] == -2)
                continue;
            int d = N->kind == IR_POINTWISE && !R->star && N->nvars
                        ? walked_dim(&p->bufs[R->buf].type, R->idx.coef[N->nvars - 1])
                        : -1;
            if (d >= 0 && !walks_without_carry(p, N, R, d))
                d = -1;
            dim[R->buf] = d < 0 || (dim[R->buf] >= 0 && dim[R->buf] != d) ? -2 : d;
        }
    }
    for (int b = 0; b < p->nbufs; b++)
        if (dim[b] >= 0)
            c->lay[b].stick_dim = dim[b];
    free(dim);
}

/* Elements a tensor of type t takes on the device sticked on dim d, its
 * sticks of `lanes` elements: the other dims' rows times d's whole sticks. */
static int64_t padded_elems(const gr_ttype *t, int d, int64_t lanes)
{
    int64_t n = gr_ttype_numel(t);
    return n ? n / t->shape[d] * cc_ceil_div(t->shape[d], lanes) * lanes : 0;
}

/* A DRAM buffer no device kernel reads or writes (a parameter or input
 * only host ops read, a host op's result only host ops read or the graph
 * returns) has a free stick: the runtime packs and unpacks any layout.  It
 * takes the dim that pads least (a [512, 512, 3, 3] conv weight sticked on
 * its last dim pads each 3 to a stick of 64), the default on a tie, else
 * the later dim.  An output reshaped from its buffer keeps the default
 * (its bytes are the buffer's, read as sticked on the last dim). */
static void free_sticks(ir_prog *p, be_ctx *c)
{
    char *dev = ir_xalloc((size_t)(p->nbufs ? p->nbufs : 1));
    for (int n = 0; n < p->nnodes; n++) {
        const ir_node *N = &p->nodes[n];
        if (N->dead || N->kind == IR_HOST)
            continue;
        dev[N->out] = 1;
        for (int r = 0; r < N->nreads; r++)
            dev[N->reads[r].buf] = 1;
    }
    for (int b = 0; b < p->nbufs; b++) {
        const gr_ttype *t = &p->bufs[b].type, *ht;
        char name[ISA_NAME_MAX];
        if (dev[b] || !c->lay[b].dram || t->rank < 2)
            continue;
        tensor_name(p, b, &ht, name);
        if (!same_dims(ht, t))
            continue;
        int64_t lanes = c->lay[b].f32 ? c->t.lanes32 : c->t.lanes16;
        int best = t->rank - 1;
        for (int d = t->rank - 2; d >= 0; d--)
            if (padded_elems(t, d, lanes) < padded_elems(t, best, lanes))
                best = d;
        c->lay[b].stick_dim = best;
        c->lay[b].free_stick = 1;
    }
    free(dev);
}

static int walked_dim(const gr_ttype *t, int64_t coef)
{
    int64_t co[GR_MAX_RANK] = {0};
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

/* Buffer b's tensor into the program's table at the next aligned offset,
 * and its layout's offset, sticks and rows. */
static int add_tensor(ir_prog *p, be_ctx *c, int b, uint64_t align)
{
    be_layout *L = &c->lay[b];
    const ir_buf *B = &p->bufs[b];
    const gr_ttype *ht;
    char name[ISA_NAME_MAX];
    tensor_name(p, b, &ht, name);
    if (B->type.rank > ISA_MAX_RANK || ht->rank > ISA_MAX_RANK)
        return ir_error(p, -1, "buffer %s: rank %d is more than the device's %d", B->name, B->type.rank, ISA_MAX_RANK);
    int twin = isa_program_find_tensor(c->prog, name);
    if (twin >= 0)
        return ir_error(p, -1, "output %s: %s (not supported yet)", name,
                        c->prog->tensors[twin].role == ISA_ROLE_INPUT || c->prog->tensors[twin].role == ISA_ROLE_WEIGHT
                            ? "the graph returns one of its inputs unchanged"
                            : "two values of the graph would be this one tensor (an output that is a view of another)");
    /* An output reshaped from its buffer keeps the buffer's device bytes
     * only when the stick dimension (the last) is unchanged. */
    if (ht != &B->type && (ht->rank == 0) != (B->type.rank == 0))
        return ir_error(p, -1, "output %s: a reshape to or from a scalar is not supported by the back half", name);
    const int reshaped = !same_dims(ht, &B->type);
    if (reshaped && ht->rank && (ht->shape[ht->rank - 1] != B->type.shape[B->type.rank - 1] ||
                                 L->stick_dim != B->type.rank - 1))
        return ir_error(p, -1, "output %s: reshaped from buffer %s across its last dimension (needs a restickify)",
                        name, B->name);
    uint64_t off = (c->prog->dram_bytes + align - 1) / align * align;
    isa_host_dtype hdt = B->type.dtype == GR_F16    ? ISA_HT_F16
                         : B->type.dtype == GR_BF16 ? ISA_HT_BF16
                                                    : ISA_HT_F32;
    /* The table reserves a tensor's bytes sticked on its last dim.  A free
     * stick reserves only its own; a kernel's operand sticked elsewhere
     * keeps the reservation (giving it back moves the tensors after it:
     * docs/compiler.md, "Free sticks"). */
    const uint64_t end = c->prog->dram_bytes;
    int ti = isa_program_add_tensor(c->prog, name, buf_role(B), hdt, L->f32 ? ISA_T_F32 : ISA_T_DL16, ht->rank,
                                    ht->shape, off);
    isa_tensor *T = &c->prog->tensors[ti];
    if (!reshaped)
        T->stick_dim = L->stick_dim;
    if (B->whole_value && T->role == ISA_ROLE_SCRATCH)
        T->flags |= ISA_TF_VALUE;
    if (T->role == ISA_ROLE_SCRATCH || T->role == ISA_ROLE_OUTPUT)
        T->flags |= host_flags(p, b);
    if (B->kind == IR_BUF_INPUT && B->nan_axis != IR_MASK_NONE)
        T->flags |= ISA_TF_NANROW, T->nan_axis = B->nan_axis;
    if (wraps(c->p, b))
        T->flags |= ISA_TF_WRAP, T->wrap_rows = B->wrap_rows;
    T->bytes = isa_tensor_device_bytes(T, c->prog->stick_bytes);
    if (B->cdata)
        bake_const(c->prog, T, B->cdata);
    if (L->free_stick || c->own_bytes)
        c->prog->dram_bytes = off + T->bytes > end ? off + T->bytes : end;
    else if (off + T->bytes > c->prog->dram_bytes)
        c->prog->dram_bytes = off + T->bytes;
    L->off = off;
    L->groups = B->type.rank ? cc_ceil_div(B->type.shape[L->stick_dim], L->f32 ? c->t.lanes32 : c->t.lanes16) : 1;
    L->rows = 1;
    for (int d = 0; d < B->type.rank; d++)
        if (d != L->stick_dim)
            L->rows *= B->type.shape[d];
    return 0;
}

/* A concatenated buffer's parts (fuse_siblings: parameters, outputs)
 * take its stick, so that laid one after another they are its device
 * bytes: sticked on the dim they are concatenated along (the layout is
 * stick group after stick group), each a whole number of sticks. */
static int cat_sticks(ir_prog *p, be_ctx *c)
{
    for (int b = 0; b < p->nbufs; b++) {
        const ir_buf *B = &p->bufs[b];
        const int d = B->cat_dim;
        for (int j = 0; j < B->nparts; j++) {
            be_layout *P = &c->lay[B->parts[j]];
            P->stick_dim = c->lay[b].stick_dim;
            P->f32 = c->lay[b].f32;
            P->free_stick = 0;
            if (c->lay[b].stick_dim != d || p->bufs[B->parts[j]].type.shape[d] % (P->f32 ? c->t.lanes32 : c->t.lanes16))
                return ir_error(p, -1, "buffer %s: its parts are not whole sticks along dim %d", B->name, d);
        }
    }
    return 0;
}

/* A concatenated buffer's parts into the table one after another; it
 * takes their bytes as its own. */
static int add_cat(ir_prog *p, be_ctx *c, int b, uint64_t align)
{
    const ir_buf *B = &p->bufs[b];
    be_layout *L = &c->lay[b];
    for (int j = 0; j < B->nparts; j++) {
        const be_layout *prev = j ? &c->lay[B->parts[j - 1]] : NULL;
        uint64_t end = prev ? prev->off + (uint64_t)(prev->groups * prev->rows) * c->cfg->stick_bytes : 0;
        if (add_tensor(p, c, B->parts[j], j ? c->cfg->stick_bytes : align))
            return -1;
        if (prev && c->lay[B->parts[j]].off != end)
            return ir_error(p, -1, "buffer %s: its parts do not lie one after another", B->name);
    }
    L->off = c->lay[B->parts[0]].off;
    L->groups = cc_ceil_div(B->type.shape[B->cat_dim], L->f32 ? c->t.lanes32 : c->t.lanes16);
    L->rows = 1;
    for (int d = 0; d < B->type.rank; d++)
        L->rows *= d == B->cat_dim ? 1 : B->type.shape[d];
    return 0;
}

/* The tensor table, each tensor at its DRAM offset. */
static int table_tensors(ir_prog *p, be_ctx *c, const chip_config *cfg)
{
    /* The program in the arena of the span cache cc_compile's
     * attempts share if an attempt before made it (its tables and this
     * program's code then share huge pages as the rolling's scratch does:
     * be_reroll.c rr_state). */
    c->prog = cc_program_new(cfg, p->graph_text, be_spancache_shared_arena(c), p->err, p->errlen);
    if (!c->prog)
        return -1;
    uint64_t align = cfg->stick_bytes;
    if (cfg->dram_align > align && cfg->dram_align % align == 0)
        align = cfg->dram_align;
    /* Parameters first: they form the weights region, which the runtime
     * keeps resident across runs (docs/runtime.md). */
    /* A concatenated parameter is laid out where its first part would be:
     * cat[b] is the concatenation whose first part b is, -1 for any other
     * part (laid out with the first), -2 for the rest. */
    int *cat = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *cat);
    for (int b = 0; b < p->nbufs; b++)
        cat[b] = -2;
    for (int b = 0; b < p->nbufs; b++)
        for (int j = 0; j < p->bufs[b].nparts; j++)
            cat[p->bufs[b].parts[j]] = j ? -1 : b;
    int failed = 0;
    for (int pass = 0; pass < 2 && !failed; pass++) {
        if (pass == 1)
            c->prog->weight_bytes = (c->prog->dram_bytes + align - 1) / align * align;
        for (int b = 0; b < p->nbufs && !failed; b++)
            if (c->lay[b].dram && !p->bufs[b].nparts && cat[b] != -1 &&
                (p->bufs[b].kind == IR_BUF_PARAM) == (pass == 0))
                failed = cat[b] >= 0 ? add_cat(p, c, cat[b], align) : add_tensor(p, c, b, align);
    }
    free(cat);
    return failed ? -1 : 0;
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
        L->f32 = L->dram && dev_f32(p, b);
    }
    drop_unit_tail(p, c);
    merge_wrapped(p, c);
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
    pointwise_sticks(p, c);
    free_sticks(p, c);
    be_update_layouts(p, c);
    if (cat_sticks(p, c))
        return -1;
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
    /* A table that does not fit with each tensor's bytes reserved as
     * sticked on its last dim (a video ResNet's 3x3x3 weights, padded 64 /
     * 3 times) is made again with only their own bytes reserved. */
    if (table_tensors(p, c, cfg))
        return -1;
    if (c->prog->dram_bytes > cfg->dram_bytes) {
        isa_program_free(c->prog);
        c->own_bytes = 1;
        if (table_tensors(p, c, cfg))
            return -1;
    }
    if (c->prog->dram_bytes > cfg->dram_bytes)
        return ir_error(p, -1, "the tensors need %llu bytes of DRAM, more than %s has",
                        (unsigned long long)c->prog->dram_bytes, cfg->name);
    return 0;
}

/* ---- workdiv ---- */

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
                        "work_div \"%s\": expected KERNEL=SPEC (SPEC GMxGN[xGK|r|bGB][/MBxNBSxKC][+nokeep] for a matmul, "
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
    const be_kind *kd = be_kind_of(c, pos);
    be_work *w = &c->work[pos];
    const char *q = eq + 1;
    while (*q == ' ' || *q == '\t')
        q++;
    const char *spec = q;
    const int64_t used = kd->split(&q, w);
    /* +nokeep: nothing this kernel reads or writes stays in LX across kernels */
    int nokeep = 0;
    if (!strncmp(q, "+nokeep", 7)) {
        nokeep = 1;
        q += 7;
    }
    while (*q == ' ' || *q == '\t')
        q++;
    if (used < 1 || *q)
        return be_error(c, K, "work_div \"%s\": %s", spec, kd->syntax);
    if (w->bcast && used != (int64_t)c->cfg->cores)
        return be_error(c, K, "work_div \"%s\": a matmul over the ring takes every core (%ux1r, or GMxGNr with GM x "
                        "GN = %u) on %s", spec, (unsigned)c->cfg->cores, (unsigned)c->cfg->cores, c->cfg->name);
    if (used > (int64_t)c->cfg->cores)
        return be_error(c, K, "work_div \"%s\" uses %" PRId64 " cores, more than the %u of %s", spec, used,
                        (unsigned)c->cfg->cores, c->cfg->name);
    w->nokeep = nokeep;
    state_of(c)->k[pos].forced = 1;
    return 0;
}

/* Does kernel j read aligned a buffer that acc (kernel i's accesses)
 * writes aligned?  The buffers into bufs (*nb of them); -1: j reads none
 * of what i writes, 0: only unaligned, 1: some aligned. */
static int reads_aligned(const be_access *acc, int n, const be_access *racc, int rn, int *bufs, int *nb)
{
    int found = -1;
    *nb = 0;
    for (int r = 0; r < rn; r++)
        for (int a = 0; !racc[r].write && a < n; a++)
            if (acc[a].write && acc[a].buf == racc[r].buf) {
                found = found > 0 ? 1 : 0;
                if (acc[a].aligned && racc[r].aligned) {
                    bufs[(*nb)++] = racc[r].buf;
                    found = 1;
                }
            }
    return found;
}

/* How kernel j reads what acc (kernel i's accesses) writes, told by j's
 * accesses before it is planned (which buffers a kernel reads, and which
 * of those reads some split makes aligned, do not hang on its split):
 * -1 not at all, 0 never aligned with i's aligned writes, 1 perhaps
 * (j's plan says; also when its accesses fail: so will the plan). */
static int reads_unplanned(be_ctx *c, const be_access *acc, int n, int j)
{
    be_access *racc = NULL;
    int rn = 0, found = -1;
    if (be_kind_of(c, j)->access(c, j, &racc, &rn))
        return 1;
    for (int r = 0; r < rn; r++)
        for (int a = 0; !racc[r].write && a < n; a++)
            if (acc[a].write && acc[a].buf == racc[r].buf)
                found = found > 0 || (acc[a].aligned && racc[r].may_align) ? 1 : 0;
    free(racc);
    return found;
}

/* One kernel ahead: kernel i's first reader (a later kernel reading what
 * i writes), when it aligns with its writers, is planned alone (then put
 * back as it was) for the split it takes on its own, which i's kind may
 * then take (kd->ahead).  Kernels priced alone left llama_tiny's RoPE on
 * 4 cores, its QK^T aligned to those, the softmax on 16 not aligned with
 * QK^T: 14% slower than the RoPE on the 8 QK^T takes alone
 * (docs/compiler.md, "One kernel ahead").  Only a reader that may read
 * aligned is planned (reads_unplanned): planning the kernels between and
 * the readers no split aligns took 22% of the Llama-8B decode step's
 * compile, for nothing. */
static int ahead(be_ctx *c, int i, const int *writer)
{
    be_access *acc = NULL, *racc = NULL;
    int n = 0, rn = 0, rc = be_kind_of(c, i)->access(c, i, &acc, &n), found = -1;
    for (int j = i + 1; !rc && found < 0 && j < c->p->norder; j++) {
        if ((found = reads_unplanned(c, acc, n, j)) < 1)
            continue; /* -1: not a reader; 0: the first, never aligned */
        found = -1;   /* the plan tells (none if it fails) */
        const be_kind *kj = be_kind_of(c, j);
        const be_work w = c->work[j];
        const be_kinfo ki = state_of(c)->k[j];
        int cores = 0, nb = 0;
        if (!kj->plan(c, j) && !kj->access(c, j, &racc, &rn)) {
            cores = c->work[j].cores;
            int *bufs = ir_xalloc((size_t)(rn + 1) * sizeof *bufs);
            found = reads_aligned(acc, n, racc, rn, bufs, &nb);
            if (found > 0 && kj->align)
                be_kind_of(c, i)->ahead(c, i, writer, j, cores, bufs, nb);
            free(bufs);
        }
        free(racc);
        racc = NULL;
        c->work[j] = w;
        state_of(c)->k[j] = ki;
    }
    free(acc);
    return rc;
}

/* Every kernel's work division in order, each row kernel or batched
 * product aligned with the earlier kernel writing what it reads where that
 * pays, or else with its first reader's own split (keep: LX planning on). */
static int workdiv_round(be_ctx *c, int keep)
{
    ir_prog *p = c->p;
    int *writer = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *writer);
    for (int b = 0; b < p->nbufs; b++)
        writer[b] = -1;
    for (int i = 0; i < p->norder; i++) {
        const be_kind *kd = be_kind_of(c, i);
        int rc = kd->plan(c, i);
        if (!rc && keep && kd->align && !state_of(c)->k[i].forced) {
            int cores = c->work[i].cores;
            kd->align(c, i, writer);
            if (c->work[i].cores != cores)
                rc = kd->plan(c, i); /* again, on the aligned cores */
        }
        if (!rc && keep && kd->ahead && !state_of(c)->k[i].forced && !c->work[i].aligned_to) {
            int cores = c->work[i].cores;
            rc = ahead(c, i, writer);
            if (!rc && c->work[i].cores != cores)
                rc = kd->plan(c, i);
        }
        be_access *acc = NULL;
        int n = 0;
        if (!rc && keep)
            rc = kd->access(c, i, &acc, &n);
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

/* With LX planning on, the work is divided twice: the second time the
 * cost models see what the first division could keep in LX (c->hope: a
 * product's result its readers take from LX is not priced as written to
 * DRAM, nor an operand an earlier kernel keeps as read from it).  The
 * first alone left BERT-base's QK^T on 2 cores, bound by the scores' DRAM
 * write, which the LX plan then kept on chip (docs/compiler.md, "Batch
 * splits").  When nothing could stay, the second would see what the
 * first saw and divide alike: it does not run (a decode step's).  Then a
 * reader by ring exchange whose exchange no longer pays once the bar after
 * it is priced (be_lx_hope_again) is divided again alone, reading DRAM
 * (serve_tiny's prefill of 128 tokens kept its softmax on the 16 cores the
 * exchange of the scores favoured).  The first hope is not pruned so: its
 * exchanges are what align kernels that then need none (llama_tiny's
 * rotary and softmax "as k4_bmm, for LX"), and a third round of every
 * kernel lost such alignments (spyre-4core's prefill of 128 tokens 4.6%
 * slower). */
int be_workdiv_pass(ir_prog *p)
{
    be_ctx *c = p->be;
    for (int h = 0; h < p->opts.nwork_div; h++)
        if (workdiv_override(c, p->opts.work_div[h]))
            return -1;
    const int keep = !p->opts.no_lx_plan && !p->opts.no_lx_keep;
    const size_t size = (size_t)(p->norder + 1) * sizeof *c->work;
    be_work *asked = ir_xalloc(size); /* the overrides, before any choice */
    memcpy(asked, c->work, size);
    be_mmmemo_begin(c);
    int rc = workdiv_round(c, keep);
    if (!rc && keep && (rc = be_lx_hope_begin(c)) > 0) {
        memcpy(c->work, asked, size);
        rc = workdiv_round(c, keep);
        char *gone = ir_xalloc((size_t)p->norder + 1);
        if (!rc && (rc = be_lx_hope_again(c, gone)) > 0)
            for (int i = 0; i < p->norder && rc >= 0; i++)
                if (gone[i] && !state_of(c)->k[i].forced) {
                    c->work[i] = asked[i];
                    rc = be_kind_of(c, i)->plan(c, i) ? -1 : 1;
                }
        free(gone);
        rc = rc < 0 ? -1 : 0;
    }
    be_lx_hope_end(c);
    be_mmmemo_end(c);
    free(asked);
    return rc;
}

/* ---- codegen ---- */

/* The sticks a DMA or ring instruction moves (unrolled: a loop over the
 * levels was a third of measuring a DMA).  Every n is at least 1: the
 * instruction passed isa_fits, and a level its format lacks keeps its
 * default 1. */
static int64_t insn_sticks(const isa_insn *in)
{
    int64_t sticks = in->run;
#pragma GCC unroll 8
    for (int l = 0; l < ISA_MAX_LOOPS; l++)
        sticks *= in->n[l];
    return sticks;
}

/* A DMA unit's time for an instruction that moves `sticks`, as the
 * simulator charges it: its issue, then its sticks at `rate` (LX's or the
 * ring's), the chip's figures as doubles (inline: codegen's walk converts
 * them once per kernel, walk_figs). */
static inline double dma_time_of(double issue, double stick, double rate, int64_t sticks)
{
    return issue + (double)sticks * stick / rate;
}

/* dma_time_of an instruction of class cls (a DMA or the ring). */
static double dma_time(const chip_config *cfg, int64_t sticks, isa_class cls)
{
    const double rate = cls == ISA_C_RING ? cfg->ring_bytes_per_cycle : cfg->lx_bytes_per_cycle;
    return dma_time_of(cfg->dma_issue_cycles, cfg->stick_bytes, rate, sticks);
}

/* Codegen's walk of each core's code: the DRAM sticks it touches (bd),
 * the report's figures (measure), then its kernels rolled.  While
 * rolling, a kernel is emitted into a scratch stream (from a pool: the
 * last one given back, hot in cache and grown; kernels open on several
 * cores at once each take one) and walked and rolled into the core's
 * stream as soon as it is complete (cg_end), so that no core's stream
 * grows to hold a kernel unrolled (the prefill layer's streams had grown
 * to 200 MB of first-touched memory for 35 MB of rolled code); the
 * code between kernels (fences, bars) is walked from the core's stream
 * (from: where the last walk ended).
 *
 * What a walk adds to goes through a lane: the pass's own (bd, the
 * kernel's be_kinfo, the reroll pass's scratch and records), or, while a
 * kernel's cores are split between two threads (be_par_cores), one per
 * half, joined after both halves in core order. */
typedef struct {
    isa_stream *s; /* ncores scratch streams */
    isa_stream **idle;
    int nidle;
} cg_pool;

typedef struct {
    struct cg_walk *w;
    bd_state *bd;
    be_kinfo *ki;         /* NULL: the kernel's own */
    struct be_rrlane *rr; /* NULL: the reroll pass's own */
    cg_pool *pool;
    cc_khooks hooks;
    long emitted;         /* instructions of the kernels it walked, as emitted */
} cg_lane;

typedef struct cg_walk {
    be_ctx *c;
    size_t *from;
    double (*busy)[ISA_NUNITS + 1]; /* per core, per unit and the sequencer (ISA_U_SEQ), this kernel's */
    int roll;
    cg_pool pool[2];   /* this thread's, the worker's */
    cg_lane own;       /* the pass's */
    cg_lane half[2];   /* a split kernel's first cores' (this thread) and last cores' (the worker) */
    bd_state hbd[2];   /* the halves' DRAM accesses (bd_lane_begin) */
    be_kinfo wki;      /* the worker's figures (the first half's go into the kernel's) */
    int par;           /* a kernel's cores may split between two threads (rolling, and the compile has two) */
    int threads;       /* be_threads': 2, or 0 two while a processor is free */
    be_worker *worker; /* NULL: one thread (none yet: par_start) */
    char *werr;        /* the worker's view: its error buffer, be_error record, restickify memo */
    int wfail;
    struct be_rstmemo *wrst;
    struct be_tmemo *wtmemo;
} cg_walk;

/* What instruction in of kernel ki, of DMA or ring class cls, moves
 * between DRAM and LX, and its busiest DMA unit so far (ki->dma_busy, the
 * largest over the cores so far; busy: the core's units' time in the
 * kernel so far). */
static void measure_dma(const be_ctx *c, be_kinfo *ki, const isa_insn *in, isa_class cls, double *busy)
{
    const isa_unit u = isa_class_unit(cls, in);
    const int64_t sticks = insn_sticks(in); /* (exact in a double: far below 2^53) */
    busy[u] += dma_time(c->cfg, sticks, cls);
    ki->dma_busy = cc_max(ki->dma_busy, busy[u]);
    if (in->op != ISA_OP_DMA_LD && in->op != ISA_OP_DMA_ST)
        return;
    *(in->op == ISA_OP_DMA_LD ? &ki->dram_rd : &ki->dram_wr) += sticks * c->t.stick;
}


/* measure_one's work per op, from the table as compiled: a DMA or ring
 * unit's time (M_DMA), the loop flag, or nothing (most: waits and sigs,
 * two in three instructions, which this one load and test pass). */
enum { M_NONE, M_DMA, M_LOOP };
#define M_OF(id, cls) \
    ((cls) == ISA_C_DMAI || (cls) == ISA_C_DMAO || (cls) == ISA_C_RING ? M_DMA : ISA_OP_##id == ISA_OP_LOOP ? M_LOOP : M_NONE)
static const uint8_t op_measure[ISA_NOPS] = {
#define X(id, mn, opc, fmt, cls, cost, sem) M_OF(id, cls),
    ISA_TABLE(X)
#undef X
};
#undef M_OF

/* (inline, its DMA part apart: three instructions in four are another
 * unit's, and the call's saves and restores cost more than their test;
 * in->op is an op: the instruction passed isa_fits) */
static inline void measure_one(const be_ctx *c, be_kinfo *ki, const isa_insn *in, double *busy)
{
    switch (op_measure[in->op]) {
    case M_DMA:
        measure_dma(c, ki, in, isa_op_class(in->op), busy); /* (another unit: no DMA time, no DRAM) */
        break;
    case M_LOOP:
        ki->loops = 1;
        break;
    }
}

/* walk_kernel's work per op, from the table as compiled: none (PT, SFP,
 * bar, fence...), a sig's or wait's token balance (the value: +1, -1;
 * two in three instructions, which one load and one test here take
 * there, not through bd_insn's switch and measure_one's), a ring op's
 * (walk_ring), another DMA's (bd_insn and the measure), or a sequencer
 * control (bd_insn's -1), from which bd_collect runs the rest. */
enum { W_NONE = 0, W_SIG = 1, W_WAIT = -1, W_DMA = 2, W_RING = 3, W_SEQ = 4 };
#define W_OF(id, cls)                                                                                         \
    (ISA_OP_##id == ISA_OP_LI || ISA_OP_##id == ISA_OP_ADDI || ISA_OP_##id == ISA_OP_LOOP ||                  \
             ISA_OP_##id == ISA_OP_ENDL                                                                        \
         ? W_SEQ                                                                                               \
     : ISA_OP_##id == ISA_OP_SIG                 ? W_SIG                                                       \
     : ISA_OP_##id == ISA_OP_WAIT                ? W_WAIT                                                      \
     : (cls) == ISA_C_RING                       ? W_RING                                                      \
     : (cls) == ISA_C_DMAI || (cls) == ISA_C_DMAO ? W_DMA                                                      \
                                                  : W_NONE)
static const int8_t op_walk[ISA_NOPS] = {
#define X(id, mn, opc, fmt, cls, cost, sem) W_OF(id, cls),
    ISA_TABLE(X)
#undef X
};
#undef W_OF

/* What a walk reads and adds to per DMA or ring op, in locals while it
 * runs: through pointers, each was loaded again per instruction (a byte
 * store to bd's flags may alias anything).  top is ki->dma_busy as
 * measure_dma's cc_max leaves it, whole cycles (exact: far below 2^53). */
typedef struct {
    double issue, stick, ring_rate, lx_rate; /* dma_time's operands, as it converts them */
    int64_t dram_stick;                      /* c->t.stick */
    int64_t top;
    int dma, ring; /* some DMA, some ring op was measured (top goes back to ki->dma_busy); ring: bd->kring's */
    double ring_busy; /* the core's ring unit's busy time (busy[ISA_U_RING]) */
    char *unmarked;  /* the core's row of bd's */
    int32_t *tokbal; /* bd's */
    int ntok;
    /* the last ring op's loop counts and run (0: none, every count is at
     * least 1) and its time: a ring exchange's sends are alike */
    uint64_t ring_n;
    unsigned ring_run;
    double ring_time;
} walk_figs;

/* bd_insn and measure_dma of ring op in on the walk's core. */
static inline __attribute__((always_inline)) void walk_ring(walk_figs *f, const isa_insn *in)
{
    uint64_t n; /* the loop counts at once (the same shape's as the last: its time) */
    _Static_assert(sizeof in->n == sizeof n, "four 16-bit loop counts");
    memcpy(&n, in->n, sizeof n);
    if (n != f->ring_n || in->run != f->ring_run) {
        f->ring_n = n;
        f->ring_run = in->run;
        f->ring_time = dma_time_of(f->issue, f->stick, f->ring_rate, insn_sticks(in));
    }
    f->ring_busy += f->ring_time;
    f->top = cc_max(f->top, f->ring_busy);
    f->ring = 1;
    bd_ring_mark(f->unmarked, f->tokbal, f->ntok, in->core, in->tok);
}

/* bd_insn and measure_dma of another DMA op in (dma.ld, dma.st,
 * dma.lx...) on core. */
static inline __attribute__((always_inline)) void walk_dma(walk_figs *f, bd_state *bd, be_kinfo *ki,
                                                           const isa_insn *in, int core, double *busy)
{
    f->dma = 1;
    bd_insn(bd, in, core);
    const isa_unit u = isa_class_unit(isa_op_class(in->op), in);
    const int64_t sticks = insn_sticks(in);
    busy[u] += dma_time_of(f->issue, f->stick, f->lx_rate, sticks);
    f->top = cc_max(f->top, busy[u]);
    if (in->op == ISA_OP_DMA_LD || in->op == ISA_OP_DMA_ST)
        *(in->op == ISA_OP_DMA_LD ? &ki->dram_rd : &ki->dram_wr) += sticks * f->dram_stick;
}

/* measure_one of instructions s[first..] into ki. */
static void measure(const be_ctx *c, be_kinfo *ki, const isa_stream *s, size_t first, double *busy)
{
    for (size_t j = first; j < s->n; j++)
        measure_one(c, ki, &s->insns[j], busy);
}

/* The figures lane l adds to: the kernel's own, or the worker's. */
static be_kinfo *lane_ki(const cg_lane *l)
{
    return l->ki ? l->ki : &state_of(l->w->c)->k[l->w->c->pos];
}

/* bd_collect and measure of a kernel's code on core, in one walk while
 * it is in cache (each walk read the code back from memory: a core's
 * kernel is up to some 14,000 instructions, 288 bytes each when measured); the rest from
 * the first sequencer control on (none as generated) as they run it.
 * Waits and sigs count into tok by their token number with no test (the
 * other ops add 0), added to the core's balances below ntok at the end:
 * a test and a register reloaded per instruction were half the walk. */
static void walk_kernel(cg_lane *l, int core, const isa_stream *s)
{
    const be_ctx *c = l->w->c;
    const chip_config *cfg = c->cfg;
    be_kinfo *ki = lane_ki(l);
    double *busy = l->w->busy[core];
    bd_state *bd = l->bd;
    walk_figs f = {cfg->dma_issue_cycles, cfg->stick_bytes, cfg->ring_bytes_per_cycle, cfg->lx_bytes_per_cycle,
                   c->t.stick, (int64_t)ki->dma_busy, 0, 0, busy[ISA_U_RING], bd->unmarked + (size_t)core * (size_t)bd->urow, bd->tokbal, bd->ntok,
                   0, 0, 0};
    int32_t tok[UINT8_MAX + 1] = {0}; /* (isa_insn's tok: a uint8_t) */
    const isa_insn *in = s->insns, *end = in + s->n;
    for (; in < end; in++) {
        const int w = op_walk[in->op];
        if (__builtin_expect(w <= W_SIG, 1)) {
            tok[in->tok] += w;
            continue;
        }
        if (w == W_SEQ)
            break;
        if (w == W_RING)
            walk_ring(&f, in);
        else
            walk_dma(&f, bd, ki, in, core, busy);
    }
    int32_t *bal = bd->tokbal + (size_t)core * (size_t)bd->ntok;
    for (int t = 0; t < bd->ntok; t++)
        bal[t] += tok[t];
    bd->kring |= f.ring;
    busy[ISA_U_RING] = f.ring_busy;
    if (f.dma || f.ring)
        ki->dma_busy = (double)f.top;
    const size_t j = (size_t)(in - s->insns);
    bd_collect(bd, s, j, core);
    measure(c, ki, s, j, busy);
}

/* The core's stream from the last walk on. */
static void cg_core_done(cg_lane *l, int core)
{
    cg_walk *w = l->w;
    const isa_stream *s = &w->c->prog->cores[core];
    bd_collect(l->bd, s, w->from[core], core);
    measure(w->c, lane_ki(l), s, w->from[core], w->busy[core]);
    if (w->roll)
        be_reroll_core(w->c, l->rr, core);
    w->from[core] = s->n;
}

static isa_stream *cg_begin(void *ctx, int core)
{
    (void)core;
    cg_pool *pl = ((cg_lane *)ctx)->pool;
    assert(pl->nidle > 0); /* a core opens one kernel at a time */
    isa_stream *s = pl->idle[--pl->nidle];
    s->n = 0;
    return s;
}

/* Kernel `name` on core complete in scratch s (NULL: emission failed). */
static void cg_end(void *ctx, int core, const char *name, isa_stream *s)
{
    cg_lane *l = ctx;
    if (name) {
        cg_core_done(l, core);
        walk_kernel(l, core, s);
        be_reroll_append(l->w->c, l->rr, core, name, s->insns, (long)s->n);
        l->emitted += (long)s->n;
        l->w->from[core] = l->w->c->prog->cores[core].n;
    }
    l->pool->idle[l->pool->nidle++] = s;
}

/* The arena pool pl's streams grow in (NULL: their own mappings). */
static void pool_arena(cg_pool *pl, int ncores, isa_arena *arena)
{
    for (int core = 0; core < ncores; core++)
        pl->s[core].arena = arena;
}

static void lane_init(cg_lane *l, cg_walk *w, bd_state *bd, be_kinfo *ki, struct be_rrlane *rr, cg_pool *pool)
{
    *l = (cg_lane){w, bd, ki, rr, pool, {cg_begin, cg_end, l}, 0};
}

/* A kernel's cores split between this thread (0) and the worker (1):
 * each takes its own side's cores in order, then the other side's that
 * are left (a thread that runs late, the host being busy, leaves its
 * cores to the other), each core once (next[side]: the next to take),
 * and stops at its first failure.  Thread t emits on view c[t] with its
 * copy arg[t] into lane[t] with error buffer err[t]. */
typedef struct {
    be_core_fn fn;
    be_ctx *c[2];
    void *arg[2];
    cg_lane *lane[2];
    char *err[2];
    int *list[2], len[2]; /* each side's cores, ascending */
    _Atomic int next[2];
    int rc[2], at[2];     /* at: the core that failed */
} par_split;

/* cc_compile_opts.par_min's default: on a 2-CPU VM waking the worker
 * and joining took some 50-200 us a kernel, more than the decode step's
 * products (at most 3,400 instructions after the first core, some 15 us
 * a core) gained; BERT-base's 32-core products (4,500-17,000) broke even
 * within the noise, so stay on one thread; the prefill layer's big ones
 * (29,000-440,000) gain (docs/compiler.md, "Two threads"). */
enum { PAR_MIN = 20000 };

/* Thread t emits the next core left on side: 0 when none is left. */
static int par_one(par_split *p, int t, int side)
{
    const int i = atomic_fetch_add(&p->next[side], 1);
    if (i >= p->len[side])
        return 0;
    const int core = p->list[side][i];
    cc_emit *e = &p->c[0]->em[core]; /* (the emitters: the same array in both views) */
    e->hooks = &p->lane[t]->hooks;
    e->err = p->err[t];
    p->rc[t] = p->fn(p->c[t], p->arg[t], core);
    p->at[t] = core;
    return 1;
}

static void par_side(par_split *p, int t)
{
    for (int k = 0; k < 2; k++)
        while (!p->rc[t] && par_one(p, t, k ? !t : t))
            ;
}

static void par_worker(void *arg) { par_side(arg, 1); }

/* The halves' lanes joined, in core order: kernel records, DRAM
 * accesses, and the worker's figures (sums of integers, maxima: exact in
 * any order). */
static void par_join(cg_walk *w)
{
    be_ctx *c = w->c;
    be_kinfo *ki = &state_of(c)->k[c->pos];
    be_reroll_lanes_join(c, w->half[0].rr, w->half[1].rr);
    bd_lanes_join(w->own.bd, &w->hbd[0], &w->hbd[1]);
    ki->dram_rd += w->wki.dram_rd;
    ki->dram_wr += w->wki.dram_wr;
    ki->loops |= w->wki.loops;
    ki->dma_busy = cc_max(ki->dma_busy, w->wki.dma_busy);
    w->wki = (be_kinfo){0};
}

/* The first error by core order, as the serial loop would have left it
 * (every core below the first that failed was emitted: each side's are
 * taken in order, and a thread stops only at a failure): the worker's
 * (its buffer began as c->err was; fail0: the be_error record before)
 * when its core came first. */
static int par_result(be_ctx *c, cg_walk *w, const par_split *p, int fail0)
{
    if (!p->rc[1] || (p->rc[0] && p->at[0] < p->at[1]))
        return p->rc[0];
    if (c->errlen)
        memcpy(c->err, w->werr, c->errlen);
    *(c->fail_kernel ? c->fail_kernel : &c->p->fail_kernel) = w->wfail != INT_MIN ? w->wfail : fail0;
    return p->rc[1];
}

/* Each side's cores (side, or the last n / 2 on the worker's). */
static void par_sides(par_split *p, int n, const void *arg, int (*side)(const void *arg, int core))
{
    for (int t = 0; t < 2; t++)
        p->list[t] = ir_xalloc((size_t)n * sizeof *p->list[t]);
    for (int core = 0; core < n; core++) {
        const int t = side ? side(arg, core) != 0 : core >= n - n / 2;
        p->list[t][p->len[t]++] = core;
    }
}

/* The worker's view of the back half (be_par_cores): c with its own
 * error buffer, be_error record and restickify memo. */
static void par_view(cg_walk *w, const be_ctx *c, be_state *vs)
{
    *vs = *state_of((be_ctx *)c); /* (be_ctx is the first of be_state, which state_of finds) */
    if (c->errlen)
        memcpy(w->werr, c->err, c->errlen);
    w->wfail = INT_MIN;
    vs->c.cgw = NULL; /* (its fn runs its cores itself) */
    vs->c.err = w->werr;
    vs->c.fail_kernel = &w->wfail;
    vs->c.rst = w->wrst;
    vs->c.tmemo = w->wtmemo;
}

static int par_start(cg_walk *w);

/* cc_compile_opts.par_min, else SPYRE_PAR_MIN (for measuring the
 * threshold on a host: tools/par-min-bench), else PAR_MIN. */
static long par_min(const ir_prog *p)
{
    const char *env = getenv("SPYRE_PAR_MIN");
    const long n = p->opts.par_min > 0 ? p->opts.par_min : env && *env ? strtol(env, NULL, 10) : 0;
    return n > 0 ? n : PAR_MIN;
}

/* Cores 1 to n - 1 of a kernel split between this thread and the worker
 * (core 0 emitted: the first of this thread's side), joined in core
 * order. */
static int par_rest(be_ctx *c, int n, be_core_fn fn, void *arg, size_t size, void (*view)(be_ctx *c, void *arg),
                    int (*side)(const void *arg, int core))
{
    cg_walk *w = c->cgw;
    char *err0 = c->em[0].err;
    be_state vs;
    par_view(w, c, &vs);
    void *warg = ir_xmalloc(size);
    memcpy(warg, arg, size);
    view(&vs.c, warg);
    const int fail0 = *(c->fail_kernel ? c->fail_kernel : &c->p->fail_kernel);
    par_split p = {.fn = fn, .c = {c, &vs.c}, .arg = {arg, warg}, .lane = {&w->half[0], &w->half[1]},
                   .err = {err0, w->werr}};
    par_sides(&p, n, arg, side);
    assert(p.list[0][0] == 0);
    p.next[0] = 1;
    be_worker_run(w->worker, par_worker, &p);
    par_side(&p, 0);
    be_worker_wait(w->worker);
    w->wrst = vs.c.rst;
    w->wtmemo = vs.c.tmemo;
    for (int core = 0; core < n; core++) {
        c->em[core].hooks = &w->own.hooks;
        c->em[core].err = err0;
    }
    par_join(w);
    free(warg);
    free(p.list[0]);
    free(p.list[1]);
    return par_result(c, w, &p, fail0);
}

int be_par_cores(be_ctx *c, int n, be_core_fn fn, void *arg, size_t size, void (*view)(be_ctx *c, void *arg),
                 int (*side)(const void *arg, int core))
{
    cg_walk *w = c->cgw;
    const long emitted = w ? w->own.emitted : 0;
    int rc = n ? fn(c, arg, 0) : 0;
    /* core 0 on this thread, in the pass's lane: what it emitted says
     * whether the rest pay for the worker's wake-up and the joins; and
     * only with a processor free for it (another job on the second of
     * two made the prefill layer 15% slower on two threads than on one:
     * the worker, sharing a processor, held its core while this thread
     * waited at the join), unless two threads were asked for */
    if (!rc && n > 1 && w && w->par && (w->own.emitted - emitted) * (n - 1) >= par_min(c->p) &&
        (w->threads == 2 || be_cpu_free()) && par_start(w))
        return par_rest(c, n, fn, arg, size, view, side);
    for (int core = 1; core < n && !rc; core++)
        rc = fn(c, arg, core);
    return rc;
}

/* Kernel pos's estimate by its kind's cost model as the report gives it:
 * with the DRAM's waits priced, which the choices leave out
 * (docs/compiler.md, "Estimates against the simulator"). */
static double model_est(be_ctx *c, int pos)
{
    c->waits = 1;
    const double e = be_kind_of(c, pos)->estimate(c, pos);
    c->waits = 0;
    return e;
}

/* The estimates of the ring exchanges before kernel pos (the LX plan's). */
static double xchg_est(const be_ctx *c, int pos)
{
    double e = 0;
    for (int b = 0; b < c->p->nbufs; b++) {
        const be_xreg *x = be_res_xreg(c, b, pos);
        e += x ? x->est : 0;
    }
    return e;
}

/* The most LX any core's code of the kernel just emitted took. */
static int64_t lx_top_of(const be_ctx *c)
{
    int64_t top = 0;
    for (int core = 0; core < c->cfg->cores; core++)
        top = cc_max(top, (int64_t)c->em[core].lx_top);
    return top;
}

/* Kernel i's code on every core, from first[core] on, after the fence
 * before it: the fence made a bar once the instructions show a
 * dependency across cores (bd_needs_bar), and the report's figures; each
 * core's code walked and rolled (cg_walk) up to its end. */
static void kernel_boundary(be_ctx *c, cg_walk *w, int i, const size_t *first)
{
    const int ncores = c->cfg->cores;
    bd_state *bd = w->own.bd;
    be_kinfo *ki = &state_of(c)->k[i];
    char why[160] = "";
    for (int core = 0; core < ncores; core++)
        cg_core_done(&w->own, core);
    ki->lx_max = cc_max(ki->lx_max, lx_top_of(c));
    bd_order(bd);
    int bar = bd_needs_bar(bd, why, sizeof why);
    if (!bar && c->work[i].bar_before) {
        snprintf(why, sizeof why, "placement: the kernel after it runs on other cores");
        bar = 1;
    }
    bd_record(bd, bar);
    for (int core = 0; core < ncores && i > 0 && bar; core++) {
        /* fence and bar have no operands: the placeholder becomes a bar in place */
        isa_insn *in = &c->em[core].s->insns[first[core] - 1];
        assert(in->op == ISA_OP_FENCE);
        in->op = ISA_OP_BAR;
    }
    ki->bar = i > 0 && bar;
    be_fmt(ki->boundary, sizeof ki->boundary, "%s", bar ? why : "");
    ki->est = cc_max(model_est(c, i), ki->dma_busy) + be_kind_of(c, i)->fill_drain;
    ki->xchg_est = xchg_est(c, i);
}

/* After kernel i, a streamed grid: the first chunks of the next streamed
 * grid past the kernel after it, loaded right behind i's last loads
 * (be_kind.prefetch_far), as long as every kernel between lets them pass. */
static int prefetch_far(be_ctx *c, int i, int64_t above)
{
    int r = 0;
    for (int j = i + 1; j < c->p->norder && r == 0 && c->drain_pos == i; j++) {
        be_em_place(c, j, 1);
        r = be_kind_of(c, j)->prefetch_far ? be_kind_of(c, j)->prefetch_far(c, j, i, above) : 1;
        be_em_place(c, j, 0);
    }
    return r < 0 ? -1 : 0;
}

/* Kernel i+1's loads ahead, on its cores, into i's streams. */
static int prefetch_next(be_ctx *c, int i)
{
    if (i + 1 >= c->p->norder || !be_kind_of(c, i + 1)->prefetch)
        return 0;
    const int64_t above = lx_top_of(c);
    be_em_place(c, i + 1, 1);
    const int rc = be_kind_of(c, i + 1)->prefetch(c, i + 1, above);
    be_em_place(c, i + 1, 0);
    return rc;
}

/* The codegen pass: every kernel into the program's streams, each tiled
 * into the LX below the tensors kept there (lxplan), a fence or a bar
 * between kernels. */
/* The walk of codegen's kernels (bd: their DRAM sticks), emitting each
 * aside and rolling it as it ends when roll is set (hooks: the
 * emitters'), else into the cores' streams for the reroll pass; with a
 * worker thread when rolling and the compile asks for two threads. */
static void cg_walk_begin(cg_walk *w, be_ctx *c, bd_state *bd, int roll)
{
    const int ncores = c->cfg->cores;
    *w = (cg_walk){.c = c,
                   .from = ir_xalloc((size_t)ncores * sizeof *w->from),
                   .busy = ir_xlines((size_t)ncores * sizeof *w->busy), /* a row a line: two threads write them */
                   .roll = roll};
    for (int i = 0; i < 2; i++) {
        w->pool[i] = (cg_pool){ir_xalloc((size_t)ncores * sizeof *w->pool[i].s),
                               ir_xalloc((size_t)ncores * sizeof *w->pool[i].idle), ncores};
        for (int core = 0; core < ncores; core++)
            w->pool[i].idle[core] = &w->pool[i].s[ncores - 1 - core];
    }
    /* the scratch streams on huge pages (the prefill layer's kernels took
     * 10 MB in 4 KB faults), in the program's arena as the rolling's
     * scratch (be_reroll.c rr_state) */
    pool_arena(&w->pool[0], ncores, roll ? c->prog->arena : NULL);
    lane_init(&w->own, w, bd, NULL, NULL, &w->pool[0]);
    for (int core = 0; core < ncores; core++)
        c->em[core].hooks = roll ? &w->own.hooks : NULL;
    c->cgw = w;
    w->threads = be_threads(c->p);
    w->par = roll && w->threads != 1;
}

/* The worker and the halves' lanes, made when a kernel first splits
 * (a compile whose kernels are all small makes none): 0 when there is
 * no second thread. */
static int par_start(cg_walk *w)
{
    if (w->worker)
        return 1;
    be_ctx *c = w->c;
    const int ncores = c->cfg->cores;
    if (!(w->worker = be_worker_start())) {
        w->par = 0;
        return 0;
    }
    for (int i = 0; i < 2; i++)
        bd_lane_begin(&w->hbd[i], w->own.bd);
    lane_init(&w->half[0], w, &w->hbd[0], NULL, be_reroll_lane(c, 0), &w->pool[0]);
    lane_init(&w->half[1], w, &w->hbd[1], &w->wki, be_reroll_lane(c, 1), &w->pool[1]);
    pool_arena(&w->pool[1], ncores, c->prog->arena);
    w->werr = ir_xalloc(c->errlen + 1);
    (void)isa_info(ISA_OP_HALT); /* (the ISA's tables: made once, before a second thread reads them) */
    return 1;
}

static void cg_walk_end(cg_walk *w)
{
    be_worker_stop(w->worker);
    w->c->cgw = NULL;
    for (int core = 0; core < w->c->cfg->cores; core++) {
        w->c->em[core].hooks = NULL; /* the update kernels after these roll in the reroll pass */
        isa_stream_free(&w->pool[0].s[core]);
        isa_stream_free(&w->pool[1].s[core]);
    }
    if (w->worker) {
        bd_lane_free(&w->hbd[0]);
        bd_lane_free(&w->hbd[1]);
        be_reroll_lane_free(w->half[0].rr);
        be_reroll_lane_free(w->half[1].rr);
        be_rst_memo_free(&w->wrst);
        be_tmemo_free(&w->wtmemo);
        free(w->werr);
    }
    free(w->from);
    free(w->busy);
    for (int i = 0; i < 2; i++) {
        free(w->pool[i].s);
        free(w->pool[i].idle);
    }
}

int be_codegen_pass(ir_prog *p)
{
    be_ctx *c = p->be;
    const int ncores = c->cfg->cores;
    c->em = ir_xalloc((size_t)ncores * sizeof *c->em);
    c->drain_pos = -1;
    c->pre.n = c->far.n = 0;
    for (int core = 0; core < ncores; core++)
        cc_emit_begin(&c->em[core], c->cfg, c->prog, core, p->err, p->errlen);
    be_place(c);
    bd_state bd;
    bd_begin(&bd, c, be_spancache_arena(c)); /* (codegen ends before the compile's cache goes) */
    size_t *first = ir_xalloc((size_t)ncores * sizeof *first);
    int rc = 0;
    /* each kernel rolled once emitted (the reroll pass's work: memory for one kernel unrolled, not all) */
    cg_walk w;
    cg_walk_begin(&w, c, &bd, !p->opts.no_reroll && !(p->opts.dump_after && !strcmp(p->opts.dump_after, "codegen")));
    for (int i = 0; i < p->norder && !rc; i++) {
        /* A fence before every kernel after the first: it orders a kernel
         * that reads this core's earlier results, and since each kernel
         * numbers its tokens from 0, without it a unit of the next kernel
         * could take a token signalled for a unit still running this one. */
        for (int core = 0; core < ncores && i > 0; core++)
            cc_emit_fence(&c->em[core]);
        for (int core = 0; core < ncores; core++) {
            first[core] = w.from[core] = c->em[core].s->n;
            memset(w.busy[core], 0, sizeof w.busy[core]);
            c->em[core].lx_top = 0;
            c->em[core].lx_limit = (uint64_t)c->lx_floor[i];
            c->em[core].tok_cap = be_heads_tok_cap(c, i);
        }
        c->pos = i;
        be_em_place(c, i, 1);
        be_xchg_emit(c, i);
        rc = be_kind_of(c, i)->emit(c, i);
        be_em_place(c, i, 0);
        for (int core = 0; core < ncores && !rc; core++)
            rc = cc_emit_failed(&c->em[core]) ? -1 : 0;
        if (!rc)
            rc = prefetch_next(c, i);
        if (!rc)
            rc = prefetch_far(c, i, lx_top_of(c));
        if (!rc)
            kernel_boundary(c, &w, i, first);
    }
    cg_walk_end(&w);
    free(first);
    bd_free(&bd);
    be_rows_spans_free(c); /* the row kernels' last plans are made */
    if (!rc)
        rc = be_update_emit(c);
    for (int core = 0; core < ncores && !rc; core++) {
        cc_emit_halt(&c->em[core]);
        rc = cc_emit_failed(&c->em[core]) ? -1 : 0;
    }
    return rc;
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
        free(c->res[b].hcore);
        free(c->res[b].hslot);
    }
    free(c->res);
    free(c->hbufs);
    free(c->lx_floor);
    free(c->lx_need);
    isa_program_free(c->prog);
    be_reroll_free(c);
    be_rst_memo_free(&c->rst);
    be_tmemo_free(&c->tmemo);
    be_rows_spans_free(c);
    be_rows_access_free(c);
    be_matmul_memos_free(c);
    free(st->k);
    free(st);
    p->be = NULL;
}

/* ---- dumps ---- */

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
    for (int j = 0; j < nw + nr; j++) { /* its results, and the inputs it loads first (be_res.loaded) */
        const int b = j < nw ? writes[j] : reads[j - nw];
        const be_res *r = &c->res[b];
        if (!r->on || r->from != pos || (j >= nw) != r->loaded)
            continue;
        fprintf(f, "%s %s for %s..%s (%" PRId64 " bytes per core at lx %" PRId64 "%s)", printed++ ? "," : "",
                p->bufs[b].name, p->kernels[p->order[pos]].name, p->kernels[p->order[r->to]].name, r->bytes, r->lx,
                r->loaded ? "; the rows it loads" : r->spilled ? "; spilled: also written to dram"
                : r->dram ? "; also written to dram" : "");
        (*kept)++;
        *spills += r->spilled;
    }
    fputs(printed ? "\n" : " none\n", f);
    for (int j = 0; j < nw; j++) { /* a hand-off by stick group (be_res.heads): a line only where there is one */
        const be_res *r = &c->res[writes[j]];
        if (r->heads && r->from == pos)
            fprintf(f, "  sent by stick group to its readers' cores: %s for %s..%s (%" PRId64
                       " bytes per core at lx %" PRId64 "%s)\n",
                    p->bufs[writes[j]].name, p->kernels[p->order[pos]].name, p->kernels[p->order[r->to]].name,
                    r->bytes, r->lx, r->dram ? "; also written to dram" : "");
    }
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
        const be_work *w = &c->work[i];
        const be_kinfo *ki = &st->k[i];
        be_kind_of(c, i)->print_report(c, i, ki->forced, f);
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
            const be_xreg *x = be_res_xreg(c, b, i);
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
        if (w->base)
            fprintf(f, "  placed: on cores %d..%d (free first, by the estimates; be_place.c)\n", w->base,
                    (w->base + w->cores - 1) % st->ncores);
        fprintf(f, "  estimate: %.0f cycles\n", ki->est);
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
    if (p->nupdates) /* be_update.c */
        fprintf(f, "state updates: %d by dma.scatter on %d core%s, after a bar that follows the last kernel\n",
                p->nupdates, p->nupdates < st->ncores ? p->nupdates : st->ncores,
                p->nupdates == 1 || st->ncores == 1 ? "" : "s");
    free(reads);
    free(writes);
}

double be_estimate(const ir_prog *p, const char *name)
{
    const be_state *st = p->be ? state_of(p->be) : NULL;
    for (int i = 0; st && i < p->norder; i++) {
        const char *k = p->kernels[p->order[i]].name;
        const size_t n = strlen(k);
        if (!strcmp(name, k))
            return st->k[i].est;
        if (!strncmp(name, k, n) && !strcmp(name + n, ".xchg") && st->k[i].xchg_est > 0)
            return st->k[i].xchg_est;
    }
    return -1;
}

double be_estimate_total(const ir_prog *p)
{
    const be_state *st = p->be ? state_of(p->be) : NULL;
    double t = 0;
    for (int i = 0; st && i < p->norder; i++)
        t += st->k[i].est + (st->k[i].xchg_est > 0 ? st->k[i].xchg_est : 0);
    return t;
}

/* be_estimate_total's sum, in its order, of each kernel's model_est, no
 * more than kernel_boundary's estimate (fl(a + b) grows with a and b). */
double be_estimate_floor(ir_prog *p)
{
    be_ctx *c = p->be;
    double t = 0;
    for (int i = 0; c && i < p->norder; i++) {
        const double x = xchg_est(c, i);
        t += model_est(c, i) + be_kind_of(c, i)->fill_drain + (x > 0 ? x : 0);
    }
    return t;
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
    for (int i = 0; i < p->norder; i++)
        be_kind_of(c, i)->print_work(c, i, f);
    if (!strcmp(pass, "codegen") && c->prog)
        for (int core = 0; core < c->prog->ncores; core++)
            fprintf(f, "core %d: %zu instructions\n", core, c->prog->cores[core].n);
}
