/* ktir op patterns the SFP runs as one instruction, and an f16 -> f32
 * widening only matmuls read (they take DL16: nothing to widen).
 *
 * A sigmoid written out, 1 / (1 + exp(-x)), is sfp.sigm.  Op by op it is
 * wrong on the chip where fp16 is right: exp(-x) of x below about -22.9
 * exceeds DL16's largest value and becomes NINF (docs/isa.md, "DL16"; the
 * chip does not saturate), 1 + NINF is NINF and 1 / NINF reads as NaN,
 * where fp16's infinity gives 0.  sfp.sigm keeps its intermediates in fp32
 * and rounds only the result.  The chain is taken when each intermediate
 * has that one use in the block; the negf, exp and addf wait for the divf
 * (they only read x, which no later op changes), and run one by one there
 * when a constant turns out not to be 1. */
#include <string.h>
#include "internal.h"

/* Uses of %name among items (nested groups, lists and regions too). */
static int uses_in(const ml_item *it, int n, const char *name);

static int uses_in_region(const ml_region *r, const char *name)
{
    int u = 0;
    for (int b = 0; r && b < r->nblocks; b++)
        for (int i = 0; i < r->blocks[b].nops; i++) u += uses_in(r->blocks[b].ops[i].items, r->blocks[b].ops[i].n, name);
    return u;
}

static int uses_in(const ml_item *it, int n, const char *name)
{
    int u = 0;
    for (int i = 0; i < n; i++) {
        if (it[i].kind == ML_I_VALUE) u += it[i].idx < 0 && !strcmp(it[i].s, name);
        else if (it[i].kind == ML_I_GROUP || it[i].kind == ML_I_LIST) u += uses_in(it[i].items, it[i].n, name);
        else if (it[i].kind == ML_I_REGION) u += uses_in_region(it[i].region, name);
    }
    return u;
}

/* The op's top-level SSA operands before its `:` (at most 2); their count. */
static int args_of(const ml_op *op, const ml_item **v)
{
    int n = 0;
    for (int i = 0; i < op->n; i++) {
        if (op->items[i].kind == ML_I_PUNCT && op->items[i].s[0] == ':') break;
        if (op->items[i].kind != ML_I_VALUE) continue;
        if (n == 2) return 3;
        v[n++] = &op->items[i];
    }
    return n;
}

/* The one op after ops[i] that uses ops[i]'s result, when it is named want
 * and takes nargs operands directly: its index, else -1. */
static int only_user(const ml_block *b, int i, const char *want, int nargs)
{
    const ml_op *def = &b->ops[i];
    if (def->nres != 1) return -1;
    int total = 0, at = -1;
    for (int k = i + 1; k < b->nops; k++) {
        int u = uses_in(b->ops[k].items, b->ops[k].n, def->res[0]);
        if (u && at < 0) at = k;
        total += u;
    }
    const ml_item *v[2];
    if (total != 1 || strcmp(b->ops[at].name, want) || b->ops[at].nres != 1 || args_of(&b->ops[at], v) != nargs) return -1;
    return at;
}

int kt_sigmoid_chain(const ml_block *b, int i, int at[4])
{
    const ml_item *v[2];
    if (strcmp(b->ops[i].name, "arith.negf") || args_of(&b->ops[i], v) != 1) return 0;
    at[0] = i;
    if ((at[1] = only_user(b, i, "math.exp", 1)) < 0 || (at[2] = only_user(b, at[1], "arith.addf", 2)) < 0 ||
        (at[3] = only_user(b, at[2], "arith.divf", 2)) < 0)
        return 0;
    args_of(&b->ops[at[3]], v); /* 1 / (1 + e): the sum is the divisor */
    return v[1]->idx < 0 && !strcmp(v[1]->s, b->ops[at[2]].res[0]);
}

static int is_one(const kv *v)
{
    return (v->kind == KV_FLOAT && v->f == 1.0) || (v->kind == KV_TENSOR && v->splat == 1 && v->f == 1.0);
}

int kt_sigmoid(kt_ctx *c, const ml_block *b, const int at[4])
{
    const ml_op *add = &b->ops[at[2]], *div = &b->ops[at[3]];
    const ml_item *x[2], *s[2], *d[2];
    args_of(&b->ops[at[0]], x), args_of(add, s), args_of(div, d);
    const ml_item *one = !strcmp(s[0]->s, b->ops[at[1]].res[0]) && s[0]->idx < 0 ? s[1] : s[0];
    kv a = *kt_lookup(c, x[0]);
    if (!is_one(kt_lookup(c, one)) || !is_one(kt_lookup(c, d[0])) || (a.kind != KV_TENSOR && a.kind != KV_ELEM) ||
        (a.kind == KV_TENSOR && a.splat == 1))
        return 0;
    /* ktir-cpu's roofline counts the program's four ops */
    double n = 1;
    for (int k = 0; a.kind == KV_TENSOR && k < a.rank; k++) n *= (double)a.shape[k];
    c->simd_elems += 3 * n, c->trans_elems += n;
    kv r;
    kt_sfp_unary(c, div, ISA_OP_SFP_SIGM, a, &r);
    kt_bind(c, div->res[0], &r);
    return 1;
}

/* Uses of %name in ops (and the regions inside them): all of them, and
 * those as an `ins` operand of a linalg.matmul. */
static void matmul_uses(const ml_op *ops, int n, const char *name, int *all, int *mm)
{
    for (int k = 0; k < n; k++) {
        const ml_op *op = &ops[k];
        for (int i = 0; i < op->n; i++) {
            const ml_item *it = &op->items[i];
            if (it->kind != ML_I_REGION) *all += uses_in(it, 1, name);
            for (int b = 0; it->kind == ML_I_REGION && b < it->region->nblocks; b++)
                matmul_uses(it->region->blocks[b].ops, it->region->blocks[b].nops, name, all, mm);
        }
        const ml_item *ins = ml_op_keyword(op, "ins");
        if (!strcmp(op->name, "linalg.matmul") && ins) *mm += uses_in(ins, 1, name);
    }
}

int kt_matmul_only(const ml_block *b, int i)
{
    const ml_op *def = &b->ops[i];
    if (strcmp(def->name, "arith.extf") || def->nres != 1) return 0;
    int all = 0, mm = 0;
    matmul_uses(b->ops + i + 1, b->nops - i - 1, def->res[0], &all, &mm);
    return all > 0 && all == mm;
}
