/* compile.c: the graph compiler's entry: cc_compile runs the pass table
 * (passes.c), the front half and, for a target, the back half; the
 * report and the accessors of cc.h.  docs/compiler.md describes each
 * pass and the text they print. */
#include "ir.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

isa_program *cc_result_take_program(cc_result *r)
{
    isa_program *p = r->program;
    r->program = NULL;
    return p;
}

static ir_prog *prog_new(const gr_graph *g, const cc_compile_opts *opts, char *err, size_t errlen)
{
    ir_prog *p = ir_xalloc(sizeof *p);
    if (opts)
        p->opts = *opts;
    p->path = ir_xstrdup(g->path ? g->path : "<graph>");
    p->gname = ir_xstrdup(g->name ? g->name : "graph");
    p->err = err;
    p->errlen = errlen;
    p->stage = "start";
    p->nsrc = g->nnodes;
    p->host = ir_xalloc((size_t)(g->nnodes + 1));
    p->fail_src = -1;
    p->fail_kernel = -1;
    p->fail_epilogue = -1;
    p->src = ir_xalloc((size_t)(g->nnodes + 1) * sizeof *p->src);
    for (int n = 0; n < g->nnodes; n++) {
        p->src[n].op = ir_xstrdup(g->nodes[n].op);
        p->src[n].line = g->nodes[n].line;
    }
    /* The program's graph text: the source graph as the printer writes it. */
    p->graph_text = gr_graph_text(g);
    return p;
}

static void *dup_array(const void *a, size_t n, size_t elem)
{
    return ir_xmemdup(a, n * elem);
}

static char *dup_str(const char *s)
{
    return s ? ir_xstrdup(s) : NULL;
}

/* The program's expressions, buffers and nodes copied, arrays at their
 * capacities (ir_xgrow grows them from there). */
static void copy_ir(ir_prog *q, const ir_prog *p)
{
    const ir_arena *A = &p->A;
    q->A.e = dup_array(A->e, (size_t)A->cap, sizeof *A->e);
    q->A.memo = dup_array(A->memo, (size_t)A->cap, sizeof *A->memo);
    q->A.stamp = dup_array(A->stamp, (size_t)A->cap, sizeof *A->stamp);
    q->A.hash = dup_array(A->hash, (size_t)A->hcap, sizeof *A->hash);
    q->bufs = dup_array(p->bufs, (size_t)p->capbufs, sizeof *p->bufs);
    q->bnames = dup_array(p->bnames, (size_t)p->capbnames, sizeof *p->bnames);
    for (int b = 0; b < p->nbufs; b++) {
        ir_buf *B = &q->bufs[b];
        assert(p->bnames[b] == p->bufs[b].name);
        q->bnames[b] = B->name = dup_str(B->name);
        B->param_key = dup_str(B->param_key);
        B->cdata = dup_array(B->cdata, (size_t)gr_ttype_numel(&B->type), sizeof *B->cdata);
        B->parts = dup_array(B->parts, (size_t)B->nparts, sizeof *B->parts);
    }
    q->nodes = dup_array(p->nodes, (size_t)p->capnodes, sizeof *p->nodes);
    for (int n = 0; n < p->nnodes; n++) {
        ir_node *N = &q->nodes[n];
        N->ops = dup_array(N->ops, (size_t)N->nops, sizeof *N->ops);
        N->hin = dup_array(N->hin, (size_t)N->nhin, sizeof *N->hin);
        N->hout = dup_array(N->hout, (size_t)N->nhout, sizeof *N->hout);
        N->reads = dup_array(N->reads, (size_t)N->nreads, sizeof *N->reads);
    }
    q->kernels = dup_array(p->kernels, (size_t)p->nkernels + 1, sizeof *p->kernels);
    for (int k = 0; k < p->nkernels; k++) {
        ir_kernel *K = &q->kernels[k];
        K->nodes = dup_array(K->nodes, (size_t)K->nnodes, sizeof *K->nodes);
        K->name = dup_str(K->name);
        K->ops = dup_array(K->ops, (size_t)K->nops, sizeof *K->ops);
    }
}

/* A copy of p, which the front half has taken up to fuse_siblings (no
 * back half yet).  What decompose leaves for lower (dg, dfrom, dconsts, dnan)
 * is not copied: nothing after lower reads it.  A field added to
 * cc_result must be copied here too (or left out with a reason), and
 * freed in cc_result_free: the size check stops the build until it is. */
