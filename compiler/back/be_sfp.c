/* be_sfp.c: the SFP expression evaluator over a tile in LX, shared by row
 * kernels (be_rows.c) and matmul epilogues (be_matmul.c), and the row
 * structure both build around it: the loads an expression reads, the
 * temps it needs, rows walked aligned with a buffer's layout. */
#include "backend.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- The evaluator ---- */

static int64_t val_bytes(const be_tile *T, be_vclass cls)
{
    const int64_t sb = T->c->t.stick;
    return cls == BE_V_TILE ? T->G * T->rows_cap * sb : cls == BE_V_ROW ? T->rows_cap * sb : T->G * sb;
}

/* The cell holding v, or -1 (a constant, a load, a matmul epilogue). */
static int cell_of(const be_tile *T, const be_val *v)
{
    if (!T->reads || v->cls == BE_V_NONE || v->cls == BE_V_CONST || v->lx < T->top)
        return -1;
    return (int)((v->lx - T->top) / val_bytes(T, BE_V_TILE));
}

/* The memo is a sparse set (one lookup in place of a search of it): the
 * dense part memo_id[0, nmemo), memo[0, nmemo); the index memo_id[capmemo +
 * e], e's slot if that slot holds e, so nmemo = 0 empties it (and a
 * memo kept from another tile needs no clearing).  One block for ids and
 * index; the tile's owners give it back by be_tile_memo_end. */
struct be_tmemo {
    int *id;
    be_val *val;
    int cap;
};

static void memo_reserve(be_tile *T, int e)
{
    if (e < T->capmemo)
        return;
    struct be_tmemo *kept = T->c->tmemo;
    if (!T->capmemo && kept && kept->cap > e) { /* a fresh tile: the one kept, its contents stale */
        T->memo_id = kept->id;
        T->memo = kept->val;
        T->capmemo = kept->cap;
        *kept = (struct be_tmemo){0};
        return;
    }
    int cap = T->c->p->A.n > 2 * T->capmemo ? T->c->p->A.n : 2 * T->capmemo; /* every id at once */
    if (cap <= e)
        cap = e + 1;
    T->memo_id = realloc(T->memo_id, 2 * (size_t)cap * sizeof *T->memo_id);
    T->memo = realloc(T->memo, (size_t)cap * sizeof *T->memo);
    if (!T->memo_id || !T->memo)
        abort();
    int *at = T->memo_id + cap;
    memmove(at, T->memo_id + T->capmemo, (size_t)T->capmemo * sizeof *at);
    memset(at + T->capmemo, 0, (size_t)(cap - T->capmemo) * sizeof *at);
    T->capmemo = cap;
}

void be_tile_memo_end(be_tile *T)
{
    if (T->memo_id) {
        struct be_tmemo **kept = &T->c->tmemo;
        if (!*kept)
            *kept = ir_xalloc(sizeof **kept);
        if (T->capmemo > (*kept)->cap) {
            free((*kept)->id);
            free((*kept)->val);
            **kept = (struct be_tmemo){T->memo_id, T->memo, T->capmemo};
        } else {
            free(T->memo_id);
            free(T->memo);
        }
    }
    T->memo_id = NULL;
    T->memo = NULL;
    T->capmemo = T->nmemo = 0;
}

void be_tmemo_free(struct be_tmemo **m)
{
    if (!*m)
        return;
    free((*m)->id);
    free((*m)->val);
    free(*m);
    *m = NULL;
}

static const be_val *lookup(const be_tile *T, int e)
{
    if (e >= T->capmemo)
        return NULL;
    int i = T->memo_id[T->capmemo + e];
    return i < T->nmemo && T->memo_id[i] == e ? &T->memo[i] : NULL;
}

void be_bind(be_tile *T, int e, const be_val *v)
{
    int cell = cell_of(T, v);
    if (cell >= 0 && !T->counting)
        T->refs[cell] += T->reads[e];
    be_val *m = (be_val *)lookup(T, e);
    if (m) {
        *m = *v;
        return;
    }
    memo_reserve(T, e);
    T->memo_id[T->capmemo + e] = T->nmemo;
    T->memo_id[T->nmemo] = e;
    T->memo[T->nmemo++] = *v;
}

int be_temp(be_tile *T, be_vclass cls, be_val *v)
{
    memset(v, 0, sizeof *v);
    v->cls = cls;
    if (!T->reads && cls == BE_V_COL && T->carea) {
        int64_t n = val_bytes(T, cls);
        if (T->ctop + n > T->cend)
            return be_error(T->c, T->K, "internal: the expression's per-column temps need more than the %" PRId64
                            " bytes of LX planned", T->cend - T->ctop);
        v->lx = T->ctop;
        T->ctop += n;
        return 0;
    }
    if (!T->reads) { /* bump */
        int64_t n = val_bytes(T, cls);
        if (T->top + n > T->end)
            return be_error(T->c, T->K, "the expression needs more LX than the %" PRId64 " bytes planned for its tile",
                            T->end - (T->end - T->top));
        v->lx = T->top;
        T->top += n;
        return 0;
    }
    int i = 0; /* the lowest free cell, or a new one */
    while (i < T->ncells && T->refs[i] >= 0)
        i++;
    if (i == T->ncells)
        T->refs = ir_xgrow(T->refs, &T->capcells, ++T->ncells, sizeof *T->refs);
    v->lx = T->top + i * val_bytes(T, BE_V_TILE);
    if (v->lx + val_bytes(T, BE_V_TILE) > T->end) /* the plan's count of cells fell short */
        return be_error(T->c, T->K, "internal: the expression's temps need more than the %" PRId64 " bytes of LX planned",
                        T->end - T->top);
    T->refs[i] = 0;
    return 0;
}

/* The evaluation read expression e's value once more: count the read (the
 * dry run), or give its cell back after its last read. */
