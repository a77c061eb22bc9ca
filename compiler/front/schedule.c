/* schedule.c: the scheduler passes, in the order compile.c runs them:
 *   deps             each node's reads (from its loads; a gather reads "*"),
 *                    a check that node order is topological, one kernel per node
 *   dce              nodes whose results nobody reads go
 *   fuse_vertical    a pointwise producer into a pointwise consumer
 *   fuse_reduction   nodes over the same outer loops and reduced extent join
 *                    one REDUCTION kernel (softmax, layer norm: one kernel)
 *   fuse_epilogue    pointwise consumers of a matmul become its epilogue
 *   fuse_horizontal  independent kernels with the same loops sharing reads
 *   order            an execution order that keeps peak memory low
 *   lastuse          each buffer's last reader; kernel-internal buffers
 *
 * Fusion follows Inductor's scheduler: candidate pairs of kernels are
 * scored by the bytes of the buffers they share (score_fusion_memory),
 * the best legal pair is fused, and that repeats until none is left.  A
 * pair is legal when its pass's rule allows it, the loop structures join
 * (ir_sig_join), every buffer one writes and the other reads is read at
 * exactly the index it is written at (so a value flows within one loop
 * iteration), and fusing creates no cycle. */
#include "ir.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* ---- deps ---- */

typedef struct {
    ir_prog *p;
    int n;
} dep_ctx;

static void add_dep(ir_node *n, int buf, int star, const ir_index *idx)
{
    for (int r = 0; r < n->nreads; r++)
        if (n->reads[r].buf == buf && n->reads[r].star == star && (star || ir_idx_equal(&n->reads[r].idx, idx)))
            return;
    n->reads = realloc(n->reads, (size_t)(n->nreads + 1) * sizeof *n->reads);
    if (!n->reads)
        abort();
    ir_dep *d = &n->reads[n->nreads++];
    d->buf = buf;
    d->star = star;
    d->idx = star ? ir_idx_const(0) : *idx;
}

static void dep_visit(void *ctx, const ir_expr *x)
{
    dep_ctx *c = ctx;
    if (x->kind == IR_E_LOAD || x->kind == IR_E_ILOAD)
        add_dep(&c->p->nodes[c->n], x->buf, x->kind == IR_E_ILOAD, &x->idx);
}

static int new_kernel(ir_prog *p, int node)
{
    int k = p->nkernels++;
    ir_kernel *K = &p->kernels[k];
    memset(K, 0, sizeof *K);
    K->nodes = ir_xalloc(sizeof *K->nodes);
    K->nodes[K->nnodes++] = node;
    K->kind = p->nodes[node].kind;
    K->pos = -1;
    ir_node_sig(p, node, &K->sig);
    p->nodes[node].kernel = k;
    return k;
}

/* The reads of node i, from its loads. */
static void node_deps(ir_prog *p, int i)
{
    ir_node *n = &p->nodes[i];
    n->nreads = 0;
    if (n->kind == IR_MATMUL) {
        add_dep(n, n->a, 0, &n->aidx);
        add_dep(n, n->b, 0, &n->bidx);
    } else if (n->kind == IR_HOST) { /* the host reads its inputs whole */
        for (int i = 0; i < n->nhin; i++)
            add_dep(n, n->hin[i], 1, NULL);
    } else {
        dep_ctx c = {p, i};
        ir_expr_walk(&p->A, n->body, dep_visit, &c);
    }
}

void ir_node_redeps(ir_prog *p, int n)
{
    node_deps(p, n);
    ir_node_sig(p, n, &p->kernels[p->nodes[n].kernel].sig);
}

int ir_deps(ir_prog *p)
{
    for (int i = 0; i < p->nnodes; i++) {
        ir_node *n = &p->nodes[i];
        node_deps(p, i);
        /* Lowering creates a node only once what it reads exists, so the
         * creation order is a topological order. */
        for (int r = 0; r < n->nreads; r++)
            assert(p->bufs[n->reads[r].buf].node < i);
    }
    p->kernels = ir_xalloc((size_t)(p->nnodes + 1) * sizeof *p->kernels);
    for (int i = 0; i < p->nnodes; i++)
        new_kernel(p, i);
    p->deps_done = 1;
    return 0;
}

/* ---- dce ---- */

int ir_dce(ir_prog *p)
{
    int *live = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *live);
    for (int b = 0; b < p->nbufs; b++)
        live[b] = p->bufs[b].output;
    for (int i = p->nnodes - 1; i >= 0; i--) { /* readers come after writers */
        ir_node *n = &p->nodes[i];
        /* A host op lives while any of its results does. */
        for (int j = 0; j < n->nhout; j++)
            if (live[n->hout[j]] && ir_buf_bytes(&p->bufs[n->hout[j]]))
                live[n->out] = 2;
        /* A node with no output element has no work: it goes, and its
         * buffer stays only if it is an output (an empty tensor). */
        if (!live[n->out] || (live[n->out] == 1 && !ir_buf_bytes(&p->bufs[n->out]))) {
            for (int j = 0; j < n->nhout; j++)
                p->bufs[n->hout[j]].dead = !live[n->hout[j]];
            n->dead = 1;
            p->bufs[n->out].dead = !live[n->out];
            p->kernels[n->kernel].dead = 1;
            continue;
        }
        for (int r = 0; r < n->nreads; r++)
            live[n->reads[r].buf] = 1;
    }
    free(live);
    return 0;
}

/* ---- The kernel graph ---- */

/* Kernel a -> kernel b when b reads a buffer a writes; per kernel its
 * successors, and per buffer the kernels touching it (writer, readers),
 * each list with its room (csucc, ctouch).  nk and nb: the kernels and
 * buffers it was built for. */
typedef struct {
    int **succ, *nsucc, *csucc;
    int **touch, *ntouch, *ctouch;
    int nk, nb;
} kgraph;

static void add_to(int **list, int *n, int *cap, int x)
{
    for (int i = 0; i < *n; i++)
        if ((*list)[i] == x)
            return;
    if (*n == *cap) /* the room mostly suffices: no call to grow */
        *list = ir_xgrow(*list, cap, *n + 1, sizeof **list);
    (*list)[(*n)++] = x;
}

