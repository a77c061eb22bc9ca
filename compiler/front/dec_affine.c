/* dec_affine.c: an index known at compile time that is affine in the
 * output coordinates (an arange scaled, shifted, broadcast: strided
 * columns, patches, a flip) reads the table as a strided view, a copy at
 * worst, where one-hot costs the table's rows per element.  The index is
 * evaluated here from the source graph (positions and constants only) and
 * every value is checked against the affine form, so nothing is assumed
 * from the ops' shapes. */
#include "decompose.h"

#include <stdlib.h>
#include <string.h>

#define KMAX_ELEMS (1 << 16) /* an index evaluated at most this large */
#define KMAX_DEPTH 48

typedef struct {
    int rank;
    int64_t shape[GR_MAX_RANK];
    int64_t *v;
} ktensor;

static int64_t knumel(int rank, const int64_t *shape)
{
    int64_t m = 1;
    for (int i = 0; i < rank; i++)
        m *= shape[i];
    return m;
}

/* Flat index i of a tensor of the given shape, as coordinates. */
static void unravel(int64_t i, int rank, const int64_t *shape, int64_t *co)
{
    for (int d = rank - 1; d >= 0; d--) {
        co[d] = shape[d] ? i % shape[d] : 0;
        i = shape[d] ? i / shape[d] : 0;
    }
}

/* a's flat index for coordinates co of a broadcast result of rank r. */
static int64_t bcast_at(const ktensor *a, int r, const int64_t *co)
{
    int64_t f = 0;
    for (int d = 0; d < a->rank; d++)
        f = f * a->shape[d] + (a->shape[d] == 1 ? 0 : co[r - a->rank + d]);
    return f;
}

/* Whether a broadcasts to t (else reading it at t's coordinates would
 * pass its end: a declared shape is not trusted). */
static int bcasts_to(const ktensor *a, const gr_ttype *t)
{
    int ok = a->rank <= t->rank;
    for (int d = 0; ok && d < a->rank; d++)
        ok = a->shape[d] == 1 || a->shape[d] == t->shape[t->rank - a->rank + d];
    return ok;
}

static int kalloc(ktensor *k, const gr_ttype *t)
{
    int64_t m = knumel(t->rank, t->shape);
    if (m > KMAX_ELEMS)
        return 0;
    k->rank = t->rank;
    memcpy(k->shape, t->shape, sizeof k->shape);
    k->v = malloc((size_t)(m ? m : 1) * sizeof *k->v);
    if (!k->v)
        abort();
    return 1;
}

/* An integer argument (a number, not a tensor) in *x. */
static int int_arg(const gr_node *n, int pos, const char *key, int64_t dflt, int64_t *x)
{
    const gr_arg *a = gr_node_arg(n, pos, key);
    *x = dflt;
    if (!a || a->kind == GR_ARG_NONE)
        return 1;
    if (a->kind != GR_ARG_INT)
        return 0;
    *x = a->i;
    return 1;
}

static int keval(dctx *c, int v, ktensor *out, int depth);

/* The operand at pos: a tensor evaluated, or an integer as a 0-d one. */
static int operand(dctx *c, const gr_node *n, int pos, const char *key, ktensor *k, int depth)
{
    const gr_arg *a = gr_node_arg(n, pos, key);
    if (a && a->kind == GR_ARG_VALUE)
        return keval(c, a->value, k, depth);
    gr_ttype t0 = {.rank = 0};
    int64_t x;
    if (!a || !int_arg(n, pos, key, 0, &x) || !kalloc(k, &t0))
        return 0;
    k->v[0] = x;
    return 1;
}

/* An elementwise op (its row of opsem.c's table) over its operands,
 * broadcast to t. */
