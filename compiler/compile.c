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
    p->src = ir_xalloc((size_t)(g->nnodes + 1) * sizeof *p->src);
    for (int n = 0; n < g->nnodes; n++) {
        p->src[n].op = ir_xstrdup(g->nodes[n].op);
        p->src[n].line = g->nodes[n].line;
    }
    /* The program's graph text: the source graph as the printer writes it. */
    size_t len = 0;
    FILE *f = open_memstream(&p->graph_text, &len);
    if (!f)
        abort();
    gr_graph_print(g, f);
    fclose(f);
    return p;
}

/* One attempt: the front half and, for a target, the back half, with
 * the source ops p->host marks running on the host. */
static int compile_once(ir_prog *p, const gr_graph *g, const cc_compile_opts *opts, char *err, size_t errlen)
{
    p->graph = g;
    if (ir_run_passes(p, 0))
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
        p->program = cc_codegen(p, opts->target, err, errlen);
        p->opts.work_div = opts->work_div;
        p->opts.nwork_div = opts->nwork_div;
        free(wd);
        if (!p->program)
            return -1;
    }
    return 0;
}

/* Source op s as a host op; 1 if it was not one (getitem never is: it
 * picks a result of a host op). */
static int mark_op(const gr_graph *g, char *host, int s)
{
    if (s < 0 || host[s] || !strcmp(g->nodes[s].op, "getitem"))
        return 0;
    host[s] = 1;
    return 1;
}

/* After a failed attempt: the op it failed on, or the first op (by line)
 * of the kernel the back half refused that is not yet one, becomes a host
 * op; 0 when none is new. */
static int mark_host(const ir_prog *p, const gr_graph *g, char *host)
{
    if (p->fail_src >= 0)
        return mark_op(g, host, p->fail_src);
    /* one op at a time, by line: the others may then compile on the device */
    for (int j = 0; p->fail_kernel >= 0 && j < p->kernels[p->fail_kernel].nops; j++)
        if (mark_op(g, host, p->kernels[p->fail_kernel].ops[j]))
            return 1;
    return 0;
}

/* The host fallback (docs/compiler.md, "Host ops"): when an attempt
 * fails on a source op (p->fail_src) that is not yet a host op, that op
 * becomes one and the graph is compiled again from the start.  Each
 * attempt marks one more op, so there are at most as many as ops.  The
 * last attempt's dump (dump_after) is handed back in *dump; *fused is
 * set when fuse_siblings fused products in any attempt. */
static cc_result *compile_graph(const gr_graph *g, const cc_compile_opts *opts, char *err, size_t errlen,
                                char **dump, size_t *dlen, int *fused)
{
    char *host = ir_xalloc((size_t)g->nnodes + 1);
    for (;;) {
        ir_prog *p = prog_new(g, opts, err, errlen);
        memcpy(p->host, host, (size_t)g->nnodes);
        /* A dump shows the last attempt only: each goes to memory first. */
        FILE *mem = p->opts.dump_after ? open_memstream(dump, dlen) : NULL;
        if (p->opts.dump_after && !mem)
            abort();
        p->opts.dump = mem;
        int failed = compile_once(p, g, opts, err, errlen);
        *fused |= p->nsiblings > 0; /* an attempt the back half refused may have fused some */
        int marked = failed && !(opts && opts->no_fallback) && mark_host(p, g, host);
        if (mem) {
            fclose(mem);
            if (marked) {
                free(*dump);
                *dump = NULL;
            }
        }
        p->opts.dump = opts ? opts->dump : NULL;
        if (!failed) {
            free(host);
            p->err = NULL; /* the caller's buffer is not ours to keep */
            p->errlen = 0;
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

static int host_ops(const cc_result *r)
{
    int n = 0;
    for (int i = 0; i < r->nsrc; i++)
        n += r->host[i];
    return n;
}

/* alt is the better program than r: r failed, or alt runs fewer source
 * ops on the host (the fallback), or as many and is estimated faster. */
static int better(const cc_result *alt, const cc_result *r)
{
    if (!alt || !r)
        return alt != NULL;
    const int ha = host_ops(alt), hr = host_ops(r);
    return ha < hr || (ha == hr && be_estimate_total(alt) < be_estimate_total(r));
}

/* Products that share A are fused (fuse_siblings) only where that saves
 * time: when the pass fused some in any attempt (the host fallback's
 * attempts included) or the compile failed, the graph is compiled again
 * without it and the better program is kept, with its dump. */
cc_result *cc_compile(const gr_graph *g, const cc_compile_opts *opts, char *err, size_t errlen)
{
    if (errlen)
        err[0] = 0;
    if (opts && opts->dump_after && ir_pass_check(opts->dump_after, opts->target != NULL, err, errlen))
        return NULL;
    char *dump = NULL, *adump = NULL;
    size_t dlen = 0, alen = 0;
    int fused = 0, afused = 0;
    cc_result *r = compile_graph(g, opts, err, errlen, &dump, &dlen, &fused);
    if ((!r || fused) && opts && opts->target && opts->siblings == CC_SIBLINGS_ESTIMATE) {
        cc_compile_opts apart = *opts;
        apart.siblings = CC_SIBLINGS_NEVER;
        char aerr[512];
        cc_result *alt = compile_graph(g, &apart, aerr, sizeof aerr, &adump, &alen, &afused);
        if (better(alt, r)) {
            cc_result *t = r;
            r = alt;
            alt = t;
            char *d = dump;
            dump = adump;
            adump = d;
            dlen = alen;
            if (errlen)
                err[0] = 0;
        }
        cc_result_free(alt);
    }
    if (dump)
        fwrite(dump, 1, dlen, opts->dump ? opts->dump : stderr);
    free(dump);
    free(adump);
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
    gr_graph_free(p->dg);
    free(p->dfrom);
    for (int i = 0; i < p->ndconsts; i++)
        free(p->dconsts[i].data);
    free(p->dconsts);
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