static void kgraph_free(kgraph *G)
{
    for (int k = 0; k < G->nk; k++)
        free(G->succ[k]);
    for (int b = 0; b < G->nb; b++)
        free(G->touch[b]);
    free(G->succ);
    free(G->nsucc);
    free(G->csucc);
    free(G->touch);
    free(G->ntouch);
    free(G->ctouch);
    *G = (kgraph){0};
}

/* p's kernel graph into G (zeroed): fuse builds it once and keeps it
 * up to date after each fusion (kgraph_merge). */
static void kgraph_build(const ir_prog *p, kgraph *G)
{
    G->nk = p->nkernels;
    G->nb = p->nbufs;
    G->succ = ir_xalloc((size_t)(G->nk + 1) * sizeof *G->succ);
    G->nsucc = ir_xalloc((size_t)(G->nk + 1) * sizeof *G->nsucc);
    G->csucc = ir_xalloc((size_t)(G->nk + 1) * sizeof *G->csucc);
    G->touch = ir_xalloc((size_t)(G->nb + 1) * sizeof *G->touch);
    G->ntouch = ir_xalloc((size_t)(G->nb + 1) * sizeof *G->ntouch);
    G->ctouch = ir_xalloc((size_t)(G->nb + 1) * sizeof *G->ctouch);
    for (int i = 0; i < p->nnodes; i++) {
        const ir_node *n = &p->nodes[i];
        if (n->dead)
            continue;
        add_to(&G->touch[n->out], &G->ntouch[n->out], &G->ctouch[n->out], n->kernel);
        for (int r = 0; r < n->nreads; r++) {
            int b = n->reads[r].buf, w = p->bufs[b].node;
            add_to(&G->touch[b], &G->ntouch[b], &G->ctouch[b], n->kernel);
            if (w >= 0 && p->nodes[w].kernel != n->kernel) {
                const int k = p->nodes[w].kernel;
                add_to(&G->succ[k], &G->nsucc[k], &G->csucc[k], n->kernel);
            }
        }
    }
}

/* In list l (of n), k2 as k1, held once. */
static void rename_in(int **l, int *n, int *cap, int k1, int k2)
{
    for (int i = 0; i < *n; i++)
        if ((*l)[i] == k2) {
            (*l)[i] = (*l)[--*n];
            add_to(l, n, cap, k1);
            return;
        }
}

/* G after merge took kernel k2 into k1: the lists hold the same sets as a
 * build would (their order differs, which no user of G sees: has_edge and
 * indirect_path ask sets, and candidates' heap pops in its total order
 * whatever the order of the pairs), at a fraction of a build. Every list
 * holding k2 is found through k1's nodes: they touch its buffers, and
 * their reads' writers are its predecessors. */
static void kgraph_merge(const ir_prog *p, kgraph *G, int k1, int k2)
{
    const ir_kernel *A = &p->kernels[k1];
    for (int i = 0; i < A->nnodes; i++) {
        const ir_node *n = &p->nodes[A->nodes[i]];
        if (n->dead)
            continue;
        rename_in(&G->touch[n->out], &G->ntouch[n->out], &G->ctouch[n->out], k1, k2);
        for (int r = 0; r < n->nreads; r++) {
            int b = n->reads[r].buf, w = p->bufs[b].node;
            rename_in(&G->touch[b], &G->ntouch[b], &G->ctouch[b], k1, k2);
            if (w >= 0 && p->nodes[w].kernel != k1) {
                const int k = p->nodes[w].kernel;
                rename_in(&G->succ[k], &G->nsucc[k], &G->csucc[k], k1, k2);
            }
        }
    }
    for (int i = 0; i < G->nsucc[k2]; i++)
        add_to(&G->succ[k1], &G->nsucc[k1], &G->csucc[k1], G->succ[k2][i]);
    G->nsucc[k2] = 0;
    int m = 0;
    for (int i = 0; i < G->nsucc[k1]; i++)
        if (G->succ[k1][i] != k1 && G->succ[k1][i] != k2)
            G->succ[k1][m++] = G->succ[k1][i];
    G->nsucc[k1] = m;
}

static int has_edge(const kgraph *G, int a, int b)
{
    for (int i = 0; i < G->nsucc[a]; i++)
        if (G->succ[a][i] == b)
            return 1;
    return 0;
}

/* A path a -> x -> ... -> b through some other kernel x. */
static int indirect_path(const ir_prog *p, const kgraph *G, int a, int b)
{
    int *stack = ir_xalloc((size_t)p->nkernels * sizeof *stack), top = 0, found = 0;
    char *seen = ir_xalloc((size_t)p->nkernels);
    for (int i = 0; i < G->nsucc[a]; i++)
        if (G->succ[a][i] != b) {
            seen[G->succ[a][i]] = 1;
            stack[top++] = G->succ[a][i];
        }
    while (top && !found) {
        int x = stack[--top];
        for (int i = 0; i < G->nsucc[x] && !found; i++) {
            int y = G->succ[x][i];
            found = y == b;
            if (!found && !seen[y]) {
                seen[y] = 1;
                stack[top++] = y;
            }
        }
    }
    free(stack);
    free(seen);
    return found;
}

/* ---- Fusion ---- */

/* A pair of kernels that share buffers, scored by their bytes
 * (Inductor's score_fusion_memory). */
typedef struct {
    int a, b; /* a < b */
    int64_t score;
    int dist; /* of their first nodes: nearer pairs first */
    int born; /* fusions done when it was scored (cand_live) */
} cand;

static int cmp_cand_rank(const cand *c, const cand *d)
{
    if (c->score != d->score)
        return c->score > d->score ? -1 : 1;
    if (c->dist != d->dist)
        return c->dist - d->dist;
    return c->a != d->a ? c->a - d->a : c->b - d->b;
}

/* Restore the heap order of h[0..n) below i: each pair ranks before its
 * children (cmp_cand_rank, a total order on distinct pairs). */
