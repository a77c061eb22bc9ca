/* siblings.c: the fuse_siblings pass.  Matrix products that read the same
 * A (the q, k and v projections of one input, an MLP's gate and up) and
 * whose B are parameters read as W^T become one product over the
 * parameters concatenated along n, which reads A once and pays one
 * kernel's fill and drain; their bias adds, alike but for the bias, become
 * one node over the concatenated biases, and every reader of a sibling's
 * result reads its columns of the one result (docs/compiler.md, "Sibling
 * products").  A concatenated parameter has no tensor of its own: the
 * layout pass lays its parts one after another (backend.c), which is the
 * concatenation only when each part fills whole sticks, so the pass runs
 * only for a target chip. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* One sibling: a product and what it feeds. */
typedef struct {
    int mm;      /* the product node */
    int mmout;   /* its result */
    int tail;    /* its bias add (its only reader, pointwise over [M, N]), or -1 */
    int bias;    /* the tail's [N] parameter, or -1 */
    int out;     /* what the siblings' readers read: the tail's result or the product's */
    int64_t n;   /* N */
    int canon;   /* the tail's body with acc for the product and the first sibling's bias: equal for alike tails */
    int group;   /* the first sibling of its group */
    int outp;    /* out is a graph output */
} sib;

typedef struct {
    ir_prog *p;
    int *readers;  /* per buffer: live nodes reading it */
    int64_t lanes; /* elements of a DL16 stick on the target */
    sib *s;
    int ns;
} sib_ctx;

static int is_param(const sib_ctx *c, int b)
{
    const ir_buf *B = &c->p->bufs[b];
    if (B->kind != IR_BUF_PARAM || B->cdata || B->nparts || B->output || c->readers[b] != 1)
        return 0;
    for (int u = 0; u < c->p->nupdates; u++) /* a state the program updates stays whole */
        if (!strcmp(c->p->updates[u].state, B->name))
            return 0;
    return 1;
}

/* idx (over loops of extents ranges) reads a [M, N] buffer at N*m + n;
 * the same element in a [M, nt] buffer at column o + n.  -1 when a term
 * of idx does not stay within one row or walk whole rows. */
static int recolumn(const ir_index *in, int nvars, const int64_t *ranges, int64_t n, int64_t nt, int64_t o,
                    ir_index *out)
{
    const ir_index copy = *in, *idx = &copy; /* out may be in */
    int64_t on = (idx->offset % n + n) % n, lo = on, hi = on;
    *out = ir_idx_const((idx->offset - on) / n * nt + on + o);
    for (int v = 0; v < nvars; v++) {
        int64_t cf = idx->coef[v], span = cf * (ranges[v] - 1);
        if (cf % n == 0) {
            out->coef[v] = cf / n * nt;
            continue;
        }
        out->coef[v] = cf;
        if (span < 0)
            lo += span;
        else
            hi += span;
    }
    return lo >= 0 && hi < n ? 0 : -1;
}

/* A pointwise reader's flat loop v that walks whole rows of n (a load's
 * coefficient c on it divides n, its range whole rows): split in two, rows
 * then n / c within a row (v = (n / c) * v_hi + v_lo), its terms stay
 * within a row.  An index after that split. */
static ir_index split_idx(const ir_index *x, int nvars, int v, int64_t n, int64_t c)
{
    ir_index y = ir_idx_const(x->offset);
    for (int w = 0; w < nvars; w++)
        y.coef[w + (w > v)] = x->coef[w];
    y.coef[v] = x->coef[v] * (n / c);
    y.coef[v + 1] = x->coef[v];
    return y;
}

static void split_ranges(const ir_node *N, int v, int64_t n, int64_t c, int64_t *ranges)
{
    for (int w = 0; w < N->nvars; w++)
        ranges[w + (w > v)] = N->ranges[w];
    ranges[v] = N->ranges[v] * c / n;
    ranges[v + 1] = n / c;
}

/* The loop of pointwise node N that a split would make idx stay within
 * rows of n, its coefficient in *c; -1 if none. */