_Static_assert(sizeof(struct cc_result) == 464, "compile.c's prog_copy copies every cc_result field: add the new one");
static ir_prog *prog_copy(const ir_prog *p)
{
    assert(!p->be && !p->program && !p->order && !p->ndconsts == !p->dconsts && !p->dnan);
    for (int i = 0; i < p->ndconsts; i++)
        assert(!p->dconsts[i].data); /* lower moved each into its buffer */
    ir_prog *q = ir_xalloc(sizeof *q);
    *q = *p;
    q->path = dup_str(p->path);
    q->gname = dup_str(p->gname);
    q->src = dup_array(p->src, (size_t)p->nsrc + 1, sizeof *p->src);
    for (int n = 0; n < p->nsrc; n++)
        q->src[n].op = dup_str(p->src[n].op);
    q->host = dup_array(p->host, (size_t)p->nsrc + 1, 1);
    q->dg = NULL;
    q->dfrom = NULL;
    q->dnan = NULL;
    q->dconsts = NULL;
    q->ndconsts = 0;
    copy_ir(q, p);
    q->outputs = dup_array(p->outputs, (size_t)p->noutputs, sizeof *p->outputs);
    for (int o = 0; o < p->noutputs; o++)
        q->outputs[o].name = dup_str(p->outputs[o].name);
    q->updates = dup_array(p->updates, (size_t)p->nupdates, sizeof *p->updates);
    for (int u = 0; u < p->nupdates; u++) {
        q->updates[u].state = dup_str(p->updates[u].state);
        q->updates[u].index = dup_str(p->updates[u].index);
        q->updates[u].src = dup_str(p->updates[u].src);
    }
    q->graph_text = dup_str(p->graph_text);
    return q;
}

/* The front half's passes before fuse_siblings read nothing the two
 * attempts of cc_compile differ in (opts.siblings; the host ops, none in
 * either's first try): when fuse_siblings will fuse some products (then
 * the products apart are tried too), the first attempt's program after
 * those passes is copied (copy), and the second starts from the copy
 * instead of decomposing and lowering the graph again. */
typedef struct {
    int keep;     /* copy the program after the passes before fuse_siblings */
    ir_prog *copy;
} front_share;

/* The front half: all of it, or from fuse_siblings on for a copy (p->stage
 * past dce), keeping a copy first when sh asks for one. */
static int run_front(ir_prog *p, front_share *sh)
{
    const char *from = strcmp(p->stage, "start") ? "fuse_siblings" : NULL;
    if (!from && sh && sh->keep) {
        if (ir_run_passes(p, 0, NULL, "fuse_siblings"))
            return -1;
        sh->keep = 0;
        sh->copy = ir_siblings_fuse_some(p) ? prog_copy(p) : NULL;
        from = "fuse_siblings";
    }
    return ir_run_passes(p, 0, from, NULL);
}

/* One attempt: the front half and, for a target, the back half (only
 * the passes before codegen with plan_only), with the source ops p->host
 * marks running on the host. */
static int compile_once(ir_prog *p, const gr_graph *g, const cc_compile_opts *opts, int plan_only, char *err,
                        size_t errlen, front_share *sh)
{
    p->graph = g;
    if (run_front(p, sh))
        return -1;
    p->graph = NULL;
    if (opts && opts->target) {
        /* The workdiv pass sees the graph's work_div hints, then the
         * caller's overrides (the last for a kernel wins). */
        int nwd = 0;
        const char **wd = ir_xalloc((size_t)(g->nhints + opts->nwork_div + 1) * sizeof *wd);
        for (int h = 0; h < g->nhints; h++)
            if (!strncmp(g->hints[h], "work_div", 8) && (g->hints[h][8] == ' ' || g->hints[h][8] == '\t'))
                wd[nwd++] = g->hints[h] + 9;
        for (int h = 0; h < opts->nwork_div; h++)
            wd[nwd++] = opts->work_div[h];
        p->opts.work_div = wd;
        p->opts.nwork_div = nwd;
        int rc = 0;
        if (plan_only)
            rc = ir_back_plan(p, opts->target, err, errlen);
        else
            rc = (p->program = cc_codegen(p, opts->target, err, errlen)) ? 0 : -1;
        p->opts.work_div = opts->work_div;
        p->opts.nwork_div = opts->nwork_div;
        free(wd);
        return rc;
    }
    return 0;
}

