/* ktir reductions (linalg.reduce over one dimension on the SFP) and the
 * driver: the function, its grid and arguments, one compile per core. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cc.h"
#include "internal.h"

static const ml_item *group_value(const ml_op *op, const char *key)
{
    const ml_item *g = ml_op_keyword(op, key);
    if (!g || g->kind != ML_I_GROUP) return NULL;
    for (int i = 0; i < g->n; i++)
        if (g->items[i].kind == ML_I_VALUE) return &g->items[i];
    return NULL;
}

/* The SSA value names among an op's top-level items (at most 3). */
static int value_names(const ml_op *op, const char **v)
{
    int n = 0;
    for (int i = 0; i < op->n && n < 3; i++)
        if (op->items[i].kind == ML_I_VALUE) v[n++] = op->items[i].s;
    return n;
}

/* `%c = arith.cmpf ogt|oge, %x, %y` then `arith.select %c, %x, %y`: a max. */
static int is_select_max(const ml_block *b)
{
    if (b->nops < 2 || strcmp(b->ops[0].name, "arith.cmpf") || strcmp(b->ops[1].name, "arith.select")) return 0;
    const ml_op *cmp = &b->ops[0], *sel = &b->ops[1];
    const char *cv[3], *sv[3];
    if (cmp->n < 1 || cmp->items[0].kind != ML_I_WORD || cmp->nres != 1) return 0;
    const char *p = cmp->items[0].s;
    if (strcmp(p, "ogt") && strcmp(p, "oge") && strcmp(p, "ugt") && strcmp(p, "uge")) return 0;
    return value_names(cmp, cv) == 2 && value_names(sel, sv) == 3 && !strcmp(sv[0], cmp->res[0]) &&
           !strcmp(sv[1], cv[0]) && !strcmp(sv[2], cv[1]);
}

/* The combining op of a linalg.reduce: `{ arith.addf }` or a region whose
 * first op is it ("arith.maximumf" for a cmpf + select max). */
static const char *combiner(const ml_op *op)
{
    int from = 0;
    const ml_region *rg = ml_op_region(op, &from);
    if (!rg || rg->nblocks < 1 || rg->blocks[0].nops < 1) return NULL;
    return is_select_max(&rg->blocks[0]) ? "arith.maximumf" : rg->blocks[0].ops[0].name;
}

