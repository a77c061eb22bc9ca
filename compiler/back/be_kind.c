/* be_kind.c: the kernel-kind table: what each kind of kernel (matmul
 * template, row kernel) supplies to the back half's passes, with each
 * kind's work_div SPEC and its line in the workdiv dump. */
#include "backend.h"

#include <inttypes.h>

/* ---- work_div SPEC: each kind's split (docs/compiler.md, "Overriding the work division") ---- */

/* A positive decimal number at *s (advanced past it); -1 if none. */
static int64_t spec_num(const char **s)
{
    int64_t v = 0;
    const char *q = *s;
    while (*q >= '0' && *q <= '9' && v < 1000000)
        v = v * 10 + (*q++ - '0');
    if (q == *s || v < 1)
        return -1;
    *s = q;
    return v;
}

/* "/N1xN2x..." (n numbers) at *q, into t; a missing number is -1. */
static void spec_tiling(const char **q, int n, int64_t *t)
{
    if (**q != '/')
        return;
    (*q)++;
    for (int i = 0; i < n; i++) {
        if (i && **q != 'x' && **q != 'X') {
            t[i] = -1;
            return;
        }
        *q += i > 0;
        t[i] = spec_num(q);
    }
}

/* GMxGN[xGK|r|bGB][/MBxNBSxKC]: the grid, split-K, B over the ring or
 * the batch in GB parts (a grid each), and a forced tiling. */
static int64_t mm_split(const char **q, be_work *w)
{
    int64_t a = spec_num(q), b = -1, gk = 1, gb = 1, t[3] = {0, 0, 0};
    int ring = 0;
    if (a > 0 && (**q == 'x' || **q == 'X')) {
        (*q)++;
        b = spec_num(q);
        if (b > 0 && (**q == 'x' || **q == 'X')) { /* K parts: split-K */
            (*q)++;
            gk = spec_num(q);
        }
        if (b > 0 && gk == 1 && **q == 'r') { /* B broadcast over the ring */
            ring = 1;
            (*q)++;
        } else if (b > 0 && gk == 1 && **q == 'b') { /* batch parts */
            (*q)++;
            gb = spec_num(q);
        }
    }
    if (a > 0 && b > 0)
        spec_tiling(q, 3, t);
    if (a < 1 || b < 1 || gk < 1 || gb < 1 || t[0] < 0 || t[1] < 0 || t[2] < 0)
        return -1;
    w->gm = a;
    w->gn = b;
    w->mb = t[0];
    w->nbs = t[1];
    w->kc = t[2];
    w->bcast = ring;
    w->gk = gk;
    w->gb = gb;
    return a * b * gk * gb;
}

/* CORES[/ROWS]: the core count, and a forced chunk. */
static int64_t rows_split(const char **q, be_work *w)
{
    int64_t a = spec_num(q), t[1] = {0};
    if (a > 0)
        spec_tiling(q, 1, t);
    if (a < 1 || t[0] < 0)
        return -1;
    w->cores = (int)a;
    w->chunk = t[0];
    return a;
}

/* ---- the workdiv dump's line ---- */

static void mm_print_work(const be_ctx *c, int pos, FILE *f)
{
    const be_work *w = &c->work[pos];
    fprintf(f, "kernel %s: matmul grid %" PRId64 " x %" PRId64 "%s (%d cores), estimate %.0f cycles\n",
            c->p->kernels[c->p->order[pos]].name, w->gm, w->gn, w->gb > 1 ? " per batch part" : "", w->cores,
            w->est_cycles);
}

static void rows_print_work(const be_ctx *c, int pos, FILE *f)
{
    const be_work *w = &c->work[pos];
    fprintf(f, "kernel %s: rows %" PRId64 " of %" PRId64 " columns over %d cores\n", c->p->kernels[c->p->order[pos]].name,
            w->rows, w->cols, w->cores);
}

/* "dim: total unit in parts of ..." for the report's split lines */
static void print_split(FILE *f, const char *dim, int64_t total, int64_t parts, const char *unit)
{
    if (parts <= 1)
        fprintf(f, "%s %" PRId64 " %s whole", dim, total, unit);
    else if (total % parts == 0)
        fprintf(f, "%s %" PRId64 " %s in %" PRId64 " parts of %" PRId64, dim, total, unit, parts, total / parts);
    else
        fprintf(f, "%s %" PRId64 " %s in %" PRId64 " parts of %" PRId64 " or %" PRId64 " (uneven edge)", dim, total,
                unit, parts, total / parts + 1, total / parts);
}