/* Source op s as a host op; 1 if it was not one (getitem never is: it
 * picks a result of a host op). */
static int mark_op(const gr_graph *g, char *host, int s)
{
    if (s < 0 || (host[s] & IR_SRC_HOST) || !strcmp(g->nodes[s].op, "getitem"))
        return 0;
    host[s] |= IR_SRC_HOST;
    return 1;
}

/* The median of the ops row kernel K's nodes compute (a node's last op),
 * above the least: cut there, K is fused as two; -1 when all compute one
 * op (a layer norm's nodes, say), or K is not a row kernel. */
static int cut_op(const ir_prog *p, const ir_kernel *K)
{
    if (K->kind == IR_MATMUL || K->kind == IR_HOST)
        return -1;
    int *ops = ir_xalloc((size_t)K->nnodes * sizeof *ops), n = 0;
    for (int i = 0; i < K->nnodes; i++) {
        const int s = ir_node_op(&p->nodes[K->nodes[i]]);
        if (s >= 0)
            ops[n++] = s;
    }
    qsort(ops, (size_t)n, sizeof *ops, ir_cmp_int);
    int d = 0; /* distinct ops, in place */
    for (int i = 0; i < n; i++)
        if (!d || ops[i] != ops[d - 1])
            ops[d++] = ops[i];
    const int s = d > 1 ? ops[d / 2] : -1;
    free(ops);
    return s;
}

/* Kernel K joined by fuse_horizontal: its ops (some, none kept alone
 * yet) marked IR_SRC_ALONE (their kernels join no independent one), and
 * 1; else 0. */
static int mark_alone(const ir_kernel *K, char *host)
{
    if (!K->joined || !K->nops)
        return 0;
    for (int j = 0; j < K->nops; j++)
        if (host[K->ops[j]] & IR_SRC_ALONE)
            return 0;
    for (int j = 0; j < K->nops; j++)
        host[K->ops[j]] |= IR_SRC_ALONE;
    return 1;
}

/* After a failed attempt, before any host op, the fusion the back half
 * refused is undone, and 1 returned (0 when it already was): when a
 * matmul kernel could not load an operand of its epilogue (a bias slice
 * that starts inside a stick), that node's op keeps its pointwise nodes
 * out of matmul epilogues, as row kernels of their own, which restickify
 * what they read; a fused row kernel refused on no op of its own (a row
 * that does not fit LX, say) first loses its horizontal fusion (mark_alone:
 * a conv's K-block copies, each fitting), then is cut in two (IR_SRC_CUT
 * at cut_op), halved again as long as a half is refused.  Not host ops:
 * tried with --no-fallback too.  Only for the kernel the error names. */
static int mark_apart(const ir_prog *p, char *host)
{
    const int s = p->fail_epilogue;
    if (p->fail_kernel < 0)
        return 0;
    const ir_kernel *K = &p->kernels[p->fail_kernel];
    if (s < 0 && p->fail_src < 0) {
        if (mark_alone(K, host))
            return 1;
        const int c = cut_op(p, K);
        if (c < 0 || (host[c] & IR_SRC_CUT))
            return 0;
        host[c] |= IR_SRC_CUT;
        return 1;
    }
    if (s < 0 || (host[s] & (IR_SRC_APART | IR_SRC_HOST)))
        return 0;
    for (int j = 0; j < K->nops; j++)
        if (K->ops[j] == s) {
            host[s] |= IR_SRC_APART;
            return 1;
        }
    return 0;
}

/* Does source op s compute a product (a matmul node: a convolution's, a
 * linear's)? */
static int computes_product(const ir_prog *p, int s)
{
    for (int n = 0; n < p->nnodes; n++)
        if (p->nodes[n].kind == IR_MATMUL)
            for (int j = 0; j < p->nodes[n].nops; j++)
                if (p->nodes[n].ops[j] == s)
                    return 1;
    return 0;
}

/* Does node t read the result of node u? */
static int reads(const gr_graph *g, int t, int u)
{
    for (int i = 0; i < g->nodes[t].nargs; i++)
        if (gr_arg_uses(&g->nodes[t].args[i], g->nodes[u].out))
            return 1;
    return 0;
}