int kt_reduce(kt_ctx *c, const ml_op *op, kv *r);
int kt_reduce(kt_ctx *c, const ml_op *op, kv *r)
{
    if (strcmp(op->name, "linalg.reduce")) return 0;
    const char *comb = combiner(op);
    int isa_op = !comb ? -1 : !strcmp(comb, "arith.addf") ? ISA_OP_SFP_RSUM
                 : (!strcmp(comb, "arith.maximumf") || !strcmp(comb, "arith.maxnumf")) ? ISA_OP_SFP_RMAX : -1;
    const ml_item *in = group_value(op, "ins"), *out = group_value(op, "outs"), *dims = ml_op_keyword(op, "dimensions");
    if (isa_op < 0 || !in || !out || !dims || dims->kind != ML_I_LIST)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: this linalg.reduce (sum or max over one dimension)");
    kv a = *kt_lookup(c, in), init = *kt_lookup(c, out);
    kt_need_layout(c, op, &a);
    int nd = 0, dim = -1;
    for (int i = 0; i < dims->n; i++)
        if (dims->items[i].kind == ML_I_ATTR && dims->items[i].attr->kind == ML_A_INT) dim = (int)dims->items[i].attr->i, nd++;
    if (a.kind != KV_TENSOR || a.rank < 1 || a.rank > 2 || nd != 1 || dim < 0 || dim >= a.rank)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a reduction of rank %d over %d dimensions", a.rank, nd);
    kt_materialize(c, op, &a);
    int64_t sb = c->cfg->stick_bytes, rows = a.rank == 2 ? a.shape[0] : 1, cols = a.shape[a.rank - 1];
    int64_t eb = kt_ebytes(&a), lanes = sb / eb, groups = (cols + lanes - 1) / lanes;
    *r = (kv){.kind = KV_TENSOR, .rank = 1, .shape = {dim == a.rank - 1 ? rows : cols}, .f32 = a.f32};
    r->lx = kt_lx_alloc(c, op, (uint64_t)kt_sticks(r) * (uint64_t)sb);
    isa_insn ins;
    isa_insn_init(&ins, isa_op);
    isa_set_off(&ins.a, (int64_t)a.lx), isa_set_off(&ins.d, (int64_t)r->lx), isa_set(&ins, t, kt_dtype(&a));
    if (dim == a.rank - 1) { /* along the sticks and their lanes: one element per row */
        ins.flags = ISA_F_LANES, isa_set(&ins, n[0], groups), isa_set(&ins, as[0], rows * sb),
            isa_set(&ins, n[1], rows), isa_set(&ins, as[1], sb);
        isa_set(&ins, ds[1], eb), isa_set(&ins, vl, cols % lanes ? cols : 0);
    } else { /* across the rows of each stick group, lane by lane */
        isa_set(&ins, n[0], rows), isa_set(&ins, as[0], sb), isa_set(&ins, n[1], groups),
            isa_set(&ins, as[1], rows * sb), isa_set(&ins, ds[1], sb);
    }
    kt_emit(c, &ins);
    c->simd_elems += (double)(rows * cols);
    /* The init operand joins the result unless it is the combiner's identity. */
    int identity = init.kind == KV_TENSOR && init.splat == 1 &&
                   (isa_op == ISA_OP_SFP_RSUM ? init.f == 0.0 : (isinf(init.f) && init.f < 0));
    if (!identity) {
        kv res = *r;
        isa_insn j;
        isa_insn_init(&j, isa_op == ISA_OP_SFP_RSUM ? ISA_OP_SFP_ADD : ISA_OP_SFP_MAX);
        if (init.splat == 1) j.bm = ISA_BM_IMM, j.imm = (float)init.f;
        else if (init.splat == 2) j.bm = ISA_BM_ELEM, isa_set_off(&j.b, (int64_t)init.lx);
        else isa_set_off(&j.b, (int64_t)init.lx), isa_set(&j, bs[0], sb);
        isa_set_off(&j.d, (int64_t)res.lx), isa_set_off(&j.a, (int64_t)res.lx), isa_set(&j, n[0], kt_sticks(&res)), isa_set(&j, ds[0], sb),
            isa_set(&j, as[0], sb), isa_set(&j, t, kt_dtype(&res));
        kt_emit(c, &j);
    }
    return 1;
}

static const ml_op *find_func(const ml_region *r, int depth)
{
    for (int b = 0; r && b < r->nblocks && depth < 4; b++)
        for (int i = 0; i < r->blocks[b].nops; i++) {
            const ml_op *op = &r->blocks[b].ops[i];
            if (!strcmp(op->name, "func.func")) return op;
            int from = 0;
            const ml_op *f = find_func(ml_op_region(op, &from), depth + 1);
            if (f) return f;
        }
    return NULL;
}

/* Does an op of the region ask for its compute tile's id? */
static int uses_tile_id(const ml_region *r)
{
    for (int b = 0; r && b < r->nblocks; b++)
        for (int i = 0; i < r->blocks[b].nops; i++) {
            const ml_op *op = &r->blocks[b].ops[i];
            if (!strcmp(op->name, "ktdp.get_compute_tile_id")) return 1;
            int from = 0;
            for (const ml_region *in; (in = ml_op_region(op, &from));)
                if (uses_tile_id(in)) return 1;
        }
    return 0;
}