static void cand_sift(cand *h, int n, int i)
{
    for (;;) {
        int l = 2 * i + 1, best = i;
        if (l < n && cmp_cand_rank(&h[l], &h[best]) < 0)
            best = l;
        if (l + 1 < n && cmp_cand_rank(&h[l + 1], &h[best]) < 0)
            best = l + 1;
        if (best == i)
            return;
        cand t = h[i];
        h[i] = h[best];
        h[best] = t;
        i = best;
    }
}

/* c into heap h (of *n, room *cap). */
static void cand_push(cand **h, int *n, int *cap, cand c)
{
    if (*n == *cap)
        *h = ir_xgrow(*h, cap, *n + 1, sizeof **h);
    int i = (*n)++;
    for (; i > 0 && cmp_cand_rank(&c, &(*h)[(i - 1) / 2]) < 0; i = (i - 1) / 2)
        (*h)[i] = (*h)[(i - 1) / 2];
    (*h)[i] = c;
}

/* Every buffer a node of one kernel writes and a node of the other reads
 * is read at the index it is written at, both seen in the joined loops. */
static int indices_match(const ir_prog *p, int k1, int k2, const ir_sig *s)
{
    const ir_kernel *K[2] = {&p->kernels[k1], &p->kernels[k2]};
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < K[side]->nnodes; i++) {
            int cn = K[side]->nodes[i];
            const ir_node *c = &p->nodes[cn];
            ir_index cv[IR_MAX_VARS];
            if (ir_node_vars(p, cn, s, cv))
                return 0;
            for (int r = 0; r < c->nreads; r++) {
                int wn = p->bufs[c->reads[r].buf].node;
                if (wn < 0 || p->nodes[wn].kernel != (side ? k1 : k2))
                    continue;
                ir_index wv[IR_MAX_VARS];
                if (c->reads[r].star || ir_node_vars(p, wn, s, wv))
                    return 0;
                ir_index ri = ir_idx_compose(&c->reads[r].idx, c->nvars, cv);
                ir_index wi = ir_idx_compose(&p->nodes[wn].store, p->nodes[wn].nvars, wv);
                if (!ir_idx_equal(&ri, &wi))
                    return 0;
            }
        }
    return 1;
}

/* Every node of both kernels fits the joined loops. */
static int nodes_fit(const ir_prog *p, int k1, int k2, const ir_sig *s)
{
    const int ks[2] = {k1, k2};
    for (int side = 0; side < 2; side++) {
        const ir_kernel *K = &p->kernels[ks[side]];
        for (int i = 0; i < K->nnodes; i++) {
            ir_index v[IR_MAX_VARS];
            if (ir_node_vars(p, K->nodes[i], s, v))
                return 0;
        }
    }
    return 1;
}

/* A read, by a pointwise node of kernels k1 and k2 joined into s, of a
 * buffer; ri its index over s's loops. */
typedef int (*read_test)(const ir_sig *s, const ir_node *N, const ir_index *v, const ir_buf *B, const ir_index *ri);

/* Some such read passes test: of any buffer, or (outside) only of the
 * buffers neither kernel writes. */
static int some_read(const ir_prog *p, int k1, int k2, const ir_sig *s, int outside, read_test test)
{
    const int ks[2] = {k1, k2};
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < p->kernels[ks[side]].nnodes; i++) {
            const ir_node *N = &p->nodes[p->kernels[ks[side]].nodes[i]];
            ir_index v[IR_MAX_VARS];
            if (N->kind != IR_POINTWISE || ir_node_vars(p, p->kernels[ks[side]].nodes[i], s, v))
                continue;
            for (int r = 0; r < N->nreads; r++) {
                const ir_buf *B = &p->bufs[N->reads[r].buf];
                int wk = B->node >= 0 ? p->nodes[B->node].kernel : -1;
                if ((outside && (wk == k1 || wk == k2)) || N->reads[r].star)
                    continue;
                ir_index ri = ir_idx_compose(&N->reads[r].idx, N->nvars, v);
                if (test(s, N, v, B, &ri))
                    return 1;
            }
        }
    return 0;
}

/* A reduction kernel's per-row ops (nodes over its kept loops only) take
 * one value per row; the back half cannot read an operand whose rows lie
 * inside its sticks (consecutive rows, consecutive elements of the last
 * dim) there.  Such a node stays out of the kernel, and runs as a
 * pointwise kernel of its own, where the lanes walk the sticks
 * (scatter_add's self + the sum over index positions). */
static int per_row_read_in_sticks(const ir_sig *s, const ir_node *N, const ir_index *v, const ir_buf *B,
                                  const ir_index *ri)
{
    for (int j = 0; j < N->nvars; j++)
        for (int r = s->nouter; r < s->nouter + s->nred; r++)
            if (v[j].coef[r])
                return 0; /* a row op: lanes too */
    if (!B->type.rank || B->type.shape[B->type.rank - 1] < 2)
        return 0;
    for (int o = 0; o < s->nouter; o++)
        if (s->outer[o] > 1 && ri->coef[o] == 1)
            return 1;
    return 0;
}

/* A matmul epilogue cannot load a scalar (one element for every row and
 * column: a 0-d bias, the bias of one output column); a pointwise node
 * reading one stays out of the product and runs as its own kernel, where
 * a scalar is a per-column value made once per core. */
static int scalar_read(const ir_sig *s, const ir_node *N, const ir_index *v, const ir_buf *B, const ir_index *ri)
{
    (void)N, (void)v, (void)B;
    for (int o = 0; o < s->nouter + s->nred; o++)
        if (ri->coef[o])
            return 0;
    return 1;
}

/* Would a pointwise node of k1 or k2 joined to a product (s a MATMUL)
 * read a computed buffer across n, its elements along n not neighbours
 * (an NCHW residual added to a conv's channels-last product)?  A computed
 * buffer is sticked on its last dim, so the epilogue would need it
 * restickified, which the back half does not do there; as its own
 * pointwise kernel the read is staged. */
static int computed_read_across_n(const ir_sig *s, const ir_node *N, const ir_index *v, const ir_buf *B,
                                  const ir_index *ri)
{
    (void)N, (void)v;
    return B->kind == IR_BUF_COMPUTED && ri->coef[s->nouter - 1] > 1;
}