/* The ops sent to the host ahead of product op s (IR_SRC_AHEAD) that read
 * it, or read one of those: back on the device, now that s goes to the
 * host (its kernel was refused without them: the product itself was). */
static void unmark_ahead(const gr_graph *g, char *host, int s)
{
    int *back = ir_xalloc((size_t)g->nnodes * sizeof *back), n = 0;
    back[n++] = s;
    for (int k = 0; k < n; k++)
        for (int t = 0; t < g->nnodes; t++)
            if ((host[t] & IR_SRC_AHEAD) && reads(g, t, back[k])) {
                host[t] &= (char)~(IR_SRC_HOST | IR_SRC_AHEAD);
                back[n++] = t;
            }
    free(back);
}

/* A refused kernel of no source op: a copy bringing back the name of a
 * value decompose folded away (a clone of a host op's integers, which a
 * device kernel cannot read, for a host op reading the clone: lower.c
 * host_input).  The op that defines that name becomes a host op. */
static int mark_named(const ir_prog *p, const gr_graph *g, char *host, const ir_kernel *K)
{
    for (int i = 0; i < K->nnodes; i++) {
        const int v = gr_graph_find(g, p->bufs[p->nodes[K->nodes[i]].out].name);
        for (int s = 0; v >= 0 && s < g->nnodes; s++)
            if (g->nodes[s].out == v && mark_op(g, host, s))
                return 1;
    }
    return 0;
}

/* After a failed attempt: the op it failed on, or the first op (by line)
 * of the kernel the back half refused that is not yet one, becomes a host
 * op, an op computing no product first (the refused kernel holds a
 * product's last step, a conv's copy out, fused with the op after it:
 * that op alone on the host keeps the product on the device; when the
 * product follows, those ops come back: unmark_ahead); 0 when none is
 * new. */
static int mark_host(const ir_prog *p, const gr_graph *g, char *host)
{
    if (p->fail_src >= 0)
        return mark_op(g, host, p->fail_src);
    if (p->fail_kernel < 0)
        return 0;
    /* one op at a time, by line: the others may then compile on the device */
    const ir_kernel *K = &p->kernels[p->fail_kernel];
    int product = -1;
    for (int j = 0; j < K->nops; j++)
        if (product < 0 && computes_product(p, K->ops[j]) && !(host[K->ops[j]] & IR_SRC_HOST))
            product = K->ops[j];
    for (int j = 0; j < K->nops; j++)
        if (!computes_product(p, K->ops[j]) && mark_op(g, host, K->ops[j])) {
            host[K->ops[j]] |= product >= 0 ? IR_SRC_AHEAD : 0;
            return 1;
        }
    if (product < 0)
        return mark_named(p, g, host, K);
    if (!mark_op(g, host, product))
        return 0;
    unmark_ahead(g, host, product);
    return 1;
}

/* One of cc_compile's attempts: the fused products (as the options
 * ask) or the products apart; its result, error text, dump (dump_after:
 * its last try's), whether fuse_siblings fused products in any try, and
 * the span cache its plans use (ir_prog.spans). */
typedef struct {
    const cc_compile_opts *opts;
    cc_result *r;
    char *err;
    size_t errlen;
    char *dump;
    size_t dlen;
    int fused;
    struct be_spancache **spans;
} attempt;

/* The host fallback (docs/compiler.md, "Host ops"): when an attempt
 * fails on a source op (p->fail_src) that is not yet a host op, that op
 * becomes one and the graph is compiled again from the start (a
 * fusion the back half refused is first undone: mark_apart).  Each
 * attempt marks one more op, so there are at most three times as many as
 * ops.  host: the source ops' marks the attempts start with (taken).  The last
 * try's dump (dump_after) is handed back in a->dump; a->fused is set when
 * fuse_siblings fused products in any try.  With plan_only the
 * result is planned, not compiled (compile_finish). */