static void mm_print_report(const be_ctx *c, int pos, int forced, FILE *f)
{
    const be_work *w = &c->work[pos];
    const ir_kernel *K = &c->p->kernels[c->p->order[pos]];
    int64_t gsticks = cc_ceil_div(w->cols, c->t.lanes16);
    char gk[32] = "", split[48];
    if (w->gk > 1)
        snprintf(gk, sizeof gk, "x%" PRId64, w->gk);
    else if (w->gb > 1)
        snprintf(gk, sizeof gk, "b%" PRId64, w->gb);
    snprintf(split, sizeof split, "%s%s%s%s%s%s%s", w->gb > 1 ? "batch" : "",
             w->gb > 1 && (w->gm > 1 || w->gn > 1) ? " and " : "", w->gm > 1 ? "m" : "",
             w->gm > 1 && w->gn > 1 ? " and " : "", w->gn > 1 ? "n" : "",
             (w->gm > 1 || w->gn > 1) && w->gk > 1 ? " and " : "", w->gk > 1 ? "k" : "");
    fprintf(f, "%s: grid %" PRId64 "x%" PRId64 "%s%s on %d core%s%s, split %s; ", K->name, w->gm, w->gn, gk,
            w->bcast ? "r" : "", w->cores, w->cores == 1 ? "" : "s", forced ? " (work_div)" : "",
            split[0] ? split : "nothing");
    if (w->gb > 1) {
        print_split(f, "batch:", w->batches, w->gb, "indices");
        fputs(", a grid each; ", f);
    }
    if (w->bcast && w->gn > 1) { /* a grid over the ring: a part of M per core, gn to a grid row */
        print_split(f, "m:", w->rows, (int64_t)w->cores, "rows");
        fprintf(f, ", %" PRId64 " to a grid row", w->gn);
    } else {
        print_split(f, "m:", w->rows, w->gm, "rows");
    }
    fputs("; ", f);
    print_split(f, "n:", gsticks, w->gn, "sticks");
    if (w->gk > 1)
        fprintf(f, "; k in %" PRId64 " parts of whole sticks, partial sums reduced over the ring", w->gk);
    fputc('\n', f);
}

static void rows_print_report(const be_ctx *c, int pos, int forced, FILE *f)
{
    const be_work *w = &c->work[pos];
    const ir_prog *p = c->p;
    const int as = w->aligned_to ? w->aligned_to : w->ahead;
    fprintf(f, "%s: rows over %d core%s%s%s%s%s, split %s; ", p->kernels[p->order[pos]].name, w->cores,
            w->cores == 1 ? "" : "s", forced ? " (work_div)" : "", as ? " (as " : "", as ? p->kernels[p->order[as - 1]].name : "",
            as ? ", for LX)" : "", w->cores > 1 ? "rows" : "nothing");
    print_split(f, "rows:", w->rows, w->cores, "rows");
    fprintf(f, "; %" PRId64 " columns whole\n", w->cols);
}

#define MM_SYNTAX                                                                                                      \
    "a matmul kernel takes GMxGN (M parts x N parts, e.g. 2x4), GMxGNxGK (K in GK parts too, e.g. 1x4x8), GMxGNbGB " \
    "(the batch in GB parts, a grid each, e.g. 1x1b32), GMx1r (B broadcast over the ring) or GMxGNr (a grid over "  \
    "the ring, e.g. 8x4r), optionally /MBxNBSxKC (block rows x block sticks x K chunk rows, e.g. 2x4/64x4x256), "      \
    "optionally +nokeep"
#define ROWS_SYNTAX                                                                                                    \
    "a row kernel takes a core count (e.g. 16), optionally /ROWS (rows per chunk, e.g. 16/32), optionally +nokeep"

/* The cycles each kind's estimate leaves out, which the report adds
 * (be_kind.fill_drain), fitted to the simulator on the traces' kernels
 * (bench/run estimate; docs/compiler.md "Estimates against the
 * simulator"): none since the report prices the DRAM's waits (the first
 * loads' latency and the refresh they meet on the channels every core
 * reads, cc_dram_wait): with 100 cycles for a matmul the geometric mean
 * was 1.071 and six ratios above 2, with none 1.026 and one. */
#define MM_FILL_DRAIN 0
#define ROWS_FILL_DRAIN 0

#define ROWS_KIND                                                                                                      \
    {"row kernel",  be_rows_plan,     be_rows_align, be_rows_ahead, be_rows_access, be_rows_estimate, be_rows_need,                 \
     be_rows_emit, be_rows_prefetch, be_rows_prefetch_far, rows_split, ROWS_SYNTAX, NULL, rows_print_work, rows_print_report, ROWS_FILL_DRAIN, 1}

static const be_kind kinds[] = {
    [IR_POINTWISE] = ROWS_KIND,
    [IR_REDUCTION] = ROWS_KIND,
    [IR_MATMUL] = {"matmul template", be_matmul_plan, be_matmul_align, NULL, be_matmul_access, be_matmul_estimate, be_matmul_need,
                   be_matmul_emit, be_matmul_prefetch, be_matmul_prefetch_far, mm_split, MM_SYNTAX, be_matmul_groups, mm_print_work, mm_print_report, MM_FILL_DRAIN, 0},
    [IR_HOST] = {"host fallback", be_host_plan, NULL, NULL, be_host_access, be_host_estimate, be_host_need, be_host_emit,
                 NULL, NULL, be_host_split, "a host op takes no work_div", NULL, be_host_print_work, be_host_print_report, 0, 0},
};

const be_kind *be_kind_of(const be_ctx *c, int pos)
{
    return &kinds[c->p->kernels[c->p->order[pos]].kind];
}
