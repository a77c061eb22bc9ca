/* trace.c: the timeline of a run as Chrome trace-event JSON (opens in
 * Perfetto and chrome://tracing): one process per core, one track per
 * unit, one slice per instruction (or per kernel per core), and counter
 * tracks for DRAM bandwidth and LX use. */
#include "internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sim_trace_reset(sim *s)
{
    s->ntrace = 0;
    s->nbw = 0;
    s->nhost = 0;
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t ncap = *cap ? *cap * 2 : 1024;
    while (ncap < need)
        ncap *= 2;
    void *q = realloc(p, ncap * elem);
    if (!q) {
        fprintf(stderr, "spyre: out of host memory (trace)\n");
        abort();
    }
    *cap = ncap;
    return q;
}

void sim_trace_insn(sim *s, int core, int unit, const sim_qent *e, double start, double end)
{
    if (s->opt.trace == SIM_TRACE_OFF)
        return;
    s->trace = grow(s->trace, &s->trace_cap, s->ntrace + 1, sizeof *s->trace);
    sim_trace_rec *r = &s->trace[s->ntrace++];
    r->start = start;
    r->end = end;
    r->core = core;
    r->unit = unit;
    r->index = e->index;
    r->in = e->in;
    r->lx_high = s->cores[core].lx_peak;
}

void sim_trace_dram(sim *s, double start, double end, uint64_t bytes, int is_write)
{
    if (s->opt.trace == SIM_TRACE_OFF || end <= start)
        return;
    s->bw = grow(s->bw, &s->bw_cap, s->nbw + 1, sizeof *s->bw);
    sim_bw_rec *b = &s->bw[s->nbw++];
    b->start = start;
    b->end = end;
    b->bytes = bytes;
    b->is_write = is_write;
}

void sim_trace_host(sim *s, long index, int64_t node, double start, double end)
{
    if (s->opt.trace == SIM_TRACE_OFF)
        return;
    s->hostrec = grow(s->hostrec, &s->host_cap, s->nhost + 1, sizeof *s->hostrec);
    s->hostrec[s->nhost++] = (sim_host_rec){start, end, index, node};
}

static const char *kernel_of(const isa_program *p, int core, long index)
{
    for (size_t k = 0; k < p->nkernels; k++) {
        const isa_kernel *kn = &p->kernels[k];
        if (kn->core == core && index >= kn->first && index <= kn->last)
            return kn->name;
    }
    return "(no kernel)";
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s < 0x20)
            continue;
        fputc(*s, f);
    }
    fputc('"', f);
}

typedef struct {
    double start, end;
    int core, unit;
    const char *kernel;
} kslice;

/* Start and duration in microseconds with 6 decimals, rounded so that
 * start + duration of one slice never passes the start of the next. */
static void print_span(FILE *f, double start, double end, double us)
{
    long long a = llround(start * us * 1e6), b = llround(end * us * 1e6);
    fprintf(f, "\"ts\":%lld.%06lld,\"dur\":%lld.%06lld", a / 1000000, a % 1000000, (b - a) / 1000000,
            (b - a) % 1000000);
}

static void emit_kslice(FILE *f, const char *sep, const kslice *x, double us)
{
    fprintf(f, "%s{\"ph\":\"X\",\"name\":", sep);
    json_string(f, x->kernel);
    fprintf(f, ",\"cat\":\"kernel\",\"pid\":%d,\"tid\":%d,", x->core, x->unit);
    print_span(f, x->start, x->end, us);
    fputc('}', f);
}