static int eval_elementwise(dctx *c, const gr_node *n, const ir_opsem *s, const gr_ttype *t, ktensor *out,
                            int depth)
{
    ktensor a = {0}, b = {0};
    int64_t alpha = 1, co[GR_MAX_RANK];
    int ok = (!(s->flags & IR_SEM_ALPHA) || int_arg(n, 2, "alpha", 1, &alpha)) &&
             operand(c, n, 0, "self", &a, depth) && (s->arity == 1 || operand(c, n, 1, "other", &b, depth)) &&
             kalloc(out, t);
    ok = ok && bcasts_to(&a, t) && (s->arity == 1 || bcasts_to(&b, t));
    for (int64_t i = 0; ok && i < knumel(t->rank, t->shape); i++) {
        unravel(i, t->rank, t->shape, co);
        const int64_t y = s->arity == 1 ? 0 : b.v[bcast_at(&b, t->rank, co)];
        ok = ir_opsem_i64(s, a.v[bcast_at(&a, t->rank, co)], y, alpha, &out->v[i]);
    }
    free(a.v);
    free(b.v);
    return ok;
}

/* clamp(self, min, max) with integer bounds: clamp_max(clamp_min(self,
 * min), max), as PyTorch (max wins where min > max). */
static int eval_clamp(dctx *c, const gr_node *n, ktensor *out, int depth)
{
    int64_t lo, hi;
    const gr_arg *l = gr_node_arg(n, 1, "min"), *h = gr_node_arg(n, 2, "max");
    const ir_opsem *mx = ir_opsem_aten("clamp_min"), *mn = ir_opsem_aten("clamp_max");
    if (!int_arg(n, 1, "min", INT64_MIN, &lo) || !int_arg(n, 2, "max", INT64_MAX, &hi) || (!l && !h) ||
        !keval(c, n->args[0].value, out, depth))
        return 0;
    for (int64_t i = 0; i < knumel(out->rank, out->shape); i++)
        if (!mx->i64(out->v[i], lo, &out->v[i]) || !mn->i64(out->v[i], hi, &out->v[i]))
            return 0;
    return 1;
}

static int eval_arange(const gr_node *n, const gr_ttype *t, ktensor *out)
{
    int64_t x[3] = {0, 0, 1};
    int nums = 0;
    for (int i = 0; i < n->nargs && !n->args[i].key; i++)
        if (n->args[i].kind != GR_ARG_INT || nums >= 3)
            return 0;
        else
            x[nums++] = n->args[i].i;
    int64_t start = nums >= 2 ? x[0] : 0, step = nums == 3 ? x[2] : 1;
    if (!nums || t->rank != 1 || !kalloc(out, t))
        return 0;
    int ok = 1;
    for (int64_t i = 0; ok && i < t->shape[0]; i++)
        ok = !__builtin_mul_overflow(i, step, &out->v[i]) && !__builtin_add_overflow(start, out->v[i], &out->v[i]);
    return ok;
}

/* Ops that move elements: out coordinate co reads self's coordinate sc. */
static int eval_moved(dctx *c, const gr_node *n, const gr_ttype *t, ktensor *out, int depth)
{
    ktensor a = {0};
    int64_t dims[GR_MAX_RANK], co[GR_MAX_RANK], sc[GR_MAX_RANK], d0 = 0, d1 = 0, start = 0, step = 1;
    int nd = 0;
    const char *op = n->base;
    int ok = keval(c, n->args[0].value, &a, depth) && a.rank == t->rank && kalloc(out, t);
    if (ok && !strcmp(op, "permute"))
        ok = gr_arg_ints(gr_node_arg(n, 1, "dims"), dims) == t->rank;
    else if (ok && !strcmp(op, "flip"))
        ok = (nd = gr_arg_ints(gr_node_arg(n, 1, "dims"), dims)) >= 0;
    else if (ok && !strcmp(op, "transpose"))
        ok = int_arg(n, 1, "dim0", 0, &d0) && int_arg(n, 2, "dim1", 0, &d1);
    else if (ok && !strcmp(op, "t"))
        d1 = t->rank > 1;
    else if (ok && !strcmp(op, "slice"))
        ok = int_arg(n, 1, "dim", 0, &d0) && int_arg(n, 2, "start", 0, &start) && int_arg(n, 4, "step", 1, &step) &&
             step > 0;
    int r = t->rank ? t->rank : 1;
    d0 = (d0 % r + r) % r, d1 = (d1 % r + r) % r;
    if (ok && !strcmp(op, "slice")) { /* as PyTorch: from the end, then clamped to [0, size] */
        const int64_t size = a.shape[d0];
        start = start < 0 ? (start < -size ? 0 : start + size) : start > size ? size : start;
    }
    for (int64_t i = 0; ok && i < knumel(t->rank, t->shape); i++) {
        unravel(i, t->rank, t->shape, co);
        for (int d = 0; d < t->rank; d++)
            sc[d] = co[d];
        if (!strcmp(op, "permute"))
            for (int d = 0; d < t->rank; d++)
                sc[(dims[d] % r + r) % r] = co[d];
        for (int k = 0; k < nd; k++)
            sc[(dims[k] % r + r) % r] = a.shape[(dims[k] % r + r) % r] - 1 - co[(dims[k] % r + r) % r];
        if (!strcmp(op, "transpose") || !strcmp(op, "t"))
            sc[d0] = co[d1], sc[d1] = co[d0];
        if (!strcmp(op, "slice"))
            sc[d0] = start + co[d0] * step;
        int64_t f = 0;
        for (int d = 0; d < a.rank; d++) {
            ok &= sc[d] >= 0 && sc[d] < a.shape[d]; /* a declared shape the operand does not have */
            f = f * a.shape[d] + sc[d];
        }
        out->v[i] = ok ? a.v[f] : 0;
    }
    free(a.v);
    return ok;
}