static int epilogue_reads_across_n(const ir_prog *p, int k1, int k2, const ir_sig *s)
{
    const int ks[2] = {k1, k2};
    int mm = -1;
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < p->kernels[ks[side]].nnodes; i++)
            if (p->nodes[p->kernels[ks[side]].nodes[i]].kind == IR_MATMUL)
                mm = p->kernels[ks[side]].nodes[i];
    if (s->kind != IR_MATMUL || mm < 0 || p->nodes[mm].ranges[p->nodes[mm].nbatch + 1] < 2)
        return 0;
    return some_read(p, k1, k2, s, 0, computed_read_across_n);
}

/* A pointwise node of k1 or k2 whose op the host fallback keeps out of
 * matmul epilogues (IR_SRC_APART: a product could not load its operand,
 * a bias slice that starts inside a stick; as a row kernel of its own the
 * read is restickified). */
static int kept_apart(const ir_prog *p, int k1, int k2)
{
    const int ks[2] = {k1, k2};
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < p->kernels[ks[side]].nnodes; i++) {
            const ir_node *N = &p->nodes[p->kernels[ks[side]].nodes[i]];
            if (N->kind == IR_POINTWISE && N->nops && (p->host[ir_node_op(N)] & IR_SRC_APART))
                return 1;
        }
    return 0;
}

/* Would kernels k1 and k2 joined hold ops both sides of a cut
 * (IR_SRC_CUT: the host fallback cut a row kernel the back half refused
 * in two)?  No kernel fusion made spans a cut, so the joined span of the
 * ops their nodes compute tells. */
static int crosses_cut(const ir_prog *p, int k1, int k2)
{
    const int ks[2] = {k1, k2};
    int lo = p->nsrc, hi = -1;
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < p->kernels[ks[side]].nnodes; i++) {
            const int s = ir_node_op(&p->nodes[p->kernels[ks[side]].nodes[i]]);
            if (s >= 0) {
                lo = s < lo ? s : lo;
                hi = s > hi ? s : hi;
            }
        }
    for (int s = lo + 1; s <= hi; s++)
        if (p->host[s] & IR_SRC_CUT)
            return 1;
    return 0;
}

/* A node of k1 or k2 whose op the host fallback keeps out of horizontal
 * fusion (IR_SRC_ALONE: a kernel it joined was refused, a row that did
 * not fit LX, where each part alone fits). */
static int kept_alone(const ir_prog *p, int k1, int k2)
{
    const int ks[2] = {k1, k2};
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < p->kernels[ks[side]].nnodes; i++) {
            const int s = ir_node_op(&p->nodes[p->kernels[ks[side]].nodes[i]]);
            if (s >= 0 && (p->host[s] & IR_SRC_ALONE))
                return 1;
        }
    return 0;
}

/* Would kernels k1 and k2 joined into s (not a matmul) make more loads
 * than a row kernel holds?  A load is a read of a buffer neither writes,
 * one per buffer and index over s's loops (be_collect_load); a kernel
 * reading little is not counted. */
static int too_many_loads(const ir_prog *p, int k1, int k2, const ir_sig *s)
{
    const int ks[2] = {k1, k2};
    int most = 0;
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < p->kernels[ks[side]].nnodes; i++)
            most += p->nodes[p->kernels[ks[side]].nodes[i]].nreads;
    if (most <= IR_KERNEL_LOADS)
        return 0;
    ir_dep *seen = ir_xalloc((size_t)most * sizeof *seen);
    int n = 0;
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < p->kernels[ks[side]].nnodes; i++) {
            const ir_node *N = &p->nodes[p->kernels[ks[side]].nodes[i]];
            ir_index v[IR_MAX_VARS];
            if (ir_node_vars(p, p->kernels[ks[side]].nodes[i], s, v)) { /* (nodes_fit said it fits) */
                free(seen);
                return 1;
            }
            for (int r = 0; r < N->nreads; r++) {
                const ir_dep *d = &N->reads[r];
                const int w = p->bufs[d->buf].node, wk = w >= 0 ? p->nodes[w].kernel : -1;
                if (wk == k1 || wk == k2)
                    continue;
                ir_dep x = {d->buf, d->star, d->star ? d->idx : ir_idx_compose(&d->idx, N->nvars, v)};
                int j = 0;
                while (j < n && !(seen[j].buf == x.buf && seen[j].star == x.star && ir_idx_equal(&seen[j].idx, &x.idx)))
                    j++;
                if (j < n)
                    continue;
                seen[n++] = x;
                if (n > IR_KERNEL_LOADS) {
                    free(seen);
                    return 1;
                }
            }
        }
    free(seen);
    return 0;
}

typedef enum { DEP_NONE, DEP_12, DEP_21 } dep_dir;

/* The kinds of fusion each pass makes, given kernels a (lower id) and b,
 * and how they depend on each other. */
typedef int (*fusion_rule)(const ir_kernel *a, const ir_kernel *b, dep_dir dir);

static int rule_vertical(const ir_kernel *a, const ir_kernel *b, dep_dir dir)
{
    return dir != DEP_NONE && a->kind == IR_POINTWISE && b->kind == IR_POINTWISE;
}

static int rule_reduction(const ir_kernel *a, const ir_kernel *b, dep_dir dir)
{
    return dir != DEP_NONE && a->kind != IR_MATMUL && b->kind != IR_MATMUL && a->kind != IR_HOST &&
           b->kind != IR_HOST && (a->kind == IR_REDUCTION || b->kind == IR_REDUCTION);
}

static int rule_epilogue(const ir_kernel *a, const ir_kernel *b, dep_dir dir)
{
    return (dir == DEP_12 && a->kind == IR_MATMUL && b->kind == IR_POINTWISE) ||
           (dir == DEP_21 && b->kind == IR_MATMUL && a->kind == IR_POINTWISE);
}

static int rule_horizontal(const ir_kernel *a, const ir_kernel *b, dep_dir dir)
{
    return dir == DEP_NONE && a->kind == b->kind && a->kind != IR_MATMUL && a->kind != IR_HOST;
}