static cc_result *compile_graph(const gr_graph *g, attempt *a, char *host, int plan_only, front_share *sh)
{
    const cc_compile_opts *opts = a->opts;
    char *err = a->err, **dump = &a->dump;
    const size_t errlen = a->errlen;
    size_t *dlen = &a->dlen;
    int *fused = &a->fused;
    for (;;) {
        ir_prog *p = sh && sh->copy ? sh->copy : prog_new(g, opts, err, errlen);
        if (sh && sh->copy) { /* the first try: no host ops, as in the copy */
            sh->copy = NULL;
            p->opts = *opts;
            p->err = err;
            p->errlen = errlen;
        }
        p->spans = a->spans;
        memcpy(p->host, host, (size_t)g->nnodes);
        /* A dump shows the last try only: each goes to memory first (an
         * earlier try's, kept when it failed, given back here). */
        if (p->opts.dump_after) {
            free(*dump);
            *dump = NULL;
        }
        FILE *mem = p->opts.dump_after ? open_memstream(dump, dlen) : NULL;
        if (p->opts.dump_after && !mem)
            abort();
        p->opts.dump = mem;
        int failed = compile_once(p, g, opts, plan_only, err, errlen, sh);
        sh = NULL; /* a later try has host ops */
        *fused |= p->nsiblings > 0; /* an attempt the back half refused may have fused some */
        int marked = failed && (mark_apart(p, host) || (!(opts && opts->no_fallback) && mark_host(p, g, host)));
        if (mem)
            fclose(mem);
        p->opts.dump = opts ? opts->dump : NULL;
        if (!failed) {
            free(host);
            if (!plan_only) { /* the caller's buffer is not ours to keep */
                p->err = NULL;
                p->errlen = 0;
            }
            return p;
        }
        cc_result_free(p);
        if (!marked) {
            free(host);
            return NULL;
        }
        if (errlen)
            err[0] = 0;
    }
}

/* Codegen for a's result, planned by compile_graph: the compiled result,
 * or, when codegen fails, the host fallback's from its host ops on. */
static cc_result *compile_finish(const gr_graph *g, attempt *a)
{
    cc_result *p = a->r;
    const cc_compile_opts *opts = a->opts;
    char *err = p->err;
    const size_t errlen = p->errlen;
    p->program = ir_back_finish(p, opts->target, err, errlen);
    if (p->program) {
        p->err = NULL;
        p->errlen = 0;
        return p;
    }
    char *host = ir_xalloc((size_t)g->nnodes + 1);
    memcpy(host, p->host, (size_t)g->nnodes);
    const int marked = mark_apart(p, host) || (!opts->no_fallback && mark_host(p, g, host));
    cc_result_free(p);
    if (!marked) {
        free(host);
        return NULL;
    }
    if (errlen)
        err[0] = 0;
    return compile_graph(g, a, host, 0, NULL);
}

static int host_ops(const cc_result *r)
{
    int n = 0;
    for (int i = 0; i < r->nsrc; i++)
        n += (r->host[i] & IR_SRC_HOST) != 0;
    return n;
}

/* r is planned (compile_graph with plan_only): the back half's plan,
 * no program yet. */
static int planned(const cc_result *r)
{
    return r && r->be && !r->program;
}

/* The estimate of r: be_estimate_total once compiled, its lower bound
 * while planned (asked once: the choice asks it of a plan up to twice,
 * and the plan does not change while planned). */
static double floor_est(cc_result *r)
{
    if (!planned(r))
        return be_estimate_total(r);
    if (!r->floor)
        r->floor = be_estimate_floor(r);
    return r->floor;
}

/* What the choice between the attempts reads of one: whether there is
 * one (a failed attempt is none), whether it is planned only, its host
 * ops and floor_est.  A planned attempt set aside (shelve) keeps it. */
typedef struct {
    int live, planned, hops;
    double est;
} standing;

static standing standing_of(cc_result *r)
{
    return r ? (standing){1, planned(r), host_ops(r), floor_est(r)} : (standing){0};
}

/* alt is sure to be the better program than r, whatever codegen makes
 * of r if planned (its fallback only adds host ops, or fails): r failed,
 * or alt runs fewer source ops on the host (the fallback), or as many and
 * is estimated faster.  Between compiled ones, whether it is better. */
static int sure_better(standing alt, standing r)
{
    if (!alt.live || alt.planned)
        return 0;
    if (!r.live)
        return 1;
    return alt.hops < r.hops || (alt.hops == r.hops && alt.est < r.est);
}

/* alt, planned, may turn out the better program than r once compiled. */
static int may_better(standing alt, standing r)
{
    if (!r.live || r.planned)
        return 1;
    return alt.hops < r.hops || (alt.hops == r.hops && alt.est < r.est);
}

