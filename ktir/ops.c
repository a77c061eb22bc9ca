/* ktir compute ops: arith/math elementwise ops and their linalg named forms
 * on the SFP (one table of each), compile-time index and scalar arithmetic,
 * tensor.empty/splat/extract, linalg.fill and linalg.reduce. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"

int kt_ktdp_op(kt_ctx *c, const ml_op *op, kv *r);

/* Binary float ops: the SFP instruction and the value at compile time. */
typedef enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN } kt_bop;
static const struct {
    const char *name;
    int isa_op;
    kt_bop b;
} binops[] = {
    {"arith.addf", ISA_OP_SFP_ADD, B_ADD},     {"linalg.add", ISA_OP_SFP_ADD, B_ADD},
    {"arith.subf", ISA_OP_SFP_SUB, B_SUB},     {"linalg.sub", ISA_OP_SFP_SUB, B_SUB},
    {"arith.mulf", ISA_OP_SFP_MUL, B_MUL},     {"linalg.mul", ISA_OP_SFP_MUL, B_MUL},
    {"arith.divf", ISA_OP_SFP_DIV, B_DIV},     {"linalg.div", ISA_OP_SFP_DIV, B_DIV},
    {"arith.maximumf", ISA_OP_SFP_MAX, B_MAX}, {"arith.maxnumf", ISA_OP_SFP_MAX, B_MAX},
    {"linalg.max", ISA_OP_SFP_MAX, B_MAX},     {"arith.minimumf", ISA_OP_SFP_MIN, B_MIN},
    {"arith.minnumf", ISA_OP_SFP_MIN, B_MIN},  {"linalg.min", ISA_OP_SFP_MIN, B_MIN},
};
/* Unary float ops. */
static const struct {
    const char *name;
    int isa_op;
    double (*f)(double);
} unops[] = {
    {"math.exp", ISA_OP_SFP_EXP, exp},     {"linalg.exp", ISA_OP_SFP_EXP, exp}, {"math.log", ISA_OP_SFP_LOG, log},
    {"math.sqrt", ISA_OP_SFP_SQRT, sqrt},  {"math.tanh", ISA_OP_SFP_TANH, tanh}, {"math.absf", ISA_OP_SFP_ABS, fabs},
    {"math.erf", ISA_OP_SFP_ERF, erf},     {"math.sin", ISA_OP_SFP_SIN, sin},   {"math.cos", ISA_OP_SFP_COS, cos},
};
/* Compile-time index arithmetic. */
typedef enum { I_ADD, I_SUB, I_MUL, I_DIVU, I_DIVS, I_REM, I_MAX, I_MIN, I_CEILDIV, I_FLOORDIV } kt_iop;
static const struct {
    const char *name;
    kt_iop i;
} intops[] = {
    {"arith.addi", I_ADD},        {"arith.subi", I_SUB},         {"arith.muli", I_MUL},
    {"arith.divui", I_DIVU},      {"arith.divsi", I_DIVS},       {"arith.remui", I_REM},
    {"arith.remsi", I_REM},       {"arith.maxsi", I_MAX},        {"arith.minsi", I_MIN},
    {"arith.maxui", I_MAX},       {"arith.minui", I_MIN},        {"arith.ceildivsi", I_CEILDIV},
    {"arith.ceildivui", I_CEILDIV}, {"arith.floordivsi", I_FLOORDIV},
};

/* Elements of a tensor value (1 for rank 0). */
static int64_t kt_elems(const kv *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->shape[d];
    return n;
}

static double bop_eval(kt_bop b, double x, double y)
{
    switch (b) {
    case B_ADD: return x + y;
    case B_SUB: return x - y;
    case B_MUL: return x * y;
    case B_DIV: return x / y;
    case B_MAX: return x > y ? x : y;
    default: return x < y ? x : y;
    }
}