static void read_grid(kt_ctx *c, const ml_op *fn)
{
    const ml_attr *g = ml_op_attr(c->m, fn, "grid");
    /* Without a grid, every core of the chip is a compute tile (RFC 0682's
     * examples: "the total number of compute tiles being 32 matching with
     * number of cores"); but a body that never asks for its tile id does
     * the same on every tile, so it runs once, on core 0, as ktir-cpu runs
     * a function without a grid (32 copies would race on their outputs). */
    int from = 0, all = uses_tile_id(ml_op_region(fn, &from));
    c->ngrid = 1, c->grid[0] = all ? c->cfg->cores : 1, c->ncores = (int)c->grid[0];
    if (!g) return;
    if (g->kind != ML_A_ARRAY || g->n < 1 || g->n > 3) kt_fail(c, KT_EXIT_REFUSED, fn->line, fn->col, "grid must be [X] to [X, Y, Z]");
    c->ngrid = g->n;
    int64_t n = 1;
    for (int i = 0; i < g->n; i++) {
        if (g->items[i]->kind != ML_A_INT || g->items[i]->i < 1 || g->items[i]->i > 4096)
            kt_fail(c, KT_EXIT_REFUSED, fn->line, fn->col, "grid sizes must be integers in [1, 4096]");
        c->grid[i] = g->items[i]->i, n *= g->items[i]->i;
    }
    if (n > c->cfg->cores)
        kt_fail(c, KT_EXIT_CHIP, fn->line, fn->col, "a grid of %lld compute tiles on a chip of %d cores", (long long)n, c->cfg->cores);
    c->ncores = (int)n;
}

/* Bind the function's arguments: --arg values, else an HBM pointer named after the argument. */
static void bind_args(kt_ctx *c, const ml_op *fn)
{
    const ml_item *sig = NULL;
    for (int i = 0; i < fn->n && !sig; i++)
        if (fn->items[i].kind == ML_I_GROUP) sig = &fn->items[i];
    for (int i = 0; sig && i < sig->n; i++) {
        const ml_item *it = &sig->items[i];
        if (it->kind != ML_I_VALUE) continue;
        kv v = {.kind = KV_PTR, .key = it->s};
        for (int k = 0; k < c->nargs; k++)
            if (!strcmp(c->args[k].name, it->s)) {
                double x = c->args[k].value;
                v = x == floor(x) && fabs(x) < 9e15 ? (kv){.kind = KV_INT, .i = (int64_t)x} : (kv){.kind = KV_FLOAT, .f = x};
            }
        kt_bind(c, it->s, &v);
    }
    for (int k = 0; k < c->nargs; k++) {
        int found = 0;
        for (int i = 0; sig && i < sig->n; i++)
            found |= sig->items[i].kind == ML_I_VALUE && !strcmp(sig->items[i].s, c->args[k].name);
        if (!found) kt_fail(c, KT_EXIT_REFUSED, fn->line, fn->col, "--arg %s: the function has no argument %s", c->args[k].name, c->args[k].name);
    }
}

static void compile_core(kt_ctx *c, const ml_op *fn)
{
    c->nenv = 0, c->lx_top = 0, c->exchanges = 0, c->land_waited = 0, c->ndviews = 0, c->ngathers = 0, c->last_unit = -1, c->hbm_bytes = c->simd_elems = c->trans_elems = c->mm_flops = c->ring_bytes = 0;
    bind_args(c, fn);
    int from = 0;
    const ml_region *body = ml_op_region(fn, &from);
    if (!body || body->nblocks != 1) kt_fail(c, KT_EXIT_REFUSED, fn->line, fn->col, "the function needs a body of one block");
    const ml_op *y = NULL;
    kt_lx_send(c);
    kt_compile_block(c, &body->blocks[0], &y);
    kt_stage_flush(c, fn);
    isa_insn h;
    isa_insn_init(&h, ISA_OP_HALT);
    isa_stream_push(&c->prog->cores[c->core], &h);
    /* ktir-cpu's defaults: 1 TB/s of HBM shared by the grid's cores at 1 GHz,
     * one stick of 64 elements per cycle, transcendental ops 4x, 2*64^3
     * matmul flops per cycle, 4000 ring bytes per cycle. */
    double t = c->hbm_bytes / (1000.0 / c->ncores) + c->simd_elems / 64 + c->trans_elems / 64 * 4 + c->mm_flops / 524288 +
               c->ring_bytes / 4000;
    if (t > c->roofline) c->roofline = t;
}

/* The program's tensors from the measuring pass: one 1-D f16 tensor per
 * pointer, as long as its views reach, one after another in DRAM. */