static void merge(ir_prog *p, int k1, int k2, const ir_sig *s)
{
    ir_kernel *A = &p->kernels[k1], *B = &p->kernels[k2];
    A->nodes = realloc(A->nodes, (size_t)(A->nnodes + B->nnodes) * sizeof *A->nodes);
    if (!A->nodes)
        abort();
    memcpy(A->nodes + A->nnodes, B->nodes, (size_t)B->nnodes * sizeof *B->nodes);
    A->nnodes += B->nnodes;
    qsort(A->nodes, (size_t)A->nnodes, sizeof *A->nodes, ir_cmp_int); /* node order is topological */
    /* A matmul kernel's template comes first: the pointwise nodes fused
     * with it either read its result or do not depend on it at all (a
     * pointwise node it reads would have made a cycle), so all can follow
     * it as its epilogue. */
    for (int i = 1; s->kind == IR_MATMUL && i < A->nnodes; i++)
        if (p->nodes[A->nodes[i]].kind == IR_MATMUL) {
            int mm = A->nodes[i];
            memmove(A->nodes + 1, A->nodes, (size_t)i * sizeof *A->nodes);
            A->nodes[0] = mm;
            break;
        }
    for (int i = 0; i < A->nnodes; i++)
        p->nodes[A->nodes[i]].kernel = k1;
    A->sig = *s;
    A->kind = s->kind;
    free(B->nodes);
    B->nodes = NULL;
    B->nnodes = 0;
    B->dead = 1;
}

/* Can k2 fuse into k1 (a pair popped off the heap), as far as the two
 * kernels alone say?  Their joined loops into s, how they depend on each
 * other into dir.  The answer stays until either kernel fuses: these
 * tests look at the two kernels' nodes and the edges between them only. */
static int fusable(const ir_prog *p, const kgraph *G, fusion_rule rule, int k1, int k2, ir_sig *s, dep_dir *dir)
{
    const ir_kernel *A = &p->kernels[k1], *B = &p->kernels[k2];
    int e12 = has_edge(G, k1, k2), e21 = has_edge(G, k2, k1);
    if (e12 && e21)
        return 0;
    *dir = e12 ? DEP_12 : e21 ? DEP_21 : DEP_NONE;
    if (!rule(A, B, *dir) || A->nnodes + B->nnodes > IR_KERNEL_NODES || ir_sig_join(&A->sig, &B->sig, s) ||
        !nodes_fit(p, k1, k2, s) || !indices_match(p, k1, k2, s))
        return 0;
    if (epilogue_reads_across_n(p, k1, k2, s) || (s->kind == IR_MATMUL && kept_apart(p, k1, k2)))
        return 0;
    if (s->kind == IR_REDUCTION && some_read(p, k1, k2, s, 1, per_row_read_in_sticks))
        return 0;
    if (*dir == DEP_NONE && kept_alone(p, k1, k2))
        return 0;
    if (s->kind != IR_MATMUL && too_many_loads(p, k1, k2, s))
        return 0;
    /* refining the reduced loops into more of them than either kernel
     * had makes a reduction the back half cannot run (it reduces one) */
    if (s->kind == IR_REDUCTION && s->nred > 1 && s->nred > A->sig.nred && s->nred > B->sig.nred)
        return 0;
    return !(s->kind == IR_MATMUL && some_read(p, k1, k2, s, 1, scalar_read));
}

/* A path through a third kernel: fusing would make a cycle.  Fusions of
 * other kernels can end such a path. */
static int makes_cycle(const ir_prog *p, const kgraph *G, int k1, int k2, dep_dir dir)
{
    return (dir != DEP_21 && indirect_path(p, G, k1, k2)) || (dir != DEP_12 && indirect_path(p, G, k2, k1));
}

/* fuse's pairs, kept up to date across fusions instead of built again
 * after each: the heap h; the pairs popped and refused for a cycle since
 * the last fusion (it may have ended the path: they are tried again, as
 * in a fresh build; a pair fusable refuses stays refused until one of its
 * kernels fuses, and then it is stale); per kernel the fusion that last
 * changed it, which makes its pairs scored before stale (cand_live).  A
 * fusion changes only the pairs of its two kernels (the others share the
 * same buffers as before), and the heap pops in its total order whatever
 * its layout, so the first pair that fuses is the one that a build after
 * every fusion gave. */
typedef struct {
    cand *h, *refused;
    int nh, caph, nref, capref;
    int nf;             /* fusions done */
    int *changed;       /* per kernel: nf after its last fusion, 0 if none */
    int stamp;          /* pair_scores' calls */
    int *bmark, *kmark; /* per buffer, per kernel: stamp when last counted */
    int64_t *score;     /* per kernel: bytes shared with the kernel scored */
    int *near;          /* the kernels sharing a buffer with it */
    int cuts;           /* some source op is marked IR_SRC_CUT */
} fuse_state;

static int cand_live(const fuse_state *F, const cand *c)
{
    return F->changed[c->a] <= c->born && F->changed[c->b] <= c->born;
}

/* Buffer b's bytes to the score of every kernel above `above` touching
 * it beside k, once per buffer. */
static inline __attribute__((always_inline)) void share(const ir_prog *p, const kgraph *G, fuse_state *F, int k,
                                                        int above, int b, int *nnear)
{
    if (G->ntouch[b] < 2 || F->bmark[b] == F->stamp)
        return;
    F->bmark[b] = F->stamp;
    const int64_t bytes = ir_buf_bytes(&p->bufs[b]);
    for (int i = 0; i < G->ntouch[b]; i++) {
        const int x = G->touch[b][i];
        if (x == k || x <= above)
            continue;
        if (F->kmark[x] != F->stamp) {
            F->kmark[x] = F->stamp;
            F->score[x] = 0;
            F->near[(*nnear)++] = x;
        }
        F->score[x] += bytes;
    }
}

/* Kernel k's pairs with the kernels above `above`, scored (Inductor's
 * score_fusion_memory: the bytes of the buffers the two touch): the
 * kernels into F->near[0..return), their scores into F->score. */