/* The SSA values among the op's top-level items (or inside its `ins(...)`). */
static int operands(const ml_op *op, const ml_item **out, int max)
{
    const ml_item *ins = NULL;
    for (int i = 0; i + 1 < op->n; i++)
        if (op->items[i].kind == ML_I_WORD && !strcmp(op->items[i].s, "ins") && op->items[i + 1].kind == ML_I_GROUP)
            ins = &op->items[i + 1];
    const ml_item *src = ins ? ins->items : op->items;
    int n = 0, count = ins ? ins->n : op->n;
    for (int i = 0; i < count && n < max; i++) {
        if (src[i].kind == ML_I_PUNCT && src[i].s[0] == ':') break;
        if (src[i].kind == ML_I_VALUE) out[n++] = &src[i];
    }
    return n;
}

static int64_t int_eval(kt_ctx *c, const ml_op *op, kt_iop k, int64_t a, int64_t b)
{
    int64_t r = 0;
    if ((k == I_DIVU || k == I_DIVS || k == I_REM || k == I_CEILDIV || k == I_FLOORDIV) && b == 0)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "division by zero in index arithmetic");
    switch (k) {
    case I_ADD: if (__builtin_add_overflow(a, b, &r)) goto ovf; return r;
    case I_SUB: if (__builtin_sub_overflow(a, b, &r)) goto ovf; return r;
    case I_MUL: if (__builtin_mul_overflow(a, b, &r)) goto ovf; return r;
    case I_MAX: return a > b ? a : b;
    case I_MIN: return a < b ? a : b;
    default: break;
    }
    if (a == INT64_MIN && b == -1) goto ovf;
    if (k == I_REM) return a % b;
    if (k == I_DIVU || k == I_DIVS) return a / b;
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) == (b < 0)) && k == I_CEILDIV) q++;
    if (a % b != 0 && ((a < 0) != (b < 0)) && k == I_FLOORDIV) q--;
    return q;
ovf:
    kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "index arithmetic overflows");
}

static void need_same_shape(kt_ctx *c, const ml_op *op, const kv *a, const kv *b)
{
    int same = a->rank == b->rank && a->f32 == b->f32 && (b->splat || a->splat || a->moved == b->moved);
    for (int d = 0; same && d < a->rank; d++) same = a->shape[d] == b->shape[d];
    for (int d = 0; same && a->moved && !b->splat && !a->splat && d < a->prank; d++) same = a->pshape[d] == b->pshape[d];
    if (!same) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "operands of different shapes");
}

/* An elementwise op on the SFP: d := a op b over every stick of the result. */
static void sfp_binary(kt_ctx *c, const ml_op *op, int isa_op, kv a, const kv *b, kv *r)
{
    need_same_shape(c, op, &a, b);
    kt_materialize(c, op, &a);
    *r = a, r->splat = 0, r->from_empty = 0;
    int64_t n = kt_sticks(&a), sb = c->cfg->stick_bytes;
    c->simd_elems += (double)(kt_elems(&a));
    r->lx = kt_lx_alloc(c, op, (uint64_t)(n * sb));
    isa_insn in;
    isa_insn_init(&in, isa_op);
    isa_set_off(&in.d, (int64_t)r->lx), isa_set_off(&in.a, (int64_t)a.lx), isa_set(&in, n[0], n), isa_set(&in, ds[0], sb),
        isa_set(&in, as[0], sb), isa_set(&in, t, kt_dtype(&a));
    if (b->splat == 1) in.bm = ISA_BM_IMM, in.imm = (float)b->f;
    else if (b->splat == 2) in.bm = ISA_BM_ELEM, isa_set_off(&in.b, (int64_t)b->lx);
    else isa_set_off(&in.b, (int64_t)b->lx), isa_set(&in, bs[0], sb);
    kt_emit(c, &in);
}

/* A scalar computed on the chip, seen as a splat tensor of one element. */
static kv as_tensor(const kv *s)
{
    kv t = {.kind = KV_TENSOR, .rank = 0, .f32 = s->f32};
    if (s->kind == KV_FLOAT) t.splat = 1, t.f = s->f;
    else t.splat = 2, t.lx = s->lx;
    return t;
}