static void add_tensors(kt_ctx *c)
{
    for (int i = 0; i < c->ntensors; i++) {
        kt_tensor *t = &c->tensors[i];
        int64_t shape[1] = {t->extent > 0 ? t->extent : 1};
        if (t->lx_core >= 0) { /* a ct_local view's memory: an input in its core's LX (lxview.c) */
            t->index = isa_program_add_lx_tensor(c->prog, t->key, t->f32 ? ISA_HT_F32 : ISA_HT_F16,
                                                 t->f32 ? ISA_T_F32 : ISA_T_DL16, 1, shape, t->lx_core, t->lx_off);
            continue;
        }
        t->index = isa_program_add_tensor(c->prog, t->key, t->stored ? ISA_ROLE_OUTPUT : ISA_ROLE_INPUT,
                                          t->f32 ? ISA_HT_F32 : ISA_HT_F16, t->f32 ? ISA_T_F32 : ISA_T_DL16, 1, shape,
                                          c->dram_top);
        c->dram_top += c->prog->tensors[t->index].bytes;
    }
    c->prog->dram_bytes = c->dram_top;
}

static isa_program *new_program(const chip_config *cfg)
{
    isa_program *p = isa_program_new(cfg->cores);
    if (!p) abort();
    snprintf(p->config, sizeof p->config, "%s", cfg->name);
    p->lx_bytes = cfg->lx_bytes, p->stick_bytes = cfg->stick_bytes;
    return p;
}

/* Both passes over every core: measure the HBM tensors, then the program. */
static void compile_all(kt_ctx *c, const ml_op *fn)
{
    read_grid(c, fn);
    for (c->final = 0; c->final < 2; c->final++) {
        if (c->final) {
            isa_program_free(c->prog);
            c->prog = new_program(c->cfg);
            add_tensors(c);
            kt_stage_plan(c);
            kt_lx_plan(c);
        }
        c->roofline = 0;
        for (c->core = 0; c->core < c->ncores; c->core++) compile_core(c, fn);
    }
    /* The last grid core's: every tile runs the same exchanges, and the bar of the staged sticks. */
    int bars = c->exchanges + (c->nstaged > 0);
    for (c->core = c->ncores; c->core < c->cfg->cores; c->core++) {
        for (int i = 0; i < bars; i++) kt_push(c, ISA_OP_BAR);
        kt_push(c, ISA_OP_HALT);
    }
}

isa_program *kt_compile_file(const char *path, const kt_arg *args, int nargs, const chip_config *cfg, char *err,
                             size_t errlen, int *code, kt_report *rep)
{
    *code = KT_EXIT_REFUSED;
    ml_module *m = ml_parse_file(path, err, errlen);
    if (!m) return NULL;
    kt_ctx *c = calloc(1, sizeof *c);
    if (!c) abort();
    c->m = m, c->cfg = cfg, c->args = args, c->nargs = nargs, c->err = err, c->errlen = errlen;
    c->prog = new_program(cfg);
    isa_program *res = NULL;
    if (setjmp(c->fail) == 0) {
        const ml_op *fn = find_func(&m->top, 0);
        if (!fn) kt_fail(c, KT_EXIT_REFUSED, 1, 1, "no func.func in the file");
        compile_all(c, fn);
        cc_roll_streams(c->prog); /* scf.for was unrolled: counted loops again */
        res = c->prog;
        if (rep) {
            rep->roofline_cycles = c->roofline, rep->ninout = 0;
            snprintf(rep->note, sizeof rep->note, "%s", c->note);
            for (int i = 0; i < c->ntensors && rep->ninout < KT_MAX_INOUT; i++)
                if (c->tensors[i].loaded && c->tensors[i].stored)
                    snprintf(rep->inout[rep->ninout++], sizeof rep->inout[0], "%s", c->tensors[i].key);
        }
    } else {
        *code = c->code;
        isa_program_free(c->prog);
    }
    free(c->env);
    free(c->notes);
    free(c->loads);
    for (int i = 0; i < c->nplans; i++) free(c->plans[i].wait), free(c->plans[i].chain), free(c->plans[i].mm_only);
    free(c->plans);
    free(c->staged);
    free(c->ipool);
    free(c->remotes);
    free(c->fulls);
    free(c);
    ml_free(m);
    return res;
}

int kt_is_ktir_path(const char *path)
{
    size_t n = strlen(path);
    return (n > 5 && !strcmp(path + n - 5, ".mlir")) || (n > 5 && !strcmp(path + n - 5, ".ktir"));
}