static inline __attribute__((always_inline)) int pair_scores(const ir_prog *p, const kgraph *G, fuse_state *F, int k,
                                                              int above)
{
    const ir_kernel *K = &p->kernels[k];
    int nnear = 0;
    F->stamp++;
    for (int i = 0; i < K->nnodes; i++) {
        const ir_node *n = &p->nodes[K->nodes[i]];
        if (n->dead)
            continue;
        share(p, G, F, k, above, n->out, &nnear);
        for (int r = 0; r < n->nreads; r++)
            share(p, G, F, k, above, n->reads[r].buf, &nnear);
    }
    return nnear;
}

/* The pair of k and x (pair_scores'), scored after `born` fusions. */
static cand pair_of(const ir_prog *p, const fuse_state *F, int k, int x, int born)
{
    const int a = x < k ? x : k, b = x < k ? k : x;
    return (cand){a, b, F->score[x], abs(p->kernels[a].nodes[0] - p->kernels[b].nodes[0]), born};
}

/* The pairs of kernels touching a common buffer, as a heap with the best
 * first into F: fuse takes pairs off the top until one fuses, usually
 * after a few of them, so sorting them all would be wasted (fuse builds
 * them once and keeps them up to date: fuse_rescore). */
static void candidates(const ir_prog *p, const kgraph *G, fuse_state *F)
{
    int most = 0;
    for (int b = 0; b < p->nbufs; b++)
        most += G->ntouch[b] * (G->ntouch[b] - 1) / 2; /* touch lists hold a kernel once */
    F->caph = most ? most : 1;
    F->h = ir_xalloc((size_t)F->caph * sizeof *F->h);
    for (int k = 0; k < p->nkernels; k++) {
        const int nnear = pair_scores(p, G, F, k, k); /* each pair once: from its lower kernel */
        for (int i = 0; i < nnear; i++)
            F->h[F->nh++] = pair_of(p, F, k, F->near[i], 0);
    }
    for (int i = F->nh / 2 - 1; i >= 0; i--)
        cand_sift(F->h, F->nh, i);
}

/* After k2 fused into k1: the refused pairs back in the heap, k1's pairs
 * scored again. */
static void fuse_rescore(const ir_prog *p, const kgraph *G, fuse_state *F, int k1, int k2)
{
    F->changed[k1] = F->changed[k2] = ++F->nf;
    for (int i = 0; i < F->nref; i++)
        if (cand_live(F, &F->refused[i]))
            cand_push(&F->h, &F->nh, &F->caph, F->refused[i]);
    F->nref = 0;
    const int nnear = pair_scores(p, G, F, k1, -1);
    for (int i = 0; i < nnear; i++)
        cand_push(&F->h, &F->nh, &F->caph, pair_of(p, F, k1, F->near[i], F->nf));
}

static void fuse_free(fuse_state *F)
{
    free(F->h);
    free(F->refused);
    free(F->changed);
    free(F->bmark);
    free(F->kmark);
    free(F->score);
    free(F->near);
}

/* Fuse the best-scoring legal pair until none is left. */
static int fuse(ir_prog *p, fusion_rule rule)
{
    kgraph G = {0};
    kgraph_build(p, &G);
    fuse_state F = {0};
    F.changed = ir_xalloc((size_t)p->nkernels * sizeof *F.changed);
    F.kmark = ir_xalloc((size_t)p->nkernels * sizeof *F.kmark);
    F.score = ir_xalloc((size_t)p->nkernels * sizeof *F.score);
    F.near = ir_xalloc((size_t)p->nkernels * sizeof *F.near);
    F.bmark = ir_xalloc((size_t)p->nbufs * sizeof *F.bmark);
    for (int i = 0; i < p->nsrc && !F.cuts; i++)
        F.cuts = (p->host[i] & IR_SRC_CUT) != 0;
    candidates(p, &G, &F);
    while (F.nh > 0) {
        const cand c = F.h[0];
        F.h[0] = F.h[--F.nh];
        cand_sift(F.h, F.nh, 0);
        ir_sig s;
        dep_dir dir;
        if (!cand_live(&F, &c) || !fusable(p, &G, rule, c.a, c.b, &s, &dir) ||
            (F.cuts && s.kind != IR_MATMUL && crosses_cut(p, c.a, c.b)))
            continue;
        if (makes_cycle(p, &G, c.a, c.b, dir)) {
            if (F.nref == F.capref)
                F.refused = ir_xgrow(F.refused, &F.capref, F.nref + 1, sizeof *F.refused);
            F.refused[F.nref++] = c;
            continue;
        }
        merge(p, c.a, c.b, &s);
        p->kernels[c.a].joined |= dir == DEP_NONE;
        kgraph_merge(p, &G, c.a, c.b);
        fuse_rescore(p, &G, &F, c.a, c.b);
    }
    fuse_free(&F);
    kgraph_free(&G);
    return 0;
}

int ir_fuse_vertical(ir_prog *p)
{
    return fuse(p, rule_vertical);
}

int ir_fuse_reduction(ir_prog *p)
{
    return fuse(p, rule_reduction);
}

/* The epilogue of each MATMUL kernel: every pointwise node after the
 * template written in the template's variables, reads of the template's
 * result replaced by acc and reads of earlier epilogue nodes by their
 * expressions. */
static void compose_epilogues(ir_prog *p, int k)
{
    const ir_kernel *K = &p->kernels[k];
    const ir_node *mm = &p->nodes[K->nodes[0]];
    assert(mm->kind == IR_MATMUL);
    /* kernel position -> template variable */
    ir_index pos2t[IR_MAX_VARS];
    int at = 0;
    for (int v = 0; v < mm->nvars - 1; v++)
        if (mm->ranges[v] != 1)
            pos2t[at++] = ir_idx_var(v);
    int *repl = ir_xalloc((size_t)p->nbufs * sizeof *repl);
    for (int b = 0; b < p->nbufs; b++)
        repl[b] = -1;
    repl[mm->out] = ir_acc(&p->A, p->bufs[mm->out].type.dtype);
    for (int i = 1; i < K->nnodes; i++) {
        int id = K->nodes[i];
        ir_index kv[IR_MAX_VARS], tv[IR_MAX_VARS];
        int rc = ir_node_vars(p, id, &K->sig, kv);
        assert(rc == 0);
        (void)rc;
        ir_node *n = &p->nodes[id];
        for (int v = 0; v < n->nvars; v++)
            tv[v] = ir_idx_compose(&kv[v], at, pos2t);
        n->epi = ir_subst(&p->A, n->body, n->nvars, tv, repl);
        n->epi_store = ir_idx_compose(&n->store, n->nvars, tv);
        repl[n->out] = n->epi;
    }
    free(repl);
}