/* Whether k's values are those of dtype dt (a cast to i32, or i32
 * arithmetic, past its range would wrap). */
static int fits(gr_dtype dt, const ktensor *k)
{
    for (int64_t i = 0; dt == GR_I32 && i < knumel(k->rank, k->shape); i++)
        if (k->v[i] < INT32_MIN || k->v[i] > INT32_MAX)
            return 0;
    return 1;
}

/* The integer values of source value v, if it is made from positions and
 * integer constants alone by the ops below; 0 if not (out is then empty). */
static int keval(dctx *c, int v, ktensor *out, int depth)
{
    static const char *const moved[] = {"permute", "flip", "transpose", "t", "slice", NULL};
    const gr_value *val = &c->g->values[v];
    out->v = NULL;
    if (val->kind != GR_VAL_NODE || val->ntuple || dc_is_float(val->type.dtype) || val->type.dtype == GR_BOOL ||
        depth > KMAX_DEPTH || knumel(val->type.rank, val->type.shape) > KMAX_ELEMS)
        return 0;
    const gr_node *n = &c->g->nodes[val->node];
    const gr_ttype *t = &val->type;
    const int first_val = n->nargs && n->args[0].kind == GR_ARG_VALUE;
    int ok = 0;
    if (!strcmp(n->base, "arange"))
        ok = eval_arange(n, t, out);
    const unsigned same = IR_OP_RESHAPE | IR_OP_ALIAS | IR_OP_COPY | IR_OP_CAST; /* its values in row-major order */
    if (first_val && (ir_op_attrs(n->base) & same) && keval(c, n->args[0].value, out, depth + 1)) {
        ok = knumel(out->rank, out->shape) == knumel(t->rank, t->shape);
        out->rank = t->rank;
        memcpy(out->shape, t->shape, sizeof out->shape);
    }
    for (int i = 0; moved[i] && first_val; i++)
        if (!strcmp(n->base, moved[i]))
            ok = eval_moved(c, n, t, out, depth + 1);
    const ir_opsem *sem = ir_opsem_aten(n->base);
    if (sem && sem->i64 && (sem->arity == 2 || first_val))
        ok = eval_elementwise(c, n, sem, t, out, depth + 1);
    if (!strcmp(n->base, "clamp") && first_val)
        ok = eval_clamp(c, n, out, depth + 1);
    if (!strcmp(n->base, "expand") && first_val) {
        ktensor a;
        int64_t co[GR_MAX_RANK];
        if ((ok = keval(c, n->args[0].value, &a, depth + 1) && bcasts_to(&a, t) && kalloc(out, t)))
            for (int64_t i = 0; i < knumel(t->rank, t->shape); i++) {
                unravel(i, t->rank, t->shape, co);
                out->v[i] = a.v[bcast_at(&a, t->rank, co)];
            }
        free(a.v);
    }
    ok = ok && out->rank == t->rank && !memcmp(out->shape, t->shape, (size_t)t->rank * sizeof *t->shape) &&
         fits(t->dtype, out);
    if (!ok) {
        free(out->v);
        out->v = NULL;
    }
    return ok;
}