static int binary(kt_ctx *c, const ml_op *op, kv *r)
{
    for (size_t k = 0; k < sizeof binops / sizeof *binops; k++) {
        if (strcmp(op->name, binops[k].name)) continue;
        const ml_item *o[2];
        if (operands(op, o, 2) != 2) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "%s needs two operands", op->name);
        kv a = *kt_lookup(c, o[0]), b = *kt_lookup(c, o[1]);
        if (a.kind == KV_FLOAT && b.kind == KV_FLOAT) {
            *r = (kv){.kind = KV_FLOAT, .f = bop_eval(binops[k].b, a.f, b.f)};
        } else if (a.kind == KV_TENSOR && b.kind == KV_TENSOR) {
            if (a.splat == 1 && b.splat == 1) *r = a, r->f = bop_eval(binops[k].b, a.f, b.f);
            else sfp_binary(c, op, binops[k].isa_op, a, &b, r);
        } else if (c->in_generic && (a.kind == KV_TENSOR) != (b.kind == KV_TENSOR) &&
                   (a.kind == KV_FLOAT || a.kind == KV_ELEM || b.kind == KV_FLOAT || b.kind == KV_ELEM)) {
            /* a scalar in a linalg.generic's body: the same value at every element */
            kv *s = a.kind == KV_TENSOR ? &b : &a, t = a.kind == KV_TENSOR ? a : b, st = as_tensor(s);
            st.rank = t.rank, st.f32 = t.f32, st.moved = 0, memcpy(st.shape, t.shape, sizeof st.shape);
            *s = st;
            sfp_binary(c, op, binops[k].isa_op, a, &b, r);
        } else if ((a.kind == KV_FLOAT || a.kind == KV_ELEM) && (b.kind == KV_FLOAT || b.kind == KV_ELEM)) {
            kv ta = as_tensor(&a), tb = as_tensor(&b);
            sfp_binary(c, op, binops[k].isa_op, ta, &tb, r);
            r->kind = KV_ELEM;
        } else {
            kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "%s of a tensor and a scalar", op->name);
        }
        return 1;
    }
    return 0;
}

static int unary(kt_ctx *c, const ml_op *op, kv *r)
{
    int isa_op = -1;
    double (*f)(double) = NULL;
    for (size_t k = 0; k < sizeof unops / sizeof *unops; k++)
        if (!strcmp(op->name, unops[k].name)) isa_op = unops[k].isa_op, f = unops[k].f;
    if (!strcmp(op->name, "arith.negf")) isa_op = ISA_OP_SFP_NEG;
    if (!strcmp(op->name, "math.rsqrt")) isa_op = ISA_OP_SFP_RSQRT;
    if (isa_op < 0) return 0;
    const ml_item *o[1];
    if (operands(op, o, 1) != 1) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "%s needs an operand", op->name);
    kv a = *kt_lookup(c, o[0]);
    if (a.kind == KV_FLOAT) {
        *r = a, r->f = isa_op == ISA_OP_SFP_NEG ? -a.f : isa_op == ISA_OP_SFP_RSQRT ? 1 / sqrt(a.f) : f(a.f);
        return 1;
    }
    if (!strncmp(op->name, "math.", 5)) c->trans_elems += (double)kt_elems(&a);
    else c->simd_elems += (double)kt_elems(&a);
    kt_sfp_unary(c, op, isa_op, a, r);
    return 1;
}

void kt_sfp_unary(kt_ctx *c, const ml_op *op, int isa_op, kv a, kv *r)
{
    int scalar = a.kind == KV_ELEM;
    if (scalar) a = as_tensor(&a);
    if (a.kind != KV_TENSOR) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "%s of a non-float value", op->name);
    kt_materialize(c, op, &a);
    *r = a, r->from_empty = 0;
    int64_t n = kt_sticks(&a), sb = c->cfg->stick_bytes;
    r->lx = kt_lx_alloc(c, op, (uint64_t)(n * sb));
    isa_insn in;
    isa_insn_init(&in, isa_op);
    isa_set_off(&in.d, (int64_t)r->lx), isa_set_off(&in.a, (int64_t)a.lx), isa_set(&in, n[0], n), isa_set(&in, ds[0], sb),
        isa_set(&in, as[0], sb), isa_set(&in, t, kt_dtype(&a));
    kt_emit(c, &in);
    if (scalar) r->kind = KV_ELEM;
}