/* Would node n, its loop v taking the template's loop match[v], store or
 * read a computed buffer other than M's result across the template's n
 * (elements along n not neighbours: an NCHW tensor beside a conv's
 * channels-last product)?  Then it cannot be the epilogue (an epilogue
 * operand is not restickified, a result stored so is staged whole), and
 * in its own order its lanes stay along the NCHW tensor's rows. */
static int across_template_n(const ir_prog *p, const ir_node *n, const ir_node *M, const int *match)
{
    int vn = -1;
    for (int v = 0; v < n->nvars; v++)
        if (match[v] == M->nvars - 2)
            vn = v;
    if (vn < 0)
        return 0;
    if (n->store.coef[vn] > 1)
        return 1;
    for (int i = 0; i < n->nreads; i++)
        if (n->reads[i].buf != M->out && p->bufs[n->reads[i].buf].kind == IR_BUF_COMPUTED &&
            n->reads[i].idx.coef[vn] > 1)
            return 1;
    return 0;
}

/* Loop reordering: pointwise node id reads the matmul mm's result in
 * another loop order (a transpose of it); give it the template's order
 * when each of its loops is one of the template's output loops (same
 * extent, same stride in the read), so that it can be the epilogue (which
 * then stores through a permuted index). */
static void reorder_like(ir_prog *p, int id, int mm)
{
    ir_node *n = &p->nodes[id];
    const ir_node *M = &p->nodes[mm];
    const ir_index *r = NULL;
    for (int i = 0; i < n->nreads; i++) {
        if (n->reads[i].buf != M->out)
            continue;
        if (r || n->reads[i].star)
            return; /* read twice, or gathered */
        r = &n->reads[i].idx;
    }
    if (!r || r->offset != M->store.offset)
        return;
    int match[IR_MAX_VARS], used[IR_MAX_VARS] = {0}, sorted = 1;
    for (int v = 0; v < n->nvars; v++) {
        match[v] = -1;
        for (int t = 0; t < M->nvars - 1 && match[v] < 0; t++)
            if (!used[t] && M->ranges[t] == n->ranges[v] && M->store.coef[t] == r->coef[v])
                match[v] = t;
        if (match[v] < 0)
            return;
        used[match[v]] = 1;
        sorted &= v == 0 || match[v] > match[v - 1];
    }
    if (sorted || across_template_n(p, n, M, match))
        return;
    ir_index map[IR_MAX_VARS];
    int64_t ranges[IR_MAX_VARS];
    for (int v = 0; v < n->nvars; v++) {
        int pos = 0;
        for (int w = 0; w < n->nvars; w++)
            pos += match[w] < match[v];
        map[v] = ir_idx_var(pos);
        ranges[pos] = n->ranges[v];
    }
    ir_node_remap(p, id, n->nvars, ranges, 0, map);
    node_deps(p, id);
    ir_node_sig(p, id, &p->kernels[n->kernel].sig);
}

int ir_fuse_epilogue(ir_prog *p)
{
    for (int k = 0; k < p->nkernels; k++) {
        const ir_kernel *K = &p->kernels[k];
        if (K->dead || K->nnodes != 1 || K->kind != IR_POINTWISE)
            continue;
        const ir_node *n = &p->nodes[K->nodes[0]];
        for (int i = 0; i < n->nreads; i++) {
            int w = p->bufs[n->reads[i].buf].node;
            if (w >= 0 && p->nodes[w].kind == IR_MATMUL && p->kernels[p->nodes[w].kernel].nnodes == 1) {
                reorder_like(p, K->nodes[0], w);
                break;
            }
        }
    }
    fuse(p, rule_epilogue);
    for (int k = 0; k < p->nkernels; k++)
        if (!p->kernels[k].dead && p->kernels[k].kind == IR_MATMUL && p->kernels[k].nnodes > 1)
            compose_epilogues(p, k);
    return 0;
}

int ir_fuse_horizontal(ir_prog *p)
{
    return fuse(p, rule_horizontal);
}

/* ---- order ---- */

/* Bytes kernel k lets go of when it runs: buffers between kernels
 * (computed, not outputs) that no other unscheduled kernel reads. */
static int64_t freed_bytes(const ir_prog *p, const int *reads, int nr, const int *readers_left)
{
    int64_t s = 0;
    for (int i = 0; i < nr; i++) {
        const ir_buf *B = &p->bufs[reads[i]];
        if (B->kind == IR_BUF_COMPUTED && !B->output && readers_left[reads[i]] == 1)
            s += ir_buf_bytes(B);
    }
    return s;
}

/* "k3_softmax": position and the kernel's main source ops (its views
 * only when it has nothing else), at most three. */
static char *kernel_name(const ir_prog *p, const ir_kernel *K, int pos)
{
    const unsigned moves = IR_OP_RESHAPE | IR_OP_ALIAS | IR_OP_COPY | IR_OP_PERMUTE | IR_OP_SLICE | IR_OP_SELECT |
                           IR_OP_SPLIT | IR_OP_EXPAND; /* a cast names a kernel */
    char parts[3][48], name[16 + 3 * sizeof parts[0]]; /* "k" and an int, then 3 parts: never cut */
    name[0] = 'k';
    int o = 1 + (int)gr_int_text(pos, name + 1), np = 0; /* not snprintf: graph.c's "Printing" says why */
    for (int pass = 0; pass < 2 && !np; pass++)
        for (int i = 0; i < K->nops && np < 3; i++) {
            const char *op = p->src[K->ops[i]].op, *s = strchr(op, '.');
            s = s ? s + 1 : op;
            int len = (int)strcspn(s, ".");
            const int view = (ir_op_attrs_n(s, (size_t)len) & moves) != 0;
            int dup = 0;
            if (view && pass == 0)
                continue;
            while (len > 1 && *s == '_') {
                s++;
                len--;
            }
            len = len < (int)sizeof parts[np] - 1 ? len : (int)sizeof parts[np] - 1; /* (plain copies, not printf) */
            memcpy(parts[np], s, (size_t)len);
            parts[np][len] = '\0';
            for (int j = 0; j < np && !dup; j++)
                dup = !strcmp(parts[j], parts[np]);
            if (dup)
                continue;
            name[o++] = '_';
            memcpy(name + o, parts[np], (size_t)len + 1);
            o += len;
            np++;
        }
    /* The ELF's kernel record holds ISA_NAME_MAX - 1 bytes, ".xchg" included
     * for a ring exchange before the kernel: a longer name was cut there, no
     * longer matched its kernel and aborted the reroll pass.  The "k<pos>"
     * prefix keeps cut names unique. */
    name[ISA_NAME_MAX - 1 - strlen(".xchg")] = '\0';
    return ir_xstrdup(name);
}