int sim_write_trace(sim *s, const isa_program *p, const char *path, char *err, size_t errlen)
{
    isa_outfile o;
    if (isa_out_open(&o, path, err, errlen))
        return -1;
    FILE *f = o.f;
    const double us = 1.0 / (s->cfg.clock_ghz * 1000.0); /* microseconds per cycle */
    const int chip = s->cfg.cores;                      /* pid of the chip-wide counters */
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    int first = 1;
#define SEP() (first ? (first = 0, "") : ",\n")
    for (int c = 0; c < s->cfg.cores; c++) {
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"core %d\"}}", SEP(), c, c);
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}", SEP(), c, c);
        for (int u = 0; u < ISA_NUNITS; u++)
            fprintf(f, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}", SEP(),
                    c, u, isa_unit_names[u]);
    }
    fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"chip\"}}", SEP(), chip);
    /* Host fallback ops: a process of their own, one slice each, named as
     * their kernel, while every core waits at the `host` barrier. */
    if (s->nhost)
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"host\"}}", SEP(),
                chip + 1);
    for (size_t i = 0; i < s->nhost; i++) {
        const sim_host_rec *h = &s->hostrec[i];
        fprintf(f, "%s{\"ph\":\"X\",\"name\":", SEP());
        json_string(f, kernel_of(p, 0, h->index));
        fprintf(f, ",\"cat\":\"host\",\"pid\":%d,\"tid\":0,", chip + 1);
        print_span(f, h->start, h->end, us);
        fprintf(f, ",\"args\":{\"graph_node\":%" PRId64 "}}", h->node);
    }
    if (s->opt.trace == SIM_TRACE_INSN) {
        char text[512];
        for (size_t i = 0; i < s->ntrace; i++) {
            const sim_trace_rec *r = &s->trace[i];
            isa_format_insn(&r->in, text, sizeof text);
            fprintf(f, "%s{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,", SEP(),
                    isa_info(r->in.op)->mnemonic, isa_unit_names[r->unit], r->core, r->unit);
            print_span(f, r->start, r->end, us);
            fprintf(f, ",\"args\":{\"index\":%ld,\"kernel\":", r->index);
            json_string(f, kernel_of(p, r->core, r->index));
            fprintf(f, ",\"insn\":");
            json_string(f, text);
            fprintf(f, "}}");
        }
    } else {
        /* one slice per run of consecutive instructions of one kernel on a unit */
        kslice *open = calloc((size_t)s->cfg.cores * ISA_NUNITS, sizeof *open);
        if (!open)
            abort();
        for (size_t i = 0; i < s->ntrace; i++) {
            const sim_trace_rec *r = &s->trace[i];
            kslice *o = &open[r->core * ISA_NUNITS + r->unit];
            const char *k = kernel_of(p, r->core, r->index);
            if (o->kernel == k) {
                o->end = r->end;
                continue;
            }
            if (o->kernel)
                emit_kslice(f, SEP(), o, us);
            *o = (kslice){r->start, r->end, r->core, r->unit, k};
        }
        for (size_t j = 0; j < (size_t)s->cfg.cores * ISA_NUNITS; j++)
            if (open[j].kernel)
                emit_kslice(f, SEP(), &open[j], us);
        free(open);
    }
    /* DRAM bandwidth: bytes of each transfer spread over its duration,
     * summed in windows of 1/200 of the run (at least one cycle). */
    double total = s->st ? s->st->cycles : 0;
    if (total > 0 && s->nbw) {
        enum { WINDOWS = 200 };
        double win = total / WINDOWS < 1 ? 1 : total / WINDOWS;
        double rd[WINDOWS + 1] = {0}, wr[WINDOWS + 1] = {0};
        for (size_t i = 0; i < s->nbw; i++) {
            const sim_bw_rec *b = &s->bw[i];
            double rate = (double)b->bytes / (b->end - b->start);
            for (int w = (int)(b->start / win); w <= WINDOWS && w * win < b->end; w++) {
                double lo = w * win > b->start ? w * win : b->start;
                double hi = (w + 1) * win < b->end ? (w + 1) * win : b->end;
                if (hi > lo)
                    (b->is_write ? wr : rd)[w] += rate * (hi - lo);
            }
        }
        double bytes_per_cycle_to_gbs = s->cfg.clock_ghz;
        for (int w = 0; w <= WINDOWS; w++)
            fprintf(f, "%s{\"ph\":\"C\",\"name\":\"DRAM GB/s\",\"pid\":%d,\"ts\":%.6f,\"args\":{\"read\":%.3f,\"write\":%.3f}}",
                    SEP(), chip, w * win * us, rd[w] / win * bytes_per_cycle_to_gbs, wr[w] / win * bytes_per_cycle_to_gbs);
    }
    /* LX use per core: the highest LX byte touched so far, stepping at the
     * instruction that raised it. */
    uint64_t *peak = calloc((size_t)s->cfg.cores, sizeof *peak);
    if (!peak)
        abort();
    for (size_t i = 0; i < s->ntrace; i++) {
        const sim_trace_rec *r = &s->trace[i];
        if (r->lx_high > peak[r->core]) {
            peak[r->core] = r->lx_high;
            fprintf(f, "%s{\"ph\":\"C\",\"name\":\"LX bytes\",\"pid\":%d,\"ts\":%.6f,\"args\":{\"used\":%" PRIu64 "}}",
                    SEP(), r->core, r->start * us, r->lx_high);
        }
    }
    free(peak);
#undef SEP
    fprintf(f, "\n]}\n");
    return isa_out_close(&o, 1, err, errlen);
}