/* 1 for f32 elements, 0 for f16; others refused. */
static int elem_f32(kt_ctx *c, const ml_op *op, const ml_type *e)
{
    if (e && e->kind == ML_T_FLOAT && (!strcmp(e->name, "f16") || !strcmp(e->name, "f32"))) return e->name[1] == '3';
    kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: tensors of elements other than f16 and f32");
}

static void op_constant(kt_ctx *c, const ml_op *op, kv *r)
{
    const ml_attr *a = op->n ? op->items[0].attr : NULL;
    const ml_type *ty = ml_op_last_type(op);
    if (op->n && op->items[0].kind == ML_I_ATTR && a->type) ty = a->type;
    if (!a || !ty) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `arith.constant VALUE : TYPE`");
    if (a->kind == ML_A_DENSE && (ty->kind == ML_T_TENSOR) && a->dense && (a->dense->kind == ML_A_FLOAT || a->dense->kind == ML_A_INT)) {
        *r = (kv){.kind = KV_TENSOR, .splat = 1, .f = a->dense->f, .rank = ty->rank, .f32 = elem_f32(c, op, ty->elem)};
        memcpy(r->shape, ty->shape, sizeof r->shape);
    } else if (ty->kind == ML_T_FLOAT && a->kind == ML_A_INT && ty->bits == 16 && !strcmp(ty->name, "f16")) {
        *r = (kv){.kind = KV_FLOAT, .f = isa_f16_to_f32((uint16_t)a->i)}; /* an integer literal is the bit pattern */
    } else if (ty->kind == ML_T_FLOAT && a->kind == ML_A_FLOAT) {
        *r = (kv){.kind = KV_FLOAT, .f = a->f};
    } else if ((ty->kind == ML_T_INDEX || ty->kind == ML_T_INT) && (a->kind == ML_A_INT || a->kind == ML_A_BOOL)) {
        *r = (kv){.kind = KV_INT, .i = a->i};
    } else {
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: this arith.constant");
    }
}

static void typed_tensor(kt_ctx *c, const ml_op *op, kv *r)
{
    const ml_type *ty = ml_op_last_type(op);
    if (!ty || ty->kind != ML_T_TENSOR || ml_type_elems(ty) <= 0)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected a static tensor type");
    r->kind = KV_TENSOR, r->rank = ty->rank, r->f32 = elem_f32(c, op, ty->elem);
    memcpy(r->shape, ty->shape, sizeof r->shape);
}

/* tensor.splat %s, linalg.fill ins(%s) outs(%t), tensor.empty, tensor.extract %t[%i]. */
static int tensor_op(kt_ctx *c, const ml_op *op, kv *r)
{
    const ml_item *o[2];
    if (!strcmp(op->name, "tensor.empty")) {
        typed_tensor(c, op, r);
        r->from_empty = 1;
        r->lx = kt_lx_alloc(c, op, (uint64_t)kt_sticks(r) * c->cfg->stick_bytes);
    } else if (!strcmp(op->name, "tensor.splat") || !strcmp(op->name, "linalg.fill")) {
        if (operands(op, o, 1) != 1) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "%s needs a value", op->name);
        const kv *s = kt_lookup(c, o[0]);
        typed_tensor(c, op, r);
        if (s->kind == KV_FLOAT) r->splat = 1, r->f = s->f;
        else if (s->kind == KV_ELEM) r->splat = 2, r->lx = s->lx;
        else kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "%s of a non-float value", op->name);
    } else if (!strcmp(op->name, "tensor.extract")) {
        const kv *t = kt_operand(c, op, 0);
        kt_need_layout(c, op, t);
        if (t->kind != KV_TENSOR || op->n < 2 || op->items[1].kind != ML_I_LIST)
            kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `tensor.extract %%t[indices]`");
        int64_t idx[ML_MAX_RANK] = {0};
        int k = 0;
        for (int i = 0; i < op->items[1].n && k < ML_MAX_RANK; i++)
            if (op->items[1].items[i].kind == ML_I_VALUE) {
                const kv *v = kt_lookup(c, &op->items[1].items[i]);
                if (v->kind != KV_INT) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "tensor.extract needs index values");
                idx[k++] = v->i;
            }
        for (int d = 0; d < t->rank; d++)
            if (d >= k || idx[d] < 0 || idx[d] >= t->shape[d])
                kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "tensor.extract index outside the tensor");
        if (t->splat == 1) {
            *r = (kv){.kind = KV_FLOAT, .f = t->f};
        } else if (t->splat == 2) {
            *r = (kv){.kind = KV_ELEM, .lx = t->lx, .f32 = t->f32};
        } else {
            int64_t rows = t->rank > 1 ? t->shape[t->rank - 2] : 1, col = t->rank ? idx[t->rank - 1] : 0, row = 0;
            for (int d = 0; d + 1 < t->rank; d++) row = row * t->shape[d] + idx[d];
            (void)rows;
            int64_t outer = 1;
            for (int d = 0; d + 1 < t->rank; d++) outer *= t->shape[d];
            int64_t eb = kt_ebytes(t), lanes = 128 / eb;
            *r = (kv){.kind = KV_ELEM, .f32 = t->f32,
                      .lx = t->lx + (uint64_t)(((col / lanes) * outer + row) * 128 + (col % lanes) * eb)};
        }
    } else {
        return 0;
    }
    return 1;
}