/* Whether a planned attempt (is_alt: the products apart, else the fused
 * ones) may still be kept against the other: the products apart while
 * they may turn out better, the fused ones unless the other is sure to
 * be better. */
static int may_keep(int is_alt, standing self, standing other)
{
    return is_alt ? may_better(self, other) : !sure_better(other, self);
}

/* Which of the planned attempts *r (fuse_siblings as asked) and *alt
 * (products apart; tried: attempted) codegen runs for next, the one
 * likelier to be kept first; one that cannot be kept is dropped.  NULL
 * when none is left to run. */
static cc_result **next_codegen(cc_result **r, cc_result **alt, int tried, char *err, size_t errlen)
{
    if (!tried)
        return planned(*r) ? r : NULL;
    if (planned(*r) && planned(*alt)) {
        const int ha = host_ops(*alt), hr = host_ops(*r);
        return ha < hr || (ha == hr && floor_est(*alt) < floor_est(*r)) ? alt : r;
    }
    if (planned(*alt) && !may_keep(1, standing_of(*alt), standing_of(*r))) {
        cc_result_free(*alt);
        *alt = NULL;
    }
    if (planned(*r) && !may_keep(0, standing_of(*r), standing_of(*alt))) {
        cc_result_free(*r);
        *r = NULL;
        if (errlen)
            err[0] = 0;
    }
    return planned(*r) ? r : planned(*alt) ? alt : NULL;
}

/* A planned attempt set aside while the other one's codegen runs: its
 * program and plan (two plans and a codegen at once were the compile's
 * peak of heap, which it faults in page by page) are freed; its standing
 * and host marks are kept to judge it and, while it may still be kept,
 * plan it again (the same plan: an attempt reads only the graph, the
 * options and the marks). */
typedef struct {
    cc_result **r; /* its slot; NULL when none is set aside */
    standing st;
    char *host;
} shelf;

static shelf shelve(cc_result **r)
{
    shelf s = {0};
    if (!planned(*r))
        return s;
    s = (shelf){r, standing_of(*r), ir_xmemdup((*r)->host, (size_t)(*r)->nsrc + 1)};
    cc_result_free(*r);
    *r = NULL;
    return s;
}

/* Products that share A are fused (fuse_siblings) only where that saves
 * time: when the pass fused some in any attempt (the host fallback's
 * attempts included) or the compile failed, the graph is compiled again
 * without it and the better program is kept, with its dump.  Each is
 * planned first (the passes before codegen) and codegen runs only for
 * those that can still be kept: the plan's estimates bound the
 * program's from below (be_estimate_floor), and were equal to them on
 * the bench graphs; the other plan is set aside (shelve) while one's
 * codegen runs.  A dump shows the passes of both: compiled whole.
 * The attempts share the row kernels' span cache (be_rows.c): found by
 * what the walks read, it holds for every attempt. */
cc_result *cc_compile(const gr_graph *g, const cc_compile_opts *opts, char *err, size_t errlen)
{
    if (errlen)
        err[0] = 0;
    if (opts && opts->dump_after && ir_pass_check(opts->dump_after, opts->target != NULL, err, errlen))
        return NULL;
    const int choose = opts && opts->target && opts->siblings == CC_SIBLINGS_ESTIMATE;
    const int plan = choose && !opts->dump_after;
    char aerr[512];
    cc_compile_opts apart = opts ? *opts : (cc_compile_opts){0};
    apart.siblings = CC_SIBLINGS_NEVER;
    struct be_spancache *spans = NULL; /* the attempts' row kernels walk the same loads */
    /* [0] fuse_siblings as asked, [1] the products apart */
    attempt a[2] = {{.opts = opts, .err = err, .errlen = errlen, .spans = &spans},
                    {.opts = &apart, .err = aerr, .errlen = sizeof aerr, .spans = &spans}};
    front_share front = {.keep = plan}; /* (a dump shows each attempt's every pass) */
    a[0].r = compile_graph(g, &a[0], ir_xalloc((size_t)g->nnodes + 1), plan, &front);
    int tried = 0;
    for (;;) {
        if (choose && !tried && (!a[0].r || a[0].fused)) {
            a[1].r = compile_graph(g, &a[1], ir_xalloc((size_t)g->nnodes + 1), plan, &front);
            tried = 1;
        }
        cc_result **next = next_codegen(&a[0].r, &a[1].r, tried, err, errlen);
        if (!next)
            break;
        const int i = next == &a[1].r, o = !i; /* codegen for i while o is set aside */
        const shelf sh = shelve(&a[o].r);
        a[i].r = compile_finish(g, &a[i]);
        if (sh.r && (opts->replan || may_keep(o, sh.st, standing_of(a[i].r))))
            a[o].r = compile_graph(g, &a[o], sh.host, 1, NULL);
        else if (sh.r) {
            free(sh.host);
            if (!o && errlen)
                err[0] = 0; /* the fused ones dropped, as next_codegen drops them */
        }
    }
    const int k = sure_better(standing_of(a[1].r), standing_of(a[0].r)); /* the one kept */
    if (k && errlen)
        err[0] = 0;
    cc_result *r = a[k].r;
    cc_result_free(a[!k].r);
    cc_result_free(front.copy); /* not taken: the products apart were not tried */
    if (r) /* compiled: no plan of its own needs the cache now, and a later one makes its own */
        r->spans = NULL;
    be_spancache_free(spans);
    if (r && r->program) /* the cache's slots, freed into the program's arena (be_rows.c rk_cache) */
        isa_arena_trim(r->program->arena);
    if (a[k].dump)
        fwrite(a[k].dump, 1, a[k].dlen, opts->dump ? opts->dump : stderr);
    free(a[0].dump);
    free(a[1].dump);
    return r;
}