static int note_read(be_tile *T, int e)
{
    if (!T->reads)
        return 0;
    if (T->counting) {
        T->reads[e]++;
        return 0;
    }
    const be_val *v = lookup(T, e);
    if (!v)
        return be_error(T->c, T->K, "internal: expression %d read before it has a value", e);
    int i = cell_of(T, v);
    if (i < 0)
        return 0;
    if (T->refs[i] <= 0)
        return be_error(T->c, T->K, "internal: a temp read more often than counted");
    if (--T->refs[i] == 0)
        T->refs[i] = -1;
    return 0;
}

/* Give back v's cell when nothing will read it: a temp only this node's
 * instructions read, or a node value with no reader left. */
static void drop_temp(be_tile *T, const be_val *v)
{
    int i = cell_of(T, v);
    if (i >= 0 && T->refs[i] == 0)
        T->refs[i] = -1;
}

/* The loop shape of an SFP instruction writing a value of class cls. */
static void shape_for(const be_tile *T, be_vclass cls, cc_sfp_args *s)
{
    const int64_t sb = T->c->t.stick;
    if (cls == BE_V_TILE) {
        s->n0 = T->G;
        s->ds0 = s->as0 = T->gs;
        s->n1 = T->R;
        s->ds1 = s->as1 = sb;
    } else if (cls == BE_V_ROW) {
        s->n0 = 1;
        s->n1 = T->R;
        s->ds1 = s->as1 = sb;
    } else {
        s->n0 = T->G;
        s->ds0 = s->as0 = sb;
        s->n1 = 1;
    }
}

/* DL16 has no infinity: its one NINF pattern stands for infinity and NaN
 * alike and reads back as NaN, so an infinite constant written to a DL16
 * tile (masked_fill(x, mask, -inf) before a softmax) would make the whole
 * row NaN through max and exp.  An infinite immediate, or a finite one
 * beyond DL16's range (a -1e30 mask, stored as NINF too), becomes
 * +-ISA_DL16_INF instead: finite, far beyond any activation, and with room
 * left below the largest DL16 (about 8.6e9) so that softmax's
 * x - max(x) stays finite; exp of it is exactly 0.  (A row whose every
 * element is masked comes out uniform instead of NaN.)  A finite one
 * beyond DL16's range (torch.finfo(f32).min) becomes +-ISA_DL16_BIG. */
float be_dl16_imm(double v)
{
    return isa_dl16_standin((float)v);
}

/* b operand of an op whose result has class cls. */
static int set_b(be_tile *T, be_vclass cls, const be_val *b, cc_sfp_args *s)
{
    const int64_t sb = T->c->t.stick;
    switch (b->cls) {
    case BE_V_CONST: s->bm = ISA_BM_IMM; s->imm = be_dl16_imm(b->imm); return 0;
    case BE_V_TILE: s->bm = ISA_BM_VEC; s->b = cc_abs(b->lx); s->bs0 = T->gs; s->bs1 = sb; return 0;
    case BE_V_COL: s->bm = ISA_BM_VEC; s->b = cc_abs(b->lx); s->bs0 = sb; s->bs1 = 0; return 0;
    case BE_V_ROW:
        if (cls == BE_V_ROW) {
            s->bm = ISA_BM_VEC;
            s->b = cc_abs(b->lx);
            s->bs1 = sb;
        } else {
            s->bm = ISA_BM_ELEM;
            s->b = cc_abs(b->lx + b->lane * 2);
            s->bs0 = 0;
            s->bs1 = sb;
        }
        return 0;
    default: return be_error(T->c, T->K, "internal: operand without a value");
    }
}

void be_sfp(be_tile *T, int op, be_vclass cls, int64_t d, int64_t a, int64_t a_rowstride_zero, const be_val *b)
{
    cc_sfp_args s = {0};
    s.op = op;
    s.c = T->corelet;
    s.t = ISA_T_DL16;
    shape_for(T, cls, &s);
    s.d = cc_abs(d);
    s.a = cc_abs(a);
    if (a_rowstride_zero) { /* a COL value broadcast over the rows of a tile */
        s.as0 = T->c->t.stick;
        s.as1 = 0;
    }
    if (b)
        set_b(T, cls, b, &s);
    cc_emit_sfp(T->e, &s);
}

static int unary_op(ir_op op)
{
    switch (op) {
    case IR_NEG: return ISA_OP_SFP_NEG;
    case IR_EXP: return ISA_OP_SFP_EXP;
    case IR_LOG: return ISA_OP_SFP_LOG;
    case IR_SQRT: return ISA_OP_SFP_SQRT;
    case IR_RSQRT: return ISA_OP_SFP_RSQRT;
    case IR_RECIP: return ISA_OP_SFP_RECIP;
    case IR_TANH: return ISA_OP_SFP_TANH;
    case IR_SIGMOID: return ISA_OP_SFP_SIGM;
    case IR_ERF: return ISA_OP_SFP_ERF;
    case IR_RELU: return ISA_OP_SFP_RELU;
    case IR_SIN: return ISA_OP_SFP_SIN;
    case IR_COS: return ISA_OP_SFP_COS;
    case IR_ABS: return ISA_OP_SFP_ABS;
    default: return -1;
    }
}

static int binary_op(ir_op op)
{
    switch (op) {
    case IR_ADD: return ISA_OP_SFP_ADD;
    case IR_SUB: return ISA_OP_SFP_SUB;
    case IR_MUL: return ISA_OP_SFP_MUL;
    case IR_DIV: return ISA_OP_SFP_DIV;
    case IR_MAX: return ISA_OP_SFP_MAX;
    case IR_MIN: return ISA_OP_SFP_MIN;
    case IR_POW: return ISA_OP_SFP_POW;
    case IR_EQ: return ISA_OP_SFP_EQ;
    case IR_NE: return ISA_OP_SFP_NE;
    case IR_LT: return ISA_OP_SFP_LT;
    case IR_LE: return ISA_OP_SFP_LE;
    case IR_GT: return ISA_OP_SFP_GT;
    case IR_GE: return ISA_OP_SFP_GE;
    case IR_AND: return ISA_OP_SFP_MUL; /* on 0 / 1 */
    case IR_OR: return ISA_OP_SFP_MAX;
    default: return -1;
    }
}