int kt_reduce(kt_ctx *c, const ml_op *op, kv *r);

/* linalg.matmul ins(%a, %b) outs(%c): c + a x b on the PT of corelet 0 (fp32
 * sums, the result rounded to DL16); an outs operand that is empty or a
 * splat of 0 adds nothing.  Of f32 tensors: the PT multiplies DL16, so
 * each operand is rounded to DL16 once (an operand widened from f16 is its
 * DL16 source, exact), the sums stay fp32 and the result is fp32, c added
 * to the PT's partial sums (acc). */
static int matmul(kt_ctx *c, const ml_op *op, kv *r)
{
    if (strcmp(op->name, "linalg.matmul")) return 0;
    const ml_item *o[2], *outs = NULL;
    const ml_item *g = ml_op_keyword(op, "outs");
    for (int i = 0; g && g->kind == ML_I_GROUP && i < g->n && !outs; i++)
        if (g->items[i].kind == ML_I_VALUE) outs = &g->items[i];
    if (operands(op, o, 2) != 2 || !outs) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `linalg.matmul ins(%%a, %%b) outs(%%c)`");
    kv a = *kt_lookup(c, o[0]), b = *kt_lookup(c, o[1]), init = *kt_lookup(c, outs);
    kt_need_layout(c, op, &a);
    kt_need_layout(c, op, &b);
    if (a.kind != KV_TENSOR || b.kind != KV_TENSOR || a.rank != 2 || b.rank != 2 || a.shape[1] != b.shape[0])
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "linalg.matmul needs tensors m x k and k x n");
    if (a.f32 != b.f32 || (init.kind == KV_TENSOR && init.f32 != a.f32))
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: linalg.matmul of f16 and f32 tensors together");
    kt_materialize(c, op, &a);
    kt_materialize(c, op, &b);
    int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1], sb = c->cfg->stick_bytes;
    if (m > 65535 || n > 65535 || k > 65535) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "a matmul dimension over 65535");
    uint64_t a16 = kt_dl16_operand(c, op, &a), b16 = kt_dl16_operand(c, op, &b);
    *r = (kv){.kind = KV_TENSOR, .rank = 2, .shape = {m, n}, .f32 = a.f32};
    r->lx = kt_lx_alloc(c, op, (uint64_t)kt_sticks(r) * (uint64_t)sb);
    int empty = init.kind == KV_TENSOR && (init.splat == 1 ? init.f == 0.0 : 0);
    int acc = a.f32 && !empty && !init.from_empty;
    if (acc) kt_materialize(c, op, &init);
    isa_insn in;
    isa_insn_init(&in, ISA_OP_PT_MM);
    isa_set_off(&in.d, (int64_t)r->lx), isa_set_off(&in.a, (int64_t)a16), isa_set_off(&in.b, (int64_t)b16);
    isa_set(&in, m, m), isa_set(&in, nn, n), isa_set(&in, k, k), isa_set(&in, ds[0], m * sb),
        isa_set(&in, as[0], m * sb), isa_set(&in, bs[0], k * sb);
    if (a.f32) in.flags = ISA_F_F32 | (acc ? ISA_F_ACC : 0);
    if (acc) isa_set_off(&in.p, (int64_t)init.lx), isa_set(&in, ps, m * sb);
    kt_emit(c, &in);
    c->mm_flops += 2.0 * (double)m * (double)n * (double)k;
    if (!a.f32 && !empty && !init.from_empty) {
        kv sum;
        sfp_binary(c, op, ISA_OP_SFP_ADD, *r, &init, &sum);
        *r = sum;
    }
    return 1;
}