static int split_var(const ir_node *N, const ir_index *idx, int64_t n, int64_t *c)
{
    for (int v = 0; N->kind == IR_POINTWISE && N->nvars < IR_MAX_VARS && v < N->nvars; v++) {
        *c = idx->coef[v];
        if (*c > 0 && *c < n && n % *c == 0 && N->ranges[v] * *c % n == 0)
            return v;
    }
    return -1;
}

/* How node N reads buffer b ([M, n]): -2 through indices recolumn takes,
 * v >= 0 when it does once its loop v is split (with coefficient *c),
 * -1 otherwise. */
static int reads_as_rows(const ir_node *N, int b, int64_t n, int64_t *c)
{
    int split = -2;
    for (int r = 0; !N->dead && r < N->nreads && split == -2; r++) {
        const ir_dep *d = &N->reads[r];
        ir_index x;
        if (d->buf == b && (N->kind == IR_HOST || d->star)) /* read whole, or anywhere */
            return -1;
        if (d->buf == b && recolumn(&d->idx, N->nvars, N->ranges, n, 2 * n, 0, &x))
            split = split_var(N, &d->idx, n, c);
    }
    if (split < 0)
        return split;
    int64_t ranges[IR_MAX_VARS];
    split_ranges(N, split, n, *c, ranges);
    for (int r = 0; r < N->nreads; r++) {
        ir_index x = split_idx(&N->reads[r].idx, N->nvars, split, n, *c);
        if (N->reads[r].buf == b && (N->reads[r].star || recolumn(&x, N->nvars + 1, ranges, n, 2 * n, 0, &x)))
            return -1;
    }
    return split;
}

/* Every reader of buffer b reads it through indices recolumn takes, some
 * once a loop is split. */
static int readers_recolumn(const sib_ctx *c, int b, int64_t n)
{
    int64_t cf;
    for (int i = 0; i < c->p->nnodes; i++)
        if (reads_as_rows(&c->p->nodes[i], b, n, &cf) == -1)
            return 0;
    return 1;
}

/* Reader i of sibling result b split where reads_as_rows says. */
static void split_reader(ir_prog *p, int i, int b, int64_t n)
{
    const ir_node *N = &p->nodes[i];
    int64_t c, ranges[IR_MAX_VARS];
    const int v = reads_as_rows(N, b, n, &c);
    if (v < 0)
        return;
    split_ranges(N, v, n, c, ranges);
    ir_index map[IR_MAX_VARS];
    for (int w = 0; w < N->nvars; w++)
        map[w] = ir_idx_var(w + (w > v));
    map[v].coef[v] = n / c;
    map[v].coef[v + 1] = 1;
    ir_node_remap(p, i, N->nvars + 1, ranges, 0, map);
    ir_node_redeps(p, i);
}

/* The loads a tail may hold: the product's result at its own element and
 * one [N] parameter at the column.  The canonical body stands acc for the
 * first and the column's index value for the second (a tail holds
 * neither), so alike tails have one canonical body. */
typedef struct {
    const sib_ctx *c;
    int mmout, bias;
    int64_t n;
    int ok;
} tail_scan;

static int tail_load(void *ctx, ir_arena *A, const ir_expr *x)
{
    tail_scan *t = ctx;
    const ir_buf *B = &t->c->p->bufs[x->buf];
    ir_index col = ir_idx_var(1), elem = ir_idx_var(1);
    elem.coef[0] = t->n;
    if (x->buf == t->mmout && ir_idx_equal(&x->idx, &elem))
        return ir_acc(A, x->dtype);
    if (ir_idx_equal(&x->idx, &col) && B->type.rank == 1 && B->type.shape[0] == t->n && is_param(t->c, x->buf) &&
        (t->bias < 0 || t->bias == x->buf)) {
        t->bias = x->buf;
        return ir_cast(A, ir_indexval(A, &col), x->dtype);
    }
    t->ok = 0;
    return -1;
}