/* op with its operands swapped: a op b == b swapped(op) a; -1 if none. */
static int mirrored(int op)
{
    switch (op) {
    case ISA_OP_SFP_ADD: case ISA_OP_SFP_MUL: case ISA_OP_SFP_MAX: case ISA_OP_SFP_MIN:
    case ISA_OP_SFP_EQ: case ISA_OP_SFP_NE: return op;
    case ISA_OP_SFP_LT: return ISA_OP_SFP_GT;
    case ISA_OP_SFP_GT: return ISA_OP_SFP_LT;
    case ISA_OP_SFP_LE: return ISA_OP_SFP_GE;
    case ISA_OP_SFP_GE: return ISA_OP_SFP_LE;
    default: return -1;
    }
}

/* op on constants, as opsem.c's table computes it in double. */
static double fold(ir_op op, double a, double b) { return ir_opsem_ir(op)->f64(a, b); }

/* A folded arithmetic result as the SFP would store it: rounded to DL16
 * (decompositions rely on the store's rounding, as floor's (a + 512) - 512
 * does); an infinity or a value beyond DL16's range is kept as it is. */
static double fold_stored(ir_op op, double a, double b)
{
    double r = fold(op, a, b);
    if (op != IR_ADD && op != IR_SUB && op != IR_MUL && op != IR_DIV)
        return r;
    float q = isa_dl16_round((float)r);
    return isfinite(r) && !isnan(q) ? q : r;
}

static be_vclass join(be_vclass a, be_vclass b)
{
    if (a == BE_V_TILE || b == BE_V_TILE || (a == BE_V_ROW && b == BE_V_COL) || (a == BE_V_COL && b == BE_V_ROW))
        return BE_V_TILE;
    return a > b ? a : b;
}

/* A new temp of class cls, every element imm (an SFP immediate: sfp.iota
 * with no step). */
static int fill(be_tile *T, be_vclass cls, float imm, be_val *out)
{
    if (be_temp(T, cls, out))
        return -1;
    cc_sfp_args s = {0};
    s.op = ISA_OP_SFP_IOTA;
    s.c = T->corelet;
    s.t = ISA_T_DL16;
    shape_for(T, cls, &s);
    s.d = cc_abs(out->lx);
    s.imm = imm;
    cc_emit_sfp(T->e, &s);
    return 0;
}

/* v as a value of class cls (a broadcast): COL -> TILE by a mov with row
 * stride 0; ROW -> TILE by 0 + the row's element (bm=elem); a constant from any finite 0/1 or real value x: x*0 + c is
 * not safe for inf/NaN, so only COL and the value itself are supported. */
int be_widen(be_tile *T, const be_val *v, be_vclass cls, be_val *out)
{
    if (v->cls == cls) {
        *out = *v;
        return 0;
    }
    if (v->cls == BE_V_COL && cls == BE_V_TILE) {
        if (be_temp(T, BE_V_TILE, out))
            return -1;
        be_sfp(T, ISA_OP_SFP_MOV, BE_V_TILE, out->lx, v->lx, 1, NULL);
        return 0;
    }
    if (v->cls == BE_V_ROW && cls == BE_V_TILE) { /* zeros, + the row's element */
        if (fill(T, BE_V_TILE, 0, out))
            return -1;
        be_sfp(T, ISA_OP_SFP_ADD, BE_V_TILE, out->lx, out->lx, 0, v);
        return 0;
    }
    if (v->cls == BE_V_CONST) /* a constant fill (a sum over no element) */
        return fill(T, cls, be_dl16_imm(v->imm), out);
    return be_error(T->c, T->K, "cannot broadcast a %s value to a %s (not supported yet)",
                    v->cls == BE_V_ROW ? "per-row" : v->cls == BE_V_CONST ? "constant" : "per-column",
                    cls == BE_V_TILE ? "tile" : cls == BE_V_ROW ? "per-row value" : "per-column value");
}

/* d := a op b over class cls, where a is already of class cls. */
static int emit_bin(be_tile *T, int op, be_vclass cls, const be_val *a, const be_val *b, be_val *out)
{
    if (b->cls == BE_V_ROW && a->cls == BE_V_ROW && a->lane != b->lane)
        return be_error(T->c, T->K, "per-row values at different lanes of their sticks (not supported yet)");
    if (be_temp(T, cls, out))
        return -1;
    out->lane = a->cls == BE_V_ROW ? a->lane : 0;
    be_sfp(T, op, cls, out->lx, a->lx, 0, b);
    return 0;
}

static int eval_binary(be_tile *T, ir_op iop, const be_val *a, const be_val *b, be_val *out)
{
    int op = binary_op(iop);
    if (op < 0)
        return be_error(T->c, T->K, "the SFP has no operation for %s", ir_ops[iop].text);
    be_vclass cls = join(a->cls, b->cls);
    if (a->cls == cls && a->cls != BE_V_CONST) {
        if (b->cls == BE_V_COL && cls == BE_V_ROW)
            return be_error(T->c, T->K, "internal: per-column operand of a per-row value");
        return emit_bin(T, op, cls, a, b, out);
    }
    if (b->cls == cls) { /* a is broadcast: put b first */
        int m = mirrored(op);
        if (m >= 0)
            return emit_bin(T, m, cls, b, a, out);
        be_val t = {0};
        if (op == ISA_OP_SFP_SUB) { /* a - b = -(b - a) */
            if (emit_bin(T, ISA_OP_SFP_SUB, cls, b, a, &t) || be_temp(T, cls, out))
                return -1;
            be_sfp(T, ISA_OP_SFP_NEG, cls, out->lx, t.lx, 0, NULL);
            drop_temp(T, &t);
            return 0;
        }
        if (op == ISA_OP_SFP_DIV) { /* a / b = (1 / b) * a */
            if (be_temp(T, cls, &t))
                return -1;
            be_sfp(T, ISA_OP_SFP_RECIP, cls, t.lx, b->lx, 0, NULL);
            if (emit_bin(T, ISA_OP_SFP_MUL, cls, &t, a, out))
                return -1;
            drop_temp(T, &t);
            return 0;
        }
    }
    be_val w;
    if (be_widen(T, a, cls, &w) || emit_bin(T, op, cls, &w, b, out))
        return -1;
    if (a->cls != cls) /* w is a temp of its own */
        drop_temp(T, &w);
    return 0;
}