void cc_result_free(cc_result *p)
{
    if (!p)
        return;
    be_free(p);
    isa_program_free(p->program);
    free(p->graph_text);
    for (int i = 0; i < p->nsrc; i++)
        free(p->src[i].op);
    free(p->src);
    free(p->host);
    ir_free_dgraph(p); /* (a compile that stopped before lower) */
    ir_arena_free(&p->A);
    for (int b = 0; b < p->nbufs; b++) {
        free(p->bufs[b].name);
        free(p->bufs[b].param_key);
        free(p->bufs[b].cdata);
        free(p->bufs[b].parts);
    }
    free(p->bufs);
    free(p->bnames);
    for (int n = 0; n < p->nnodes; n++) {
        free(p->nodes[n].ops);
        free(p->nodes[n].hin);
        free(p->nodes[n].hout);
        free(p->nodes[n].reads);
    }
    free(p->nodes);
    for (int o = 0; o < p->noutputs; o++)
        free(p->outputs[o].name);
    free(p->outputs);
    for (int u = 0; u < p->nupdates; u++) {
        free(p->updates[u].state);
        free(p->updates[u].index);
        free(p->updates[u].src);
    }
    free(p->updates);
    for (int k = 0; k < p->nkernels; k++) {
        free(p->kernels[k].nodes);
        free(p->kernels[k].name);
        free(p->kernels[k].ops);
    }
    free(p->kernels);
    free(p->order);
    free(p->path);
    free(p->gname);
    free(p);
}

/* ---- The report ---- */

static void print_bufs(const ir_prog *p, const char *what, const int *b, int n, FILE *f)
{
    char ty[256];
    fprintf(f, "  %s:", what);
    for (int i = 0; i < n; i++) {
        gr_ttype_str(&p->bufs[b[i]].type, ty, sizeof ty);
        fprintf(f, "%s %s %s%s", i ? "," : "", p->bufs[b[i]].name, ty, p->bufs[b[i]].internal ? " (internal)" : "");
    }
    fputs(n ? "\n" : " none\n", f);
}

void cc_result_traffic(const cc_result *p, int64_t *bytes_read, int64_t *bytes_written)
{
    int *reads = ir_xalloc((size_t)p->nbufs * sizeof *reads), *writes = ir_xalloc((size_t)p->nbufs * sizeof *writes);
    int nr, nw;
    *bytes_read = *bytes_written = 0;
    for (int i = 0; i < p->norder; i++) {
        ir_kernel_io(p, p->order[i], reads, &nr, writes, &nw);
        for (int r = 0; r < nr; r++)
            *bytes_read += ir_buf_bytes(&p->bufs[reads[r]]);
        for (int w = 0; w < nw; w++)
            if (!p->bufs[writes[w]].internal)
                *bytes_written += ir_buf_bytes(&p->bufs[writes[w]]);
    }
    free(reads);
    free(writes);
}