static void find_index(void *ctx, const ir_expr *x)
{
    if (x->kind != IR_E_LOAD && x->kind != IR_E_OP && x->kind != IR_E_CONST && x->kind != IR_E_CAST &&
        x->kind != IR_E_WHERE)
        *(int *)ctx = 1; /* an index value or a gather would differ between the siblings' columns */
}

/* The bias add reading product s->mm's result, if it is one. */
static void find_tail(sib_ctx *c, sib *s)
{
    ir_prog *p = c->p;
    const ir_node *M = &p->nodes[s->mm];
    s->tail = s->bias = -1;
    s->out = M->out;
    if (c->readers[M->out] != 1)
        return;
    int t = -1;
    for (int i = s->mm + 1; i < p->nnodes && t < 0; i++)
        for (int r = 0; !p->nodes[i].dead && r < p->nodes[i].nreads; r++)
            if (p->nodes[i].reads[r].buf == M->out)
                t = i;
    const ir_node *T = &p->nodes[t];
    ir_index st = ir_idx_var(1);
    st.coef[0] = s->n;
    int odd = 0;
    ir_expr_walk(&p->A, T->body, find_index, &odd);
    if (odd || T->kind != IR_POINTWISE || T->nvars != 2 || T->ranges[0] != M->ranges[0] || T->ranges[1] != s->n ||
        !ir_idx_equal(&T->store, &st))
        return;
    tail_scan ts = {c, M->out, -1, s->n, 1};
    int canon = ir_map_loads(&p->A, T->body, tail_load, &ts);
    if (!ts.ok)
        return;
    s->tail = t;
    s->bias = ts.bias;
    s->out = T->out;
    s->canon = canon;
}

/* Product node i as a sibling: a 2-D product whose B is a parameter
 * [N, K] read as W^T (no other reader), N whole aligned sticks, its
 * result (or its tail's) read only through indices recolumn takes.  A
 * result that is a graph output [M, N] stays the output's buffer: the
 * concatenated result is the outputs one after another (cat_outputs),
 * which needs the product's own result to be the output or to feed only
 * its tail (a model's heads: serve_tiny's ends_prefill). */
static int candidate(sib_ctx *c, int i, sib *s)
{
    const ir_prog *p = c->p;
    const ir_node *M = &p->nodes[i];
    if (M->dead || M->kind != IR_MATMUL || M->nbatch)
        return 0;
    int64_t n = M->ranges[1], k = M->ranges[2];
    const ir_buf *W = &p->bufs[M->b];
    ir_index bi = ir_idx_var(2), st = ir_idx_var(1), one = ir_idx_var(1);
    bi.coef[1] = k;
    st.coef[0] = n;
    if (M->b == M->a || !is_param(c, M->b) || W->type.rank != 2 || W->type.shape[0] != n ||
        W->type.shape[1] != k || !ir_idx_equal(&M->bidx, &bi) || n % c->lanes)
        return 0;
    if (!ir_idx_equal(&M->store, &st) && !(M->ranges[0] == 1 && ir_idx_equal(&M->store, &one)))
        return 0; /* one row's store has no term for m */
    s->mm = i;
    s->mmout = M->out;
    s->n = n;
    s->group = -1;
    find_tail(c, s);
    s->outp = p->bufs[s->out].output;
    if ((s->tail >= 0 && p->bufs[M->out].output) || (s->outp && p->bufs[s->out].type.rank != 2))
        return 0;
    return readers_recolumn(c, s->out, n);
}

static gr_dtype dtype_of(const ir_prog *p, int b)
{
    return b < 0 ? GR_NDTYPES : p->bufs[b].type.dtype;
}

/* s can join f's group: the same A at the same index, M and K, dtypes and
 * alike tails. */