static void kernel_ops(const ir_prog *p, ir_kernel *K)
{
    int cap = 0;
    for (int i = 0; i < K->nnodes; i++)
        cap += p->nodes[K->nodes[i]].nops;
    K->ops = ir_xalloc((size_t)(cap ? cap : 1) * sizeof *K->ops);
    K->nops = 0;
    for (int i = 0; i < K->nnodes; i++) {
        const ir_node *n = &p->nodes[K->nodes[i]];
        for (int j = 0; j < n->nops; j++) {
            int s = n->ops[j], dup = 0;
            for (int k = 0; k < K->nops && !dup; k++)
                dup = K->ops[k] == s;
            if (dup)
                continue;
            int at = K->nops++;
            while (at > 0 && (p->src[K->ops[at - 1]].line > p->src[s].line ||
                              (p->src[K->ops[at - 1]].line == p->src[s].line && K->ops[at - 1] > s))) {
                K->ops[at] = K->ops[at - 1];
                at--;
            }
            K->ops[at] = s;
        }
    }
}

/* Greedy list scheduling: among the kernels whose inputs are ready, run
 * the one that frees the most bytes (the earliest on ties). */
int ir_order(ir_prog *p)
{
    int K = p->nkernels, live = 0;
    kgraph G = {0};
    kgraph_build(p, &G);
    int *preds = ir_xalloc((size_t)(K + 1) * sizeof *preds), *left = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *left);
    int **reads = ir_xalloc((size_t)(K + 1) * sizeof *reads), *nreads = ir_xalloc((size_t)(K + 1) * sizeof *nreads);
    int *writes = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *writes), nw;
    char *done = ir_xalloc((size_t)K + 1);
    for (int k = 0; k < K; k++) {
        if (p->kernels[k].dead)
            continue;
        live++;
        for (int i = 0; i < G.nsucc[k]; i++)
            preds[G.succ[k][i]]++;
        reads[k] = ir_xalloc((size_t)(p->nbufs + 1) * sizeof **reads);
        ir_kernel_io(p, k, reads[k], &nreads[k], writes, &nw);
        for (int i = 0; i < nreads[k]; i++)
            left[reads[k][i]]++;
    }
    p->order = ir_xalloc((size_t)(live + 1) * sizeof *p->order);
    p->norder = 0;
    while (p->norder < live) {
        int best = -1;
        int64_t bfree = -1;
        for (int k = 0; k < K; k++) {
            if (p->kernels[k].dead || done[k] || preds[k])
                continue;
            int64_t f = freed_bytes(p, reads[k], nreads[k], left);
            if (f > bfree || (f == bfree && p->kernels[k].nodes[0] < p->kernels[best].nodes[0])) {
                best = k;
                bfree = f;
            }
        }
        assert(best >= 0); /* the kernel graph is acyclic */
        done[best] = 1;
        for (int i = 0; i < G.nsucc[best]; i++)
            preds[G.succ[best][i]]--;
        for (int i = 0; i < nreads[best]; i++)
            left[reads[best][i]]--;
        p->kernels[best].pos = p->norder;
        p->order[p->norder++] = best;
    }
    for (int i = 0; i < p->norder; i++) {
        ir_kernel *Kp = &p->kernels[p->order[i]];
        kernel_ops(p, Kp);
        Kp->name = kernel_name(p, Kp, i);
    }
    for (int k = 0; k < K; k++)
        free(reads[k]);
    free(reads);
    free(nreads);
    free(writes);
    free(preds);
    free(left);
    free(done);
    kgraph_free(&G);
    return 0;
}

/* ---- lastuse ---- */

int ir_lastuse(ir_prog *p)
{
    int64_t live = 0, peak = 0;
    int *reads = ir_xalloc((size_t)p->nbufs * sizeof *reads), *writes = ir_xalloc((size_t)p->nbufs * sizeof *writes);
    int nr, nw;
    for (int b = 0; b < p->nbufs; b++) {
        ir_buf *B = &p->bufs[b];
        B->internal = !B->dead && ir_buf_is_internal(p, b);
        B->last_use = -1;
    }
    for (int i = 0; i < p->norder; i++) {
        ir_kernel_io(p, p->order[i], reads, &nr, writes, &nw);
        for (int r = 0; r < nr; r++)
            p->bufs[reads[r]].last_use = i;
    }
    /* Peak bytes of buffers between kernels: allocated when written, freed
     * after the last reader (graph outputs stay). */
    for (int i = 0; i < p->norder; i++) {
        ir_kernel_io(p, p->order[i], reads, &nr, writes, &nw);
        for (int w = 0; w < nw; w++)
            if (!p->bufs[writes[w]].internal)
                live += ir_buf_bytes(&p->bufs[writes[w]]);
        peak = live > peak ? live : peak;
        for (int b = 0; b < p->nbufs; b++) {
            const ir_buf *B = &p->bufs[b];
            if (B->kind == IR_BUF_COMPUTED && !B->dead && !B->internal && !B->output && B->last_use == i)
                live -= ir_buf_bytes(B);
        }
    }
    free(reads);
    free(writes);
    p->peak_bytes = peak;
    p->lastuse_done = 1;
    return 0;
}