/* Whether off (over shape) is base + sum stride[d] * co[d] exactly. */
static int affine_of(const int64_t *off, int rank, const int64_t *shape, int64_t *base, int64_t *stride)
{
    int64_t m = knumel(rank, shape), co[GR_MAX_RANK], unit = 1;
    if (!m)
        return 0;
    *base = off[0];
    for (int d = rank - 1; d >= 0; d--) {
        stride[d] = shape[d] > 1 ? off[unit] - off[0] : 0;
        unit *= shape[d];
    }
    for (int64_t i = 0; i < m; i++) {
        unravel(i, rank, shape, co);
        int64_t want = *base;
        for (int d = 0; d < rank; d++)
            want += stride[d] * co[d];
        if (off[i] != want)
            return 0;
    }
    return 1;
}

/* x's elements at flat offsets base + sum stride[d] * co[d] (row-major
 * over x), as views: a slice of the flattened x, one unfold per dim that
 * moves (the windows' step is its stride), size-1 dims and zero strides
 * by reshape and expand, negative strides by a flip.  -1 if it needs
 * more dims than a tensor has. */
static int strided_view(dctx *c, int x, int rank, const int64_t *shape, const int64_t *stride, int64_t base)
{
    int64_t all = dc_numel((gr_ttype[]){dc_T(c, x)}), st[GR_MAX_RANK], flips[GR_MAX_RANK], kept[GR_MAX_RANK];
    int nflip = 0, m = 0;
    for (int d = 0; d < rank; d++) {
        st[d] = shape[d] > 1 ? stride[d] : 0;
        if (st[d] < 0) {
            base += st[d] * (shape[d] - 1);
            st[d] = -st[d];
            flips[nflip++] = d;
        }
        kept[d] = st[d] ? shape[d] : 1;
        m += st[d] != 0;
    }
    if (m + 1 > GR_MAX_RANK)
        return -1;
    int64_t extent = 1;
    for (int d = 0; d < rank; d++)
        extent += st[d] * (shape[d] - 1);
    int y = dc_reshape(c, x, 1, &all);
    if (base || extent != all)
        y = dc_slice(c, y, 0, base, base + extent, 1);
    for (int d = 0, k = 0; d < rank; d++)
        if (st[d]) {
            extent -= st[d] * (shape[d] - 1);
            gr_ttype t = dc_T(c, y);
            t.shape[k] = shape[d];
            t.shape[t.rank++] = extent;
            y = DC_EMIT(c, "aten.unfold.default", t, da_val(y), da_int(k), da_int(extent), da_int(st[d]));
            k++;
        }
    y = dc_expand(c, dc_reshape(c, y, rank, kept), rank, shape);
    return nflip ? dc_flip(c, y, nflip, flips) : y;
}

/* Row-major strides of t. */
static void row_major(const gr_ttype *t, int64_t *st)
{
    int64_t s = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        st[d] = s;
        s *= t->shape[d];
    }
}

/* index.Tensor(x, indices) with every index tensor known: their offsets
 * into x's indexed dims (negative ones wrapped) over the broadcast shape,
 * affine, with x's other dims around them (before them all when the
 * indexed dims are apart, as PyTorch). */