/* arith.cmpi PRED, %a, %b and arith.select %cond, %a, %b on values known at compile time. */
static int compare_select(kt_ctx *c, const ml_op *op, kv *r)
{
    static const char *const preds[] = {"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge", NULL};
    const ml_item *o[3];
    if (!strcmp(op->name, "arith.cmpi")) {
        int p = -1;
        for (int k = 0; preds[k] && op->n && op->items[0].kind == ML_I_WORD; k++)
            if (!strcmp(op->items[0].s, preds[k])) p = k;
        if (p < 0 || operands(op, o, 2) != 2) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `arith.cmpi PRED, %%a, %%b`");
        const kv *a = kt_lookup(c, o[0]), *b = kt_lookup(c, o[1]);
        if ((a->kind != KV_INT && a->kind != KV_IDX) || (b->kind != KV_INT && b->kind != KV_IDX))
            kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: arith.cmpi of values computed on the chip");
        int idx = a->kind == KV_IDX || b->kind == KV_IDX;
        *r = idx ? kt_idx_new(c, op) : (kv){.kind = KV_INT};
        int64_t n = idx ? kt_elems(r) : 1, *out = idx ? kt_idx_values(c, r) : &r->i;
        for (int64_t e = 0; e < n; e++) {
            int64_t x = kt_idx_at(c, a, e), y = kt_idx_at(c, b, e);
            uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
            int v[] = {x == y, x != y, x < y, x <= y, x > y, x >= y, ux < uy, ux <= uy, ux > uy, ux >= uy};
            out[e] = v[p];
        }
        return 1;
    }
    if (strcmp(op->name, "arith.select")) return 0;
    if (operands(op, o, 3) != 3) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `arith.select %%c, %%a, %%b`");
    const kv *cond = kt_lookup(c, o[0]);
    if (cond->kind == KV_IDX) { /* known per element: a mask */
        kt_select_mask(c, op, cond, kt_lookup(c, o[1]), kt_lookup(c, o[2]), r);
        return 1;
    }
    if (cond->kind != KV_INT)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: arith.select on a condition computed on the chip");
    *r = *kt_lookup(c, o[cond->i ? 1 : 2]);
    return 1;
}

/* A tensor's or tile's shape: static, no dimension of 0 (the chip's loops
 * count from 1) and at most 2^40 elements, so that sizes computed from it
 * cannot overflow (found by fuzz_ktir). */
void kt_check_shape(kt_ctx *c, const ml_op *op, const int64_t *shape, int rank)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (shape[d] < 1 || shape[d] > ((int64_t)1 << 40) / n)
            kt_fail(c, KT_EXIT_REFUSED, op->line, op->col,
                    "not supported: a tensor or tile with a dimension of 0, a dynamic one or more than 2^40 elements");
        n *= shape[d];
    }
}

/* Casts: an integer known at compile time becomes a float one for the
 * *tofp casts; extf/truncf of a tensor convert between DL16 and fp32. */