/* Index values (IR_E_INDEX) by sfp.iota: idx is affine over the kernel's
 * column variable and row variables.  Over one chunk its value is
 * off + cc*column + rowpart(row); rowpart is affine along runs of rows
 * (between wraps of an inner row variable), one sfp.iota per run. */
#define BE_IOTA_EXACT 1024 /* DL16 keeps every integer up to here */
static int eval_index_signed(be_tile *T, const ir_index *idx, int sign_only, be_val *out);
static int index_span(be_tile *T, const ir_index *idx, int64_t *plo, int64_t *phi, int *phasrow);
static int eval_index(be_tile *T, const ir_index *idx, be_val *out) { return eval_index_signed(T, idx, 0, out); }

/* An index compared with an integer k, i cmp k, as (i - k) cmp 0: one
 * rounding of an integer keeps its sign and its zero, so the comparison
 * is exact however far the index runs past DL16's exact 1024 (a cat
 * along 1536 columns).  1 when done (or failed: -1), 0 when x is not
 * such a comparison. */
static int eval_index_compare(be_tile *T, const ir_expr *x, be_val *out, int *rc)
{
    const ir_expr *e = T->c->p->A.e;
    if (x->kind != IR_E_OP || (x->op != IR_EQ && x->op != IR_NE && x->op != IR_LT && x->op != IR_LE &&
                               x->op != IR_GT && x->op != IR_GE))
        return 0;
    int ia = e[x->a].kind == IR_E_INDEX, ib = e[x->b].kind == IR_E_INDEX;
    const ir_expr *k = ia ? &e[x->b] : &e[x->a];
    if (ia == ib || k->kind != IR_E_CONST || k->value != floor(k->value) || fabs(k->value) > 0x1p24)
        return 0;
    ir_index idx = e[ia ? x->a : x->b].idx;
    int64_t lo, hi;
    int hasrow;
    if (index_span(T, &idx, &lo, &hi, &hasrow) || (lo >= -BE_IOTA_EXACT && hi <= BE_IOTA_EXACT))
        return 0; /* exact: the index itself, shared with the other comparisons of it */
    idx.offset -= (int64_t)k->value;
    be_val iv, zero = {BE_V_CONST, 0, 0, 0};
    *rc = eval_index_signed(T, &idx, 1, &iv) ? -1 : 0;
    if (!*rc && iv.cls == BE_V_CONST) {
        out->cls = BE_V_CONST;
        out->imm = fold_stored(x->op, ia ? iv.imm : 0, ia ? 0 : iv.imm);
    } else if (!*rc) {
        *rc = eval_binary(T, x->op, ia ? &iv : &zero, ia ? &zero : &iv, out);
    }
    return 1;
}

/* The smallest and largest value of idx over the tile's rows and columns;
 * *hasrow: it depends on a row variable.  -1 outside a row kernel. */
static int index_span(be_tile *T, const ir_index *idx, int64_t *plo, int64_t *phi, int *phasrow)
{
    if (!T->rsp)
        return be_error(T->c, T->K, "index values in a matmul epilogue are not supported by the back half yet");
    const be_rowspace *rs = T->rsp;
    int64_t cc = idx->coef[T->colvar], lo = idx->offset, hi = idx->offset;
    int hasrow = 0;
    for (int v = 0; v < IR_MAX_VARS; v++) {
        int row = 0;
        for (int i = 0; i < rs->nv; i++)
            if (rs->var[i] == v) {
                row = 1;
                int64_t span = idx->coef[v] * (rs->ext[i] - 1);
                lo += span < 0 ? span : 0;
                hi += span > 0 ? span : 0;
                hasrow |= idx->coef[v] != 0;
            }
        if (!row && v != T->colvar && idx->coef[v])
            return be_error(T->c, T->K, "internal: an index value over a variable outside the rows and columns");
    }
    int64_t cspan = cc * (T->cols - 1);
    *plo = lo + (cspan < 0 ? cspan : 0);
    *phi = hi + (cspan > 0 ? cspan : 0);
    *phasrow = hasrow;
    return 0;
}

/* The row part of index idx at rows r0.. r0 + n - 1 of row space rs, into
 * rv: the row variables counted up (be_row_next) from r0's (their values
 * taken by division once, not per row: 1.5% of the Llama-8B decode step's
 * compile, for its KV cache appends' where). */
static void index_rows(const be_rowspace *rs, const ir_index *idx, int64_t r0, int64_t n, int64_t *rv)
{
    int64_t val[IR_MAX_VARS], rest = r0, v = 0;
    for (int j = rs->nv - 1; j >= 0; j--) {
        val[rs->var[j]] = rest % rs->ext[j];
        rest /= rs->ext[j];
        v += idx->coef[rs->var[j]] * val[rs->var[j]];
    }
    for (int64_t i = 0; i < n; i++) {
        rv[i] = v;
        v += be_row_next(rs, val, idx);
    }
}