int dc_affine_index(dctx *c, const gr_node *n, int x, int *out)
{
    const gr_arg *l = gr_node_arg(n, 1, "indices");
    gr_ttype t = dc_T(c, x), tb = {.rank = 0};
    ktensor k[GR_MAX_RANK] = {{0}};
    int64_t st[GR_MAX_RANK], co[GR_MAX_RANK], base, bst[GR_MAX_RANK], size[GR_MAX_RANK], ost[GR_MAX_RANK];
    int dims[GR_MAX_RANK], nk = 0, ok = l && l->kind == GR_ARG_LIST && l->nitems <= t.rank, r = 0, apart = 0;
    for (int i = 0; ok && i < l->nitems; i++)
        if (l->items[i].kind == GR_ARG_VALUE) {
            gr_ttype ti = c->g->values[l->items[i].value].type, prev = tb;
            apart |= nk && dims[nk - 1] != i - 1;
            dims[nk] = i;
            ok = ti.dtype != GR_BOOL && keval(c, l->items[i].value, &k[nk++], 0) && !ir_broadcast(&prev, &ti, &tb);
        }
    int64_t m = knumel(tb.rank, tb.shape), *off = ok && nk && m <= KMAX_ELEMS ? calloc((size_t)m + 1, sizeof *off) : NULL;
    row_major(&t, st);
    for (int64_t j = 0; off && j < m; j++) {
        unravel(j, tb.rank, tb.shape, co);
        for (int q = 0; q < nk; q++) {
            int64_t v = k[q].v[bcast_at(&k[q], tb.rank, co)], e = t.shape[dims[q]];
            v += v < 0 ? e : 0;
            ok &= v >= 0 && v < e;
            off[j] += ok ? st[dims[q]] * v : 0;
        }
    }
    ok = ok && off && affine_of(off, tb.rank, tb.shape, &base, bst) && t.rank - nk + tb.rank <= GR_MAX_RANK;
    for (int i = 0; ok && i <= t.rank; i++) {
        if (i == (apart ? 0 : dims[0]))
            for (int b = 0; b < tb.rank; b++)
                size[r] = tb.shape[b], ost[r++] = bst[b];
        int indexed = 0;
        for (int q = 0; q < nk; q++)
            indexed |= dims[q] == i;
        if (i < t.rank && !indexed)
            size[r] = t.shape[i], ost[r++] = st[i];
    }
    free(off);
    for (int q = 0; q < nk; q++)
        free(k[q].v);
    return ok && (out[0] = strided_view(c, x, r, size, ost, base)) >= 0;
}

/* index_select(x, d, index) with the index known and affine. */
int dc_affine_index_select(dctx *c, const gr_node *n, int x, int d, int *out)
{
    const gr_arg *a = gr_node_arg(n, 2, "index");
    gr_ttype t = dc_T(c, x);
    ktensor k;
    int64_t st[GR_MAX_RANK], base, s1, size[GR_MAX_RANK];
    if (!a || a->kind != GR_ARG_VALUE || !t.rank || !keval(c, a->value, &k, 0))
        return 0;
    int64_t m = knumel(k.rank, k.shape);
    int ok = k.rank <= 1;
    for (int64_t i = 0; i < m; i++)
        ok &= k.v[i] >= 0 && k.v[i] < t.shape[d];
    ok = ok && affine_of(k.v, 1, &m, &base, &s1);
    free(k.v);
    if (!ok)
        return 0;
    row_major(&t, st);
    memcpy(size, t.shape, sizeof size);
    size[d] = m;
    base *= st[d];
    st[d] *= s1;
    return (out[0] = strided_view(c, x, t.rank, size, st, base)) >= 0;
}

/* gather(x, d, index) with the index known: offsets over the index's
 * shape, affine. */
int dc_affine_gather(dctx *c, const gr_node *n, int x, int d, int *out)
{
    const gr_arg *a = gr_node_arg(n, 2, "index");
    gr_ttype t = dc_T(c, x);
    ktensor k;
    int64_t st[GR_MAX_RANK], co[GR_MAX_RANK], base, ost[GR_MAX_RANK];
    if (!a || a->kind != GR_ARG_VALUE || !keval(c, a->value, &k, 0))
        return 0;
    int ok = k.rank == t.rank;
    row_major(&t, st);
    for (int64_t j = 0; ok && j < knumel(k.rank, k.shape); j++) {
        unravel(j, k.rank, k.shape, co);
        ok = k.v[j] >= 0 && k.v[j] < t.shape[d];
        for (int i = 0; i < t.rank; i++)
            ok &= i == d || co[i] < t.shape[i];
        k.v[j] *= st[d];
        for (int i = 0; i < t.rank; i++)
            k.v[j] += i == d ? 0 : st[i] * co[i];
    }
    ok = ok && affine_of(k.v, k.rank, k.shape, &base, ost);
    free(k.v);
    return ok && (out[0] = strided_view(c, x, k.rank, k.shape, ost, base)) >= 0;
}