static int alike(const ir_prog *p, const sib *f, const sib *s)
{
    const ir_node *F = &p->nodes[f->mm], *S = &p->nodes[s->mm];
    return F->a == S->a && ir_idx_equal(&F->aidx, &S->aidx) && F->ranges[0] == S->ranges[0] &&
           F->ranges[2] == S->ranges[2] && dtype_of(p, F->b) == dtype_of(p, S->b) &&
           dtype_of(p, F->out) == dtype_of(p, S->out) && dtype_of(p, f->out) == dtype_of(p, s->out) &&
           dtype_of(p, f->bias) == dtype_of(p, s->bias) && (f->tail < 0) == (s->tail < 0) && f->outp == s->outp &&
           (f->tail < 0 || f->canon == s->canon);
}

static void merge_ops(ir_node *to, const ir_node *from)
{
    int *ops = ir_xalloc((size_t)(to->nops + from->nops) * sizeof *ops), n = 0;
    for (int i = 0, j = 0; i < to->nops || j < from->nops;) {
        int x = j >= from->nops || (i < to->nops && to->ops[i] <= from->ops[j]) ? to->ops[i++] : from->ops[j++];
        if (!n || ops[n - 1] != x)
            ops[n++] = x;
    }
    free(to->ops);
    to->ops = ops;
    to->nops = n;
}

/* Node `from` of a group goes: its source ops join node `to`. */
static void absorb(ir_prog *p, int to, int from)
{
    ir_node *F = &p->nodes[from];
    merge_ops(&p->nodes[to], F);
    F->dead = 1;
    p->kernels[F->kernel].dead = 1;
    p->bufs[F->out].dead = 1;
}

/* A parameter of parts[0]'s type but `rows` along dim 0: the parts one
 * after another. */
static int cat_param(ir_prog *p, const int *parts, int np, int64_t rows)
{
    gr_ttype t = p->bufs[parts[0]].type;
    t.shape[0] = rows;
    char *name = ir_xdotted(p->bufs[parts[0]].name, "cat");
    int b = ir_buf_new(p, name, &t, IR_BUF_PARAM);
    free(name);
    ir_buf *B = &p->bufs[b];
    B->parts = ir_xalloc((size_t)np * sizeof *B->parts);
    memcpy(B->parts, parts, (size_t)np * sizeof *parts);
    B->nparts = np;
    return b;
}

/* A [M, nt] buffer like `like`, written by node `node`. */
static int cat_result(ir_prog *p, int like, int64_t m, int64_t nt, int node)
{
    gr_ttype t = {.dtype = p->bufs[like].type.dtype, .rank = 2, .shape = {m, nt}};
    char *name = ir_xdotted(p->bufs[like].name, "cat");
    int b = ir_buf_new(p, name, &t, IR_BUF_COMPUTED);
    free(name);
    p->bufs[b].node = node;
    return b;
}

/* The siblings' outputs (each [m, n_j]) concatenated along dim 1,
 * written by node `node`: an output buffer whose parts are the outputs,
 * which stay the graph's outputs, written by that node. */
static int cat_outputs(ir_prog *p, const sib *const *mem, int np, int64_t m, int64_t nt, int node)
{
    const int b = cat_result(p, mem[0]->out, m, nt, node);
    ir_buf *B = &p->bufs[b];
    B->output = 1;
    B->cat_dim = 1;
    B->parts = ir_xalloc((size_t)np * sizeof *B->parts);
    for (int j = 0; j < np; j++) {
        B->parts[j] = mem[j]->out;
        p->bufs[mem[j]->out].node = node;
    }
    B->nparts = np;
    return b;
}

/* The outputs that absorb and the fusing marked dead stay: they are the
 * concatenated result's parts. */
static void keep_outputs(ir_prog *p, int y)
{
    for (int j = 0; j < p->bufs[y].nparts; j++)
        p->bufs[p->bufs[y].parts[j]].dead = 0;
}

/* A group being fused: its siblings, each one's first column in the
 * concatenated result, and that result. */
typedef struct {
    ir_prog *p;
    const sib **mem;
    int nm;
    int64_t *off, nt;
    int y;          /* the concatenated result the siblings' readers read */
    int ymm, bcat;  /* the product's concatenated result, the concatenated bias (-1) */
    const ir_node *reader;
} group;