static int eval_index_signed(be_tile *T, const ir_index *idx, int sign_only, be_val *out)
{
    const int64_t sb = T->c->t.stick, cc = idx->coef[T->colvar];
    int64_t lo, hi;
    int hasrow;
    if (index_span(T, idx, &lo, &hi, &hasrow))
        return -1;
    const be_rowspace *rs = T->rsp;
    if (!sign_only && (lo < -BE_IOTA_EXACT || hi > BE_IOTA_EXACT))
        return be_error(T->c, T->K,
                        "index values from %" PRId64 " to %" PRId64 " are not exact in DL16 (limit %d; not supported yet)",
                        lo, hi, BE_IOTA_EXACT);
    if (!cc && !hasrow) {
        out->cls = BE_V_CONST;
        out->imm = (double)idx->offset;
        return 0;
    }
    be_vclass cls = cc && hasrow ? BE_V_TILE : cc ? BE_V_COL : BE_V_ROW;
    if (be_temp(T, cls, out))
        return -1;
    cc_sfp_args s = {0};
    s.op = ISA_OP_SFP_IOTA;
    s.c = T->corelet;
    s.t = ISA_T_DL16;
    s.bs0 = cc;
    if (cls == BE_V_COL) {
        s.d = cc_abs(out->lx);
        s.n0 = T->G;
        s.ds0 = sb;
        s.n1 = 1;
        s.imm = (float)idx->offset;
        cc_emit_sfp(T->e, &s);
        return 0;
    }
    /* the row part of each row of the chunk, in runs of constant step */
    int64_t n = T->R, *rv = ir_xalloc((size_t)n * sizeof *rv);
    index_rows(rs, idx, T->r0, n, rv);
    for (int64_t i = 0; i < n;) {
        int64_t len = 1, step = i + 1 < n ? rv[i + 1] - rv[i] : 0;
        while (i + len < n && rv[i + len] - rv[i + len - 1] == step)
            len++;
        s.d = cc_abs(out->lx + i * sb);
        s.n0 = cls == BE_V_TILE ? T->G : 1;
        s.ds0 = cls == BE_V_TILE ? T->gs : 0;
        s.n1 = len;
        s.ds1 = sb;
        s.bs1 = step;
        s.imm = (float)(idx->offset + rv[i]);
        cc_emit_sfp(T->e, &s);
        i += len;
    }
    free(rv);
    return 0;
}

int be_eval(be_tile *T, int e, be_val *out)
{
    const be_val *m = lookup(T, e);
    if (m) {
        *out = *m;
        return 0;
    }
    const ir_expr *x = &T->c->p->A.e[e];
    const ir_prog *p = T->c->p;
    be_val a, b, cnd;
    memset(out, 0, sizeof *out);
    switch (x->kind) {
    case IR_E_CONST:
        out->cls = BE_V_CONST;
        out->imm = x->value;
        break;
    case IR_E_ACC:
        if (T->acc_expr < 0)
            return be_error(T->c, T->K, "internal: acc outside a matmul epilogue");
        *out = T->acc;
        break;
    case IR_E_LOAD:
        return be_error(T->c, T->K, "internal: load of %s not bound", p->bufs[x->buf].name);
    case IR_E_ILOAD:
        return be_error(T->c, T->K, "gathers (load of %s at a computed index) are not supported by the back half yet",
                        p->bufs[x->buf].name);
    case IR_E_INDEX:
        if (eval_index(T, &x->idx, out))
            return -1;
        break;
    case IR_E_CAST:
        if (be_eval(T, x->a, &a))
            return -1;
        if ((x->dtype == GR_I64 || x->dtype == GR_I32) && ir_dtype_is_float(p->A.e[x->a].dtype))
            return be_error(T->c, T->K, "casts to %s are not supported by the back half yet", gr_dtype_names[x->dtype]);
        if (x->dtype == GR_BOOL && ir_dtype_is_float(p->A.e[x->a].dtype)) {
            be_val zero = {BE_V_CONST, 0, 0, 0};
            if (eval_binary(T, IR_NE, &a, &zero, out))
                return -1;
            break;
        }
        *out = a;
        break;
    case IR_E_OP: {
        int rc = 0;
        if (eval_index_compare(T, x, out, &rc)) {
            if (rc)
                return -1;
            break;
        }
        if (be_eval(T, x->a, &a))
            return -1;
        if (ir_ops[x->op].arity == 1) {
            if (a.cls == BE_V_CONST) {
                out->cls = BE_V_CONST;
                out->imm = fold(x->op, a.imm, 0);
                break;
            }
            if (x->op == IR_NOT) {
                be_val zero = {BE_V_CONST, 0, 0, 0};
                if (eval_binary(T, IR_EQ, &a, &zero, out))
                    return -1;
                break;
            }
            int op = unary_op(x->op);
            if (op < 0)
                return be_error(T->c, T->K, "the SFP has no operation for %s", ir_ops[x->op].text);
            if (be_temp(T, a.cls, out))
                return -1;
            out->lane = a.lane;
            be_sfp(T, op, a.cls, out->lx, a.lx, 0, NULL);
            break;
        }
        if (be_eval(T, x->b, &b))
            return -1;
        if (a.cls == BE_V_CONST && b.cls == BE_V_CONST) {
            out->cls = BE_V_CONST;
            out->imm = fold_stored(x->op, a.imm, b.imm);
            break;
        }
        if (eval_binary(T, x->op, &a, &b, out))
            return -1;
        break;
    }
    case IR_E_WHERE: {
        if (T->late_cond ? be_eval(T, x->c, &b) || be_eval(T, x->b, &a) || be_eval(T, x->a, &cnd)
                         : be_eval(T, x->a, &cnd) || be_eval(T, x->b, &a) || be_eval(T, x->c, &b))
            return -1;
        be_vclass cls = join(cnd.cls, join(a.cls, b.cls));
        if (cnd.cls == BE_V_CONST) {
            *out = cnd.imm != 0 ? a : b;
            break;
        }
        if (cls == BE_V_CONST || cls == BE_V_NONE)
            return be_error(T->c, T->K, "internal: where over constants");
        be_val c2;
        if (be_widen(T, &cnd, cls, &c2))
            return -1;
        /* sel: d := d != 0 ? a : b, with d a copy of the condition and a
         * a vector of the result's class; else the condition inverted. */
        const be_val *va = &a, *vb = &b;
        int invert = 0;
        if (a.cls != cls) {
            if (b.cls == cls) {
                va = &b;
                vb = &a;
                invert = 1;
            }
        }
        be_val wa;
        if (be_widen(T, va, cls, &wa) || be_temp(T, cls, out))
            return -1;
        be_val zero = {BE_V_CONST, 0, 0, 0};
        be_sfp(T, invert ? ISA_OP_SFP_EQ : ISA_OP_SFP_NE, cls, out->lx, c2.lx, 0, &zero);
        be_sfp(T, ISA_OP_SFP_SEL, cls, out->lx, wa.lx, 0, vb);
        if (cnd.cls != cls)
            drop_temp(T, &c2);
        if (va->cls != cls)
            drop_temp(T, &wa);
        break;
    }
    }
    be_bind(T, e, out);
    /* its operands have been read (after the bind: out may be one of them) */
    int ops[3] = {-1, -1, -1};
    if (x->kind == IR_E_CAST || x->kind == IR_E_OP || x->kind == IR_E_WHERE)
        ops[0] = x->a;
    if ((x->kind == IR_E_OP && ir_ops[x->op].arity == 2) || x->kind == IR_E_WHERE)
        ops[1] = x->b;
    if (x->kind == IR_E_WHERE)
        ops[2] = x->c;
    for (int i = 0; i < 3; i++)
        if (ops[i] >= 0 && note_read(T, ops[i]))
            return -1;
    return 0;
}

