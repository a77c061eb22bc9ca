/* trace.c: the timeline of a run as Chrome trace-event JSON (opens in
 * Perfetto and chrome://tracing): one process per core, one track per
 * unit, one slice per instruction (or per kernel per core), a track for
 * the posted writes' last drain, and counter tracks for DRAM bandwidth
 * and LX use. */
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
    s->drain_start = 0;
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

void sim_trace_insn(sim *s, int core, int unit, const sim_qent *e, double start, double end, double done)
{
    if (s->opt.trace == SIM_TRACE_OFF)
        return;
    s->trace = grow(s->trace, &s->trace_cap, s->ntrace + 1, sizeof *s->trace);
    sim_trace_rec *r = &s->trace[s->ntrace++];
    r->start = start;
    r->end = end;
    r->done = done;
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
    double start, end, done; /* done: its last transfer lands */
    int core, unit;
    const char *kernel;
} kslice;

void sim_trace_drain(sim *s, double start) { s->drain_start = start; }

/* Start and duration in microseconds with 6 decimals, rounded so that
 * start + duration of one slice never passes the start of the next. */
static void print_span(FILE *f, double start, double end, double us)
{
    long long a = llround(start * us * 1e6), b = llround(end * us * 1e6);
    fprintf(f, "\"ts\":%lld.%06lld,\"dur\":%lld.%06lld", a / 1000000, a % 1000000, (b - a) / 1000000,
            (b - a) % 1000000);
}

/* Where the events go: one chip (a process per core, a track per unit)
 * or card `card` of several (a process per card, a track per core's unit). */
typedef struct {
    FILE *f;
    int card; /* -1: one chip */
    int first;
    double us; /* microseconds per cycle */
} tw;

static const char *sep(tw *w)
{
    return w->first ? (w->first = 0, "") : ",\n";
}

static int pid_of(const tw *w, int core)
{
    return w->card < 0 ? core : w->card;
}

static int tid_of(const tw *w, int core, int unit)
{
    return w->card < 0 ? unit : core * ISA_NUNITS + unit;
}

/* A slice ends when its unit is free again, which a DMA is while its
 * transfers are still in flight: where they land (kernels[].end_cycles
 * of --stats-json, the latest over a kernel's slices) as an argument,
 * since slices of one track cannot overlap. */
static void lands(tw *w, double end, double done)
{
    if (done > end)
        fprintf(w->f, ",\"args\":{\"lands_us\":%.6f}", done * w->us);
}

static void emit_kslice(tw *w, const kslice *x)
{
    fprintf(w->f, "%s{\"ph\":\"X\",\"name\":", sep(w));
    json_string(w->f, x->kernel);
    fprintf(w->f, ",\"cat\":\"kernel\",\"pid\":%d,\"tid\":%d,", pid_of(w, x->core), tid_of(w, x->core, x->unit));
    print_span(w->f, x->start, x->end, w->us);
    lands(w, x->end, x->done);
    fputc('}', w->f);
}

static void emit_meta(sim *s, tw *w)
{
    FILE *f = w->f;
    const int chip = s->cfg.cores; /* one chip: the pid of its counters, chip + 1 the host's */
    if (w->card >= 0) {
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"card %d\"}}", sep(w),
                w->card, w->card);
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}", sep(w),
                w->card, w->card);
        for (int c = 0; c < s->cfg.cores; c++)
            for (int u = 0; u < ISA_NUNITS; u++)
                fprintf(f, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"core %d %s\"}}",
                        sep(w), w->card, tid_of(w, c, u), c, isa_unit_names[u]);
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"host ops, collectives\"}}",
                sep(w), w->card, chip * ISA_NUNITS);
        return;
    }
    for (int c = 0; c < s->cfg.cores; c++) {
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"core %d\"}}", sep(w), c, c);
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}", sep(w), c, c);
        for (int u = 0; u < ISA_NUNITS; u++)
            fprintf(f, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}", sep(w),
                    c, u, isa_unit_names[u]);
    }
    fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"chip\"}}", sep(w), chip);
    if (s->nhost)
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"host\"}}", sep(w),
                chip + 1);
}