static int cast(kt_ctx *c, const ml_op *op, kv *r)
{
    const char *nm = op->name;
    if (strcmp(nm, "arith.index_cast") && strcmp(nm, "arith.index_castui") && strcmp(nm, "arith.extf") &&
        strcmp(nm, "arith.truncf") && strcmp(nm, "arith.sitofp") && strcmp(nm, "arith.uitofp"))
        return 0;
    const ml_item *o[1];
    if (operands(op, o, 1) != 1) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "%s needs a value", nm);
    *r = *kt_lookup(c, o[0]);
    const ml_type *to = ml_op_last_type(op);
    if ((r->kind == KV_TENSOR || r->kind == KV_ELEM) && to && (nm[6] == 'e' || nm[6] == 't')) {
        const ml_type *e = to->elem ? to->elem : to;
        int f32 = e->kind == ML_T_FLOAT && !strcmp(e->name, "f32");
        if (f32 != r->f32 && r->kind == KV_ELEM)
            kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: %s between f16 and f32 scalars on the chip", nm);
        if (f32 != r->f32) kt_cast(c, op, r, f32, c->mm_only, r);
    }
    if (strstr(nm, "tofp") && r->kind == KV_INT) *r = (kv){.kind = KV_FLOAT, .f = (double)r->i};
    else if (strstr(nm, "tofp")) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: %s of a value computed on the chip", nm);
    return 1;
}

/* Index arithmetic at compile time: on integers, on a pointer moved by an
 * element offset, or per element of a linalg.generic's domain (KV_IDX). */
static int int_op(kt_ctx *c, const ml_op *op, kv *r)
{
    const char *nm = op->name;
    for (size_t k = 0; k < sizeof intops / sizeof *intops; k++) {
        if (strcmp(nm, intops[k].name)) continue;
        const ml_item *o[2];
        if (operands(op, o, 2) != 2) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "%s needs two operands", nm);
        const kv *a = kt_lookup(c, o[0]), *b = kt_lookup(c, o[1]);
        if (intops[k].i == I_ADD && (a->kind == KV_PTR) != (b->kind == KV_PTR) && (a->kind == KV_INT || b->kind == KV_INT)) {
            *r = a->kind == KV_PTR ? *a : *b;
            if (__builtin_add_overflow(r->i, a->kind == KV_PTR ? b->i : a->i, &r->i))
                kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "pointer arithmetic overflows");
            return 1;
        }
        for (int k2 = 0; k2 < 2; k2++)
            if ((k2 ? b : a)->kind == KV_PTR)
                kt_fail(c, KT_EXIT_REFUSED, o[k2]->line, o[k2]->col, "%%%s: an argument without a value (give --arg %s=N)",
                        o[k2]->s, o[k2]->s);
        if ((a->kind != KV_INT && a->kind != KV_IDX) || (b->kind != KV_INT && b->kind != KV_IDX))
            kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: %s of values computed on the chip", nm);
        if (a->kind == KV_IDX || b->kind == KV_IDX) {
            *r = kt_idx_new(c, op);
            int64_t *v = kt_idx_values(c, r), n = kt_elems(r);
            for (int64_t e = 0; e < n; e++) v[e] = int_eval(c, op, intops[k].i, kt_idx_at(c, a, e), kt_idx_at(c, b, e));
        } else {
            *r = (kv){.kind = KV_INT, .i = int_eval(c, op, intops[k].i, a->i, b->i)};
        }
        return 1;
    }
    return 0;
}

int kt_compile_op(kt_ctx *c, const ml_op *op)
{
    kv r = {0};
    const char *nm = op->name;
    if (!strcmp(nm, "scf.yield") || !strcmp(nm, "return") || !strcmp(nm, "func.return") ||
        !strcmp(nm, "ktdp.yield_partial") || !strcmp(nm, "ktdp.yield_reduced") || !strcmp(nm, "linalg.yield"))
        return 1; /* terminators: the enclosing op reads their operands */
    if (!strcmp(nm, "arith.constant")) op_constant(c, op, &r);
    else if (!(cast(c, op, &r) || kt_ktdp_op(c, op, &r) || binary(c, op, &r) || unary(c, op, &r) || tensor_op(c, op, &r) ||
               kt_reduce(c, op, &r) || compare_select(c, op, &r) || matmul(c, op, &r) || kt_ring_op(c, op, &r) ||
               kt_generic_op(c, op, &r) || int_op(c, op, &r)))
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: operation %s", nm);
    if (r.kind == KV_TENSOR || r.kind == KV_TILE) kt_check_shape(c, op, r.shape, r.rank);
    if (op->nres == 1 && strcmp(nm, "ktdp.get_compute_tile_id") && strcmp(nm, "scf.for") && strcmp(nm, "scf.if"))
        kt_bind(c, op->res[0], &r);
    return 0;
}