/* ---- Row structure shared by row kernels and matmul epilogues ---- */

/* Evaluate the kernel's nodes over the tile T (its loads bound), each
 * node's value into nv: one SFP instruction per expression node.  A
 * node's value is bound to the loads later nodes read it through, and one
 * that dmao stores after the SFP work keeps its cell to the chunk's end. */
/* k->outloads brought up to the arena's end: an expression once made
 * does not change, so the loads found stay, and only the expressions made
 * since are looked at (a scan of the whole arena per node and chunk was
 * most of rk_eval_nodes on BERT-base).  Each node's loads lie together
 * (its ol0, nol), so a node binds its own without a pass over all. */
static void out_loads(rk_plan *k)
{
    const ir_prog *p = k->c->p;
    if (k->outloads_upto == p->A.n)
        return;
    for (int x = k->outloads_upto; x < p->A.n; x++) {
        const ir_expr *ex = &p->A.e[x];
        if (ex->kind != IR_E_LOAD)
            continue;
        for (int j = 0; j < k->nn; j++) {
            if (ex->buf != p->nodes[k->nodes[j].node].out)
                continue;
            k->outloads = ir_xgrow(k->outloads, &k->outloads_cap, k->noutloads + 1, sizeof *k->outloads);
            const int at = k->nodes[j].ol0 + k->nodes[j].nol;
            memmove(k->outloads + at + 1, k->outloads + at, (size_t)(k->noutloads - at) * sizeof *k->outloads);
            k->outloads[at] = x;
            k->noutloads++;
            k->nodes[j].nol++;
            for (int i = j + 1; i < k->nn; i++)
                k->nodes[i].ol0++;
        }
    }
    k->outloads_upto = p->A.n;
}

int rk_eval_nodes(rk_plan *k, be_tile *T, be_val *nv)
{
    be_ctx *c = k->c;
    const int64_t sb = c->t.stick;
    out_loads(k);
    for (int j = 0; j < k->nn; j++) {
        const rk_node *rn = &k->nodes[j];
        const ir_node *N = &c->p->nodes[rn->node];
        be_val body, v;
        if (be_eval(T, rn->expr, &body))
            return -1;
        if (N->kind == IR_REDUCTION) {
            /* a per-column value (a kernel of one row) or a per-row one: as a tile */
            be_val wide = {0};
            const int widened = body.cls == BE_V_COL || body.cls == BE_V_ROW;
            if (widened) {
                if (be_widen(T, &body, BE_V_TILE, &wide))
                    return -1;
                body = wide;
            }
            if (body.cls != BE_V_TILE)
                return be_error(c, k->K, "a reduction over a value that is not a tile (not supported yet)");
            be_val t = body;
            if (N->rop == IR_RMIN) { /* min = -max(-x) */
                if (be_temp(T, BE_V_TILE, &t))
                    return -1;
                be_sfp(T, ISA_OP_SFP_NEG, BE_V_TILE, t.lx, body.lx, 0, NULL);
            }
            if (be_temp(T, BE_V_ROW, &v))
                return -1;
            cc_sfp_args r = {0};
            r.op = N->rop == IR_RSUM ? ISA_OP_SFP_RSUM : ISA_OP_SFP_RMAX;
            r.c = T->corelet;
            r.t = ISA_T_DL16;
            r.flags = ISA_F_LANES;
            r.d = cc_abs(v.lx);
            r.a = cc_abs(t.lx);
            r.n0 = k->G;
            r.as0 = T->gs;
            r.n1 = T->R;
            r.as1 = sb;
            r.ds1 = sb;
            r.vl = k->cols;
            cc_emit_sfp(T->e, &r);
            if (N->rop == IR_RMIN) {
                be_sfp(T, ISA_OP_SFP_NEG, BE_V_ROW, v.lx, v.lx, 0, NULL);
                drop_temp(T, &t);
            }
            if (widened)
                drop_temp(T, &wide);
        } else {
            v = body;
            if ((rn->cls == BE_V_TILE || body.cls == BE_V_CONST) && body.cls != rn->cls &&
                be_widen(T, &body, rn->cls, &v))
                return -1;
            /* a per-row node that read only a broadcast stick (exp of a [1, 1]
             * expanded over the rows): the stick repeated on every row first */
            if (rn->cls == BE_V_ROW && body.cls == BE_V_COL && be_widen(T, &body, BE_V_TILE, &v))
                return -1;
            if (rn->cls == BE_V_ROW && v.cls == BE_V_TILE) {
                /* a per-row node that read a broadcast stick (a 0-d operand
                 * loads as COL): every lane holds the row's value; the
                 * stores and later readers take a ROW's lane */
                v.cls = BE_V_ROW;
                v.lane = 0;
            }
        }
        nv[j < IR_KERNEL_NODES ? j : IR_KERNEL_NODES - 1] = v;
        /* later nodes read this node's buffer through loads: bind them */
        for (int i = rn->ol0; i < rn->ol0 + rn->nol; i++)
            be_bind(T, k->outloads[i], &v);
        int cell = cell_of(T, &v);
        if (cell >= 0 && !T->counting && (rn->dram || rn->res))
            T->refs[cell]++; /* read by the stores at the chunk's end: never given back */
        if (note_read(T, rn->expr)) /* the node has read its expression's value */
            return -1;
        drop_temp(T, &v); /* v without a reader left */
    }
    return 0;
}