/* Host ops (a card's collectives among them, kernels named for the op:
 * k10_all_reduce): one slice each, while every core waits at the `host` barrier. */
static void emit_host(sim *s, const isa_program *p, tw *w)
{
    int pid = w->card < 0 ? s->cfg.cores + 1 : w->card, tid = w->card < 0 ? 0 : s->cfg.cores * ISA_NUNITS;
    for (size_t i = 0; i < s->nhost; i++) {
        const sim_host_rec *h = &s->hostrec[i];
        const char *k = kernel_of(p, 0, h->index);
        fprintf(w->f, "%s{\"ph\":\"X\",\"name\":", sep(w));
        json_string(w->f, k);
        fprintf(w->f, ",\"cat\":\"host\",\"pid\":%d,\"tid\":%d,", pid, tid);
        print_span(w->f, h->start, h->end, w->us);
        fprintf(w->f, ",\"args\":{\"graph_node\":%" PRId64 "}}", h->node);
    }
}

/* The posted writes' drain to DRAM after the units' end, which the run's
 * cycles count (sim_engine_run): one slice on a track of the chip (on a
 * card: of the card) of its own. */
static void emit_drain(sim *s, tw *w)
{
    if (s->run_cycles <= s->drain_start)
        return;
    int pid = w->card < 0 ? s->cfg.cores : w->card, tid = w->card < 0 ? 0 : s->cfg.cores * ISA_NUNITS + 1;
    fprintf(w->f, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"DRAM write "
            "drain\"}}", sep(w), pid, tid);
    fprintf(w->f, "%s{\"ph\":\"X\",\"name\":\"write drain\",\"cat\":\"dram\",\"pid\":%d,\"tid\":%d,", sep(w), pid, tid);
    print_span(w->f, s->drain_start, s->run_cycles, w->us);
    fputc('}', w->f);
}

static void emit_insns(sim *s, const isa_program *p, tw *w)
{
    char text[512];
    for (size_t i = 0; i < s->ntrace; i++) {
        const sim_trace_rec *r = &s->trace[i];
        isa_format_insn(&r->in, text, sizeof text);
        fprintf(w->f, "%s{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,", sep(w),
                isa_info(r->in.op)->mnemonic, isa_unit_names[r->unit], pid_of(w, r->core), tid_of(w, r->core, r->unit));
        print_span(w->f, r->start, r->end, w->us);
        fprintf(w->f, ",\"args\":{\"index\":%ld,\"kernel\":", r->index);
        json_string(w->f, kernel_of(p, r->core, r->index));
        fprintf(w->f, ",\"insn\":");
        json_string(w->f, text);
        if (r->done > r->end)
            fprintf(w->f, ",\"lands_us\":%.6f", r->done * w->us);
        fprintf(w->f, "}}");
    }
}

/* One slice per run of consecutive instructions of one kernel on a unit. */
static void emit_kernels(sim *s, const isa_program *p, tw *w)
{
    kslice *open = calloc((size_t)s->cfg.cores * ISA_NUNITS, sizeof *open);
    if (!open)
        abort();
    for (size_t i = 0; i < s->ntrace; i++) {
        const sim_trace_rec *r = &s->trace[i];
        kslice *o = &open[r->core * ISA_NUNITS + r->unit];
        const char *k = kernel_of(p, r->core, r->index);
        if (o->kernel == k) {
            o->end = r->end;
            o->done = r->done > o->done ? r->done : o->done;
            continue;
        }
        if (o->kernel)
            emit_kslice(w, o);
        *o = (kslice){r->start, r->end, r->done, r->core, r->unit, k};
    }
    for (size_t j = 0; j < (size_t)s->cfg.cores * ISA_NUNITS; j++)
        if (open[j].kernel)
            emit_kslice(w, &open[j]);
    free(open);
}