void cc_compile_report(const cc_result *p, FILE *f)
{
    int *reads = ir_xalloc((size_t)p->nbufs * sizeof *reads), *writes = ir_xalloc((size_t)p->nbufs * sizeof *writes);
    int nr, nw;
    fprintf(f, "graph %s: %d kernel%s\n", p->gname, p->norder, p->norder == 1 ? "" : "s");
    for (int i = 0; i < p->norder; i++) {
        const ir_kernel *K = &p->kernels[p->order[i]];
        fprintf(f, "%s: %s ", K->name, ir_node_kind_names[K->kind]);
        ir_sig_print(&K->sig, f);
        fputc('\n', f);
        fputs("  ops:", f);
        for (int j = 0; j < K->nops; j++)
            fprintf(f, "%s %s (line %d)", j ? "," : "", p->src[K->ops[j]].op, p->src[K->ops[j]].line);
        fputs(K->nops ? "\n" : " none\n", f);
        ir_kernel_io(p, p->order[i], reads, &nr, writes, &nw);
        print_bufs(p, "reads", reads, nr, f);
        print_bufs(p, "writes", writes, nw, f);
        if (K->kind != IR_MATMUL || K->nnodes == 1)
            continue;
        /* What the template stores: acc itself (when read outside), and
         * each epilogue result leaving the kernel. */
        const ir_node *mm = &p->nodes[K->nodes[0]];
        const char *const *vn = ir_node_var_names(mm);
        for (int j = 0; j < K->nnodes; j++) {
            const ir_node *n = &p->nodes[K->nodes[j]];
            if (p->bufs[n->out].internal)
                continue;
            fprintf(f, "  epilogue: %s[", p->bufs[n->out].name);
            ir_idx_print(j ? &n->epi_store : &n->store, IR_MAX_VARS, vn, f);
            fputs("] = ", f);
            if (j)
                ir_expr_print(&p->A, n->epi, vn, p->bnames, f);
            else
                fputs("acc", f);
            fputc('\n', f);
        }
    }
    int64_t rd, wr;
    cc_result_traffic(p, &rd, &wr);
    fprintf(f, "total: %d kernel%s, %lld bytes read, %lld bytes written, peak %lld bytes between kernels\n", p->norder,
            p->norder == 1 ? "" : "s", (long long)rd, (long long)wr, (long long)p->peak_bytes);
    if (p->be) { /* the back half ran: its section */
        be_print(p, "report", f);
        be_reroll_print(p, "report", f);
    }
    free(reads);
    free(writes);
}

/* ---- Accessors ---- */

int cc_result_nkernels(const cc_result *r)
{
    return r->norder;
}

static const ir_kernel *kernel_at(const cc_result *r, int i)
{
    assert(i >= 0 && i < r->norder);
    return &r->kernels[r->order[i]];
}

cc_kernel_kind cc_result_kernel_kind(const cc_result *r, int i)
{
    static const cc_kernel_kind kinds[] = {[IR_POINTWISE] = CC_KERNEL_POINTWISE,
                                           [IR_REDUCTION] = CC_KERNEL_REDUCTION,
                                           [IR_MATMUL] = CC_KERNEL_MATMUL,
                                           [IR_HOST] = CC_KERNEL_HOST};
    return kinds[kernel_at(r, i)->kind];
}

const char *cc_result_kernel_name(const cc_result *r, int i)
{
    return kernel_at(r, i)->name;
}

int cc_result_kernel_nnodes(const cc_result *r, int i)
{
    return kernel_at(r, i)->nnodes;
}

int cc_result_kernel_nops(const cc_result *r, int i)
{
    return kernel_at(r, i)->nops;
}

const char *cc_result_kernel_op(const cc_result *r, int i, int j, int *line)
{
    const ir_kernel *K = kernel_at(r, i);
    assert(j >= 0 && j < K->nops);
    if (line)
        *line = r->src[K->ops[j]].line;
    return r->src[K->ops[j]].op;
}

double cc_result_estimate(const cc_result *r, const char *name)
{
    return be_estimate(r, name);
}

int cc_result_buffer_internal(const cc_result *r, const char *name)
{
    for (int b = 0; b < r->nbufs; b++)
        if (!r->bufs[b].dead && !strcmp(r->bufs[b].name, name))
            return r->bufs[b].internal;
    return -1;
}