/* Count the expression nodes of e not seen before (seen: per arena id):
 * the evaluator gives each distinct node at most one temp, a few two
 * (sub and div with a broadcast first operand, where, min reductions). */
typedef struct {
    char *seen;
    const ir_expr *base;
    int64_t n;
} rk_count;

static void count_new(void *ctx, const ir_expr *x)
{
    rk_count *rc = ctx;
    size_t id = (size_t)(x - rc->base);
    if (rc->seen[id] || x->kind == IR_E_LOAD || x->kind == IR_E_CONST)
        return;
    rc->seen[id] = 1;
    rc->n += x->kind == IR_E_WHERE || (x->kind == IR_E_OP && (x->op == IR_SUB || x->op == IR_DIV)) ? 2 : 1;
}

int64_t be_count_temps(ir_prog *p, int e, char *seen)
{
    rk_count rc = {seen, p->A.e, 0};
    ir_expr_walk(&p->A, e, count_new, &rc);
    return rc.n;
}

void rk_free(rk_plan *k)
{
    free(k->nodes);
    free(k->loads);
    free(k->reads);
    free(k->outloads);
}

/* A gather (IR_E_ILOAD) the back half emits as dma.gather: whole rows of
 * a 2-D table sticked on its rows, walked along the kernel's columns, at
 * row numbers read directly (casts aside) from an integer input, one per
 * row of the kernel.  The walk is pre-order: the gather is recorded before
 * its row-number load, which be_collect_load then skips. */
static void collect_gather(rk_walk *w, const ir_expr *x)
{
    rk_plan *k = w->k;
    be_ctx *c = k->c;
    const ir_prog *p = c->p;
    int e = (int)(x - p->A.e);
    for (int i = 0; i < k->nl; i++)
        if (k->loads[i].e == e)
            return;
    const ir_buf *W = &p->bufs[x->buf];
    const be_layout *L = &c->lay[x->buf];
    const int ids = ir_gather_ids(&p->A, x);
    const ir_expr *ix = ids >= 0 ? &p->A.e[ids] : NULL;
    int has_row = 0;
    for (int i = 0; i < k->rsp.nv; i++)
        has_row |= x->idx.coef[k->rsp.var[i]] != 0;
    const char *why = NULL;
    if (W->type.rank != 2 || !L->dram || L->stick_dim != 1 || L->f32)
        why = "the table is not a 2-D tensor in DRAM sticked on its rows";
    else if (x->stride != W->type.shape[1] || x->idx.offset != 0 || x->idx.coef[k->colvar] != 1 || has_row ||
             k->cols > W->type.shape[1])
        why = "it does not read whole rows along the kernel's columns";
    else if (!ix || ix->kind != IR_E_LOAD || !c->lay[ix->buf].f32 || w->produced[ix->buf])
        why = "the row numbers are not read directly from an integer input";
    else if (ix->idx.coef[k->colvar] != 0)
        why = "the row numbers vary along the kernel's columns";
    if (why) {
        be_error(c, k->K, "gather of %s: %s (not supported yet)", W->name, why);
        w->failed = 1;
        return;
    }
    rk_load G = {0};
    G.e = e;
    G.cls = BE_V_TILE;
    G.gather = 1;
    G.ids = ids;
    k->loads = ir_xgrow(k->loads, &(int){k->nl}, k->nl + 1, sizeof *k->loads);
    k->loads[k->nl++] = G;
}

/* Does expression x read load e other than as a gather's row numbers? */
static int reads_plain(const ir_arena *A, int x, int e, char *seen)
{
    if (x < 0 || seen[x])
        return 0;
    seen[x] = 1;
    const ir_expr *X = &A->e[x];
    const int ids = X->kind == IR_E_ILOAD ? ir_gather_ids(A, X) : -1;
    return x == e || (ids != e && reads_plain(A, X->a, e, seen)) || reads_plain(A, X->b, e, seen) ||
           reads_plain(A, X->c, e, seen);
}

/* A gather's row numbers e, also read elementwise by the node being
 * collected (a mask of the ids beside their embedding)? */
static int gather_ids_read(const rk_plan *k, int e)
{
    const ir_prog *p = k->c->p;
    if (!k->c->lay[p->A.e[e].buf].f32 || !k->nn)
        return 0;
    char *seen = calloc((size_t)p->A.n + 1, 1);
    if (!seen)
        abort();
    int r = reads_plain(&p->A, p->nodes[k->nodes[k->nn - 1].node].body, e, seen);
    free(seen);
    return r;
}