/* DRAM bandwidth: bytes of each transfer spread over its duration,
 * summed in windows of 1/200 of the run (at least one cycle). */
static void emit_dram(sim *s, tw *w)
{
    double total = s->run_cycles;
    if (total <= 0 || !s->nbw)
        return;
    enum { WINDOWS = 200 };
    double win = total / WINDOWS < 1 ? 1 : total / WINDOWS;
    double rd[WINDOWS + 1] = {0}, wr[WINDOWS + 1] = {0};
    for (size_t i = 0; i < s->nbw; i++) {
        const sim_bw_rec *b = &s->bw[i];
        double rate = (double)b->bytes / (b->end - b->start);
        for (int x = (int)(b->start / win); x <= WINDOWS && x * win < b->end; x++) {
            double lo = x * win > b->start ? x * win : b->start;
            double hi = (x + 1) * win < b->end ? (x + 1) * win : b->end;
            if (hi > lo)
                (b->is_write ? wr : rd)[x] += rate * (hi - lo);
        }
    }
    double bytes_per_cycle_to_gbs = s->cfg.clock_ghz;
    int pid = w->card < 0 ? s->cfg.cores : w->card;
    for (int x = 0; x <= WINDOWS; x++)
        fprintf(w->f, "%s{\"ph\":\"C\",\"name\":\"DRAM GB/s\",\"pid\":%d,\"ts\":%.6f,\"args\":{\"read\":%.3f,\"write\":%.3f}}",
                sep(w), pid, x * win * w->us, rd[x] / win * bytes_per_cycle_to_gbs, wr[x] / win * bytes_per_cycle_to_gbs);
}

/* LX use per core: the highest LX byte touched so far, stepping at the
 * instruction that raised it (on a card: a counter per core, by name). */
static void emit_lx(sim *s, tw *w)
{
    uint64_t *peak = calloc((size_t)s->cfg.cores, sizeof *peak);
    if (!peak)
        abort();
    for (size_t i = 0; i < s->ntrace; i++) {
        const sim_trace_rec *r = &s->trace[i];
        if (r->lx_high <= peak[r->core])
            continue;
        peak[r->core] = r->lx_high;
        fprintf(w->f, "%s{\"ph\":\"C\",\"name\":\"LX bytes", sep(w));
        if (w->card >= 0)
            fprintf(w->f, " core %d", r->core);
        fprintf(w->f, "\",\"pid\":%d,\"ts\":%.6f,\"args\":{\"used\":%" PRIu64 "}}", pid_of(w, r->core), r->start * w->us,
                r->lx_high);
    }
    free(peak);
}

static void emit_all(sim *s, const isa_program *p, tw *w)
{
    emit_meta(s, w);
    emit_host(s, p, w);
    emit_drain(s, w);
    if (s->opt.trace == SIM_TRACE_INSN)
        emit_insns(s, p, w);
    else
        emit_kernels(s, p, w);
    emit_dram(s, w);
    emit_lx(s, w);
}

int sim_write_trace(sim *s, const isa_program *p, const char *path, char *err, size_t errlen)
{
    isa_outfile o;
    if (isa_out_open(&o, path, err, errlen))
        return -1;
    tw w = {o.f, -1, 1, 1.0 / (s->cfg.clock_ghz * 1000.0)};
    fprintf(o.f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    emit_all(s, p, &w);
    fprintf(o.f, "\n]}\n");
    return isa_out_close(&o, 1, err, errlen);
}

void sim_write_trace_card(sim *s, const isa_program *p, FILE *f, int card, int first)
{
    tw w = {f, card, first, 1.0 / (s->cfg.clock_ghz * 1000.0)};
    emit_all(s, p, &w);
}