/* A reader's load of a sibling's result: the same element of y. */
static int reread_load(void *ctx, ir_arena *A, const ir_expr *x)
{
    const group *g = ctx;
    for (int j = 0; j < g->nm; j++) {
        ir_index i;
        if (x->buf == g->mem[j]->out &&
            !recolumn(&x->idx, g->reader->nvars, g->reader->ranges, g->mem[j]->n, g->nt, g->off[j], &i))
            return ir_load(A, g->y, x->dtype, &i);
    }
    return -1;
}

/* Every live reader of a sibling's result reads y instead. */
static void reread(group *g)
{
    ir_prog *p = g->p;
    for (int i = 0; i < p->nnodes; i++) {
        ir_node *N = &p->nodes[i];
        int hit = 0;
        for (int r = 0; !N->dead && r < N->nreads; r++)
            for (int j = 0; j < g->nm; j++)
                hit |= N->reads[r].buf == g->mem[j]->out;
        if (!hit)
            continue;
        for (int j = 0; j < g->nm; j++)
            split_reader(p, i, g->mem[j]->out, g->mem[j]->n);
        g->reader = N;
        for (int j = 0; N->kind == IR_MATMUL && j < g->nm; j++) {
            const sib *s = g->mem[j];
            if (N->a == s->out && !recolumn(&N->aidx, N->nvars, N->ranges, s->n, g->nt, g->off[j], &N->aidx))
                N->a = g->y;
            if (N->b == s->out && !recolumn(&N->bidx, N->nvars, N->ranges, s->n, g->nt, g->off[j], &N->bidx))
                N->b = g->y;
        }
        if (N->kind != IR_MATMUL)
            N->body = ir_map_loads(&p->A, N->body, reread_load, g);
        ir_node_redeps(p, i);
    }
}

/* The tail's loads over the concatenation: the product's result at the
 * element, the concatenated bias at the column. */
static int tail_cat_load(void *ctx, ir_arena *A, const ir_expr *x)
{
    const group *g = ctx;
    ir_index col = ir_idx_var(1), elem = ir_idx_var(1);
    elem.coef[0] = g->nt;
    return x->buf == g->mem[0]->mmout ? ir_load(A, g->ymm, x->dtype, &elem)
                                                   : ir_load(A, g->bcat, x->dtype, &col);
}

/* The first tail (by node order) becomes the tail over the concatenation,
 * from the first sibling's tail (all alike); the others go. */
static void fuse_tails(group *g)
{
    ir_prog *p = g->p;
    int t0 = g->mem[0]->tail, *parts = ir_xalloc((size_t)g->nm * sizeof *parts);
    for (int j = 0; j < g->nm; j++) {
        t0 = g->mem[j]->tail < t0 ? g->mem[j]->tail : t0;
        parts[j] = g->mem[j]->bias;
    }
    g->bcat = g->mem[0]->bias < 0 ? -1 : cat_param(p, parts, g->nm, g->nt);
    free(parts);
    int body = ir_map_loads(&p->A, p->nodes[g->mem[0]->tail].body, tail_cat_load, g);
    const int64_t m = p->nodes[g->mem[0]->mm].ranges[0];
    g->y = g->mem[0]->outp ? cat_outputs(p, g->mem, g->nm, m, g->nt, t0)
                           : cat_result(p, p->nodes[t0].out, m, g->nt, t0);
    for (int j = 0; j < g->nm; j++)
        if (g->mem[j]->tail != t0)
            absorb(p, t0, g->mem[j]->tail);
    ir_node *T = &p->nodes[t0];
    p->bufs[T->out].dead = 1;
    T->out = g->y;
    T->body = body;
    T->ranges[1] = g->nt;
    T->store.coef[0] = g->nt;
    keep_outputs(p, g->y);
    ir_node_redeps(p, t0);
}

/* The first product of the group becomes the product over the
 * concatenated parameters; the others go. */