void be_collect_load(void *ctx, const ir_expr *x)
{
    rk_walk *w = ctx;
    rk_plan *k = w->k;
    if (!w->failed && x->kind == IR_E_ILOAD && !w->produced[x->buf]) {
        collect_gather(w, x);
        return;
    }
    if (w->failed || x->kind != IR_E_LOAD || w->produced[x->buf])
        return;
    int e = (int)(x - k->c->p->A.e);
    /* the node being collected is evaluated over rows and lanes (a row op,
     * or a reduction's body), not once per row */
    const rk_node *cur = k->K->kind != IR_MATMUL && k->nn ? &k->nodes[k->nn - 1] : NULL;
    int row_op = cur && (cur->cls == BE_V_TILE || k->c->p->nodes[cur->node].kind == IR_REDUCTION);
    for (int i = 0; i < k->nl; i++)
        if (k->loads[i].e == e || (k->loads[i].gather && k->loads[i].ids == e && !gather_ids_read(k, e))) {
            if (k->loads[i].row_tile && !row_op) {
                be_error(k->c, k->K, "%s: a loop strides inside its stick dimension (needs a restickify)",
                         k->c->p->bufs[x->buf].name);
                w->failed = 1;
            }
            return;
        }
    /* a gather's row numbers (fp32): staged, then rounded to DL16 in LX
     * (rk_gather), which intexact.c proved exact for this reader */
    const int rounded = k->c->lay[x->buf].f32;
    if (rounded && (k->c->p->bufs[x->buf].kind == IR_BUF_COMPUTED || !ir_gather_rows(k->c->p, x->buf))) {
        be_error(k->c, k->K, "%s holds integers (fp32 on the device): only a gather reads them (not supported yet)",
                 k->c->p->bufs[x->buf].name);
        w->failed = 1;
        return;
    }
    rk_load L = {0};
    L.e = e;
    int has_col = x->idx.coef[k->colvar] != 0, has_row = 0;
    for (int i = 0; i < k->rsp.nv; i++)
        has_row |= x->idx.coef[k->rsp.var[i]] != 0;
    L.cls = has_col ? (has_row ? BE_V_TILE : BE_V_COL) : has_row ? BE_V_ROW : BE_V_NONE;
    char why[256] = "";
    if (L.cls == BE_V_NONE && k->scalars && !rounded) { /* a scalar: its stick, then every lane of a COL value */
        if (be_view_of(k->c, x->buf, &x->idx, k->nvars, -1, NULL, &L.v, why, sizeof why)) {
            be_error(k->c, k->K, "%s", why);
            w->failed = 1;
            return;
        }
        L.cls = BE_V_COL;
        L.scalar = 1;
        k->loads = ir_xgrow(k->loads, &(int){k->nl}, k->nl + 1, sizeof *k->loads);
        k->loads[k->nl++] = L;
        return;
    }
    if (rounded && (L.cls == BE_V_NONE || k->K->kind == IR_MATMUL)) {
        be_error(k->c, k->K, "%s holds integers (fp32 on the device): read once per row or in a product's epilogue "
                 "(not supported yet)", k->c->p->bufs[x->buf].name);
        w->failed = 1;
        return;
    }
    if (L.cls == BE_V_NONE) {
        be_error(k->c, k->K, "load of one element of %s for every row (not supported yet)", k->c->p->bufs[x->buf].name);
        w->failed = 1;
        return;
    }
    /* a tile the same for consecutive rows (the innermost row loop does not
     * move it: a cat's one new row beside a cache's 512, an attention mask
     * over a head's rows) would be read from DRAM again for each row, the
     * same sticks over and over: staged instead, a chunk reads each of its
     * sticks once (the Llama-8B decode's cat of the K cache and the new
     * key, 90,289 -> 30,921 cycles).  One that moves with the innermost
     * loop (rope's table over positions, repeated per head) is read as it
     * is: a chunk's rows read different sticks anyway, and staging them
     * made serve_tiny's prefill rope kernel twice as slow. */
    const int inner = k->rsp.nv - 1;
    const int repeats = inner >= 0 && k->rsp.ext[inner] > 1 && x->idx.coef[k->rsp.var[inner]] == 0;
    if (L.cls == BE_V_TILE && repeats && k->K->kind != IR_MATMUL && k->c->lay[x->buf].dram) {
        L.staged = 1;
    } else if (rounded ||
               be_view_of(k->c, x->buf, &x->idx, k->nvars, has_col ? k->colvar : -1, NULL, &L.v, why, sizeof why) ||
        (has_col && !be_lane_fits(k->c, x->buf, &x->idx, k->cols))) {
        /* a per-column operand of a row kernel whose columns run past its
         * stick dimension (a layer norm's weight over two dimensions; every
         * load of a kernel of one row, such as a whole (5, 5, 5) tensor
         * reduced or flattened), or a per-row operand whose rows lie inside
         * its sticks (a per-channel batch norm statistic over an image's
         * rows): read as a tile, staged for each row (a per-row value
         * repeated across the lanes), in nodes evaluated over rows and
         * lanes only: a reduction's per-row ops take one value per row, and
         * a tile there came out wrong (tests: a reduction then a per-row
         * add of an operand inside its sticks is refused) */
        L.row_tile = L.cls == BE_V_ROW && row_op;
        if ((L.cls == BE_V_COL || L.row_tile) && k->K->kind != IR_MATMUL)
            L.cls = BE_V_TILE;
        if (L.cls != BE_V_TILE || !k->c->lay[x->buf].dram) {
            be_error(k->c, k->K, "%s", why[0] ? why : "a load runs past its stick dimension (needs a restickify)");
            w->failed = 1;
            return;
        }
        L.staged = 1; /* restickified in LX by sfp.rst */
    }
    if (has_col && !L.staged && L.v.groups < k->G) {
        be_error(k->c, k->K, "%s has fewer sticks than the kernel's columns", k->c->p->bufs[x->buf].name);
        w->failed = 1;
        return;
    }
    k->loads = ir_xgrow(k->loads, &(int){k->nl}, k->nl + 1, sizeof *k->loads);
    k->loads[k->nl++] = L;
}

int be_rows_aligned(const rk_plan *k, int buf, const be_view *v)
{
    const be_ctx *c = k->c;
    const be_layout *L = &c->lay[buf];
    const gr_ttype *T = &c->p->bufs[buf].type;
    if (!L->dram || L->f32 || v->lane || v->base != (int64_t)L->off || k->rows != L->rows || k->G != L->groups ||
        (L->groups > 1 && v->gstride != L->rows * c->t.stick) || !T->rank || k->cols != T->shape[L->stick_dim])
        return 0;
    int64_t st = 1;
    for (int i = k->rsp.nv - 1; i >= 0; i--) {
        if (k->rsp.ext[i] > 1 && v->rs[k->rsp.var[i]] != st)
            return 0;
        st *= k->rsp.ext[i];
    }
    return 1;
}