static void fuse_products(group *g)
{
    ir_prog *p = g->p;
    const int mm0 = g->mem[0]->mm;
    int *parts = ir_xalloc((size_t)g->nm * sizeof *parts);
    for (int j = 0; j < g->nm; j++)
        parts[j] = p->nodes[g->mem[j]->mm].b;
    int w = cat_param(p, parts, g->nm, g->nt);
    free(parts);
    const int64_t m = p->nodes[mm0].ranges[0];
    g->ymm = g->mem[0]->outp && g->mem[0]->tail < 0 ? cat_outputs(p, g->mem, g->nm, m, g->nt, mm0)
                                                    : cat_result(p, p->nodes[mm0].out, m, g->nt, mm0);
    for (int j = 1; j < g->nm; j++)
        absorb(p, mm0, g->mem[j]->mm);
    ir_node *M = &p->nodes[mm0];
    p->bufs[M->out].dead = 1;
    M->out = g->ymm;
    M->b = w;
    M->ranges[1] = g->nt;
    M->store.coef[0] = g->nt;
    keep_outputs(p, g->ymm);
    ir_node_redeps(p, mm0);
}

/* Fuse the group whose first sibling is c->s[first] (siblings are in node
 * order, so that one's product comes first). */
static void fuse_group(sib_ctx *c, int first)
{
    group g = {.p = c->p, .mem = ir_xalloc((size_t)c->ns * sizeof *g.mem)};
    g.off = ir_xalloc((size_t)c->ns * sizeof *g.off);
    for (int j = first; j < c->ns; j++)
        if (c->s[j].group == first) {
            g.off[g.nm] = g.nt;
            g.nt += c->s[j].n;
            g.mem[g.nm++] = &c->s[j];
        }
    fuse_products(&g);
    g.y = g.ymm;
    if (g.mem[0]->tail >= 0)
        fuse_tails(&g);
    reread(&g);
    free(g.mem);
    free(g.off);
}

/* The siblings of p's products into c->s, grouped (sib.group); per
 * group (its first sibling) its size, to be freed with c->s and
 * c->readers; NULL without a target chip (nothing fuses). */
static int *sib_groups(sib_ctx *c, ir_prog *p)
{
    const chip_config *cfg = p->opts.target;
    if (!cfg)
        return NULL;
    *c = (sib_ctx){.p = p, .lanes = cfg->stick_bytes / 2};
    if (cfg->dram_align > cfg->stick_bytes) /* each part must end where the next one's aligned start is */
        c->lanes *= (cfg->dram_align + cfg->stick_bytes - 1) / cfg->stick_bytes;
    c->readers = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *c->readers);
    for (int i = 0; i < p->nnodes; i++)
        for (int r = 0; !p->nodes[i].dead && r < p->nodes[i].nreads; r++)
            c->readers[p->nodes[i].reads[r].buf]++;
    c->s = ir_xalloc((size_t)(p->nnodes + 1) * sizeof *c->s);
    for (int i = 0; i < p->nnodes; i++)
        c->ns += candidate(c, i, &c->s[c->ns]);
    int *size = ir_xalloc((size_t)(c->ns + 1) * sizeof *size);
    for (int j = 0; j < c->ns; j++) {
        c->s[j].group = j;
        for (int f = 0; f < j && c->s[j].group == j; f++)
            if (c->s[f].group == f && alike(p, &c->s[f], &c->s[j]))
                c->s[j].group = f;
        size[c->s[j].group]++;
    }
    return size;
}

/* The pass fuses each group of two siblings or more. */
static int sib_run(ir_prog *p, int fuse)
{
    sib_ctx c;
    int *size = sib_groups(&c, p), groups = 0;
    if (!size)
        return 0;
    for (int j = 0; j < c.ns; j++)
        if (size[j] > 1) {
            groups++;
            if (fuse)
                fuse_group(&c, j);
        }
    free(size);
    free(c.s);
    free(c.readers);
    return groups;
}

int ir_fuse_siblings(ir_prog *p)
{
    p->nsiblings += sib_run(p, 1);
    return 0;
}

int ir_siblings_fuse_some(ir_prog *p)
{
    return sib_run(p, 0) > 0;
}
