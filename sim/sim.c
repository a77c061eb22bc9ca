/* sim.c: the chip (cores, LX, DRAM: its pages in pages.c) and a run's
 * entry point: the program's regions checked against device DRAM, then
 * engine.c's run loop. */
#define _DEFAULT_SOURCE /* mmap(MAP_ANONYMOUS), madvise(MADV_HUGEPAGE) */
#include "internal.h"

#include "dram.h"

#include <cblas.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Anonymous mappings start zeroed and get their pages on first touch,
 * as calloc's large blocks do: only the LX bytes a program touches cost
 * host memory.  The mapping is cut to a 2 MB boundary so that its pages
 * can be huge ones. */
#define HUGE_PAGE ((size_t)2 << 20)

static size_t big_len(size_t len) { return (len ? len + HUGE_PAGE - 1 : HUGE_PAGE) / HUGE_PAGE * HUGE_PAGE; }

/* len zeroed bytes on 2 MB pages where the host gives them (Linux's
 * transparent huge pages in madvise mode); NULL when out of memory.
 * big_free takes the same len. */
static void *big_zeroed(size_t len)
{
#if defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE)
    const size_t n = big_len(len);
    uint8_t *m = mmap(NULL, n + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    const size_t head = (HUGE_PAGE - (uintptr_t)m % HUGE_PAGE) % HUGE_PAGE;
    if (head)
        munmap(m, head);
    if (HUGE_PAGE - head)
        munmap(m + head + n, HUGE_PAGE - head);
    madvise(m + head, n, MADV_HUGEPAGE);
    return m + head;
#else
    return calloc(1, len);
#endif
}

static void big_free(void *p, size_t len)
{
    if (!p)
        return;
#if defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE)
    munmap(p, big_len(len));
#else
    (void)len;
    free(p);
#endif
}

static void destroy_cores(sim *s)
{
    if (!s->cores)
        return;
    big_free(s->cores[0].lx, (size_t)s->cfg.cores * s->cfg.lx_bytes); /* every core's LX */
    for (int i = 0; i < s->cfg.cores; i++) {
        free(s->cores[i].tokens);
        for (int u = 0; u < ISA_NUNITS; u++)
            free(s->cores[i].units[u].q);
    }
    free(s->cores);
}

sim *sim_create(const chip_config *cfg)
{
    sim *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cfg = *cfg;
    s->opt.values = 1;
    s->opt.detect_races = 1;
    s->opt.trace = SIM_TRACE_OFF;
    s->cores = aligned_alloc(_Alignof(sim_core), (size_t)cfg->cores * sizeof *s->cores);
    if (s->cores)
        memset(s->cores, 0, (size_t)cfg->cores * sizeof *s->cores);
    s->dram = sim_dram_new(cfg);
    s->npages = (cfg->dram_bytes + cfg->dram_page_bytes - 1) / cfg->dram_page_bytes;
    s->pages = calloc(s->npages, sizeof *s->pages);
    s->page_serial = calloc(s->npages, sizeof *s->page_serial);
    while ((1ull << s->page_shift) < cfg->dram_page_bytes)
        s->page_shift++;
    if (!s->cores || !s->pages || !s->page_serial || !s->dram)
        goto fail;
    /* The cores' LX side by side, in one allocation on huge pages: a run
     * sweeps all of them (32 x 2 MB), and on 4 KB pages nearly every stick
     * a copy or a product touched first missed the TLB (a values launch of
     * the 1024^3 GEMM took 8% less host time on 2 MB pages). */
    uint8_t *lx = big_zeroed((size_t)cfg->cores * cfg->lx_bytes);
    if (!lx)
        goto fail;
    for (int i = 0; i < cfg->cores; i++) {
        sim_core *c = &s->cores[i];
        c->id = i;
        c->lx = lx + (size_t)i * cfg->lx_bytes;
        c->tokens = calloc((size_t)cfg->tokens, sizeof *c->tokens);
        if (!c->tokens)
            goto fail;
        for (int u = 0; u < ISA_NUNITS; u++)
            if (sim_queue_grow(&c->units[u], cfg->queue_depth))
                goto fail;
    }
    return s;
fail:
    sim_destroy(s);
    return NULL;
}

void sim_destroy(sim *s)
{
    if (!s)
        return;
    destroy_cores(s);
    if (s->pages)
        for (uint64_t i = 0; i < s->npages; i++)
            free(s->pages[i]);
    free(s->pages);
    free(s->page_serial);
    sim_pt_stop(s);
    free(s->trace);
    free(s->bw);
    free(s->hostrec);
    free(s->link_free);
    sim_race_free(s);
    if (s->dram)
        sim_dram_free(s->dram);
    free(s);
}

const chip_config *sim_get_config(const sim *s) { return &s->cfg; }

uint8_t *sim_lx(sim *s, int core)
{
    sim_pt_drain(s);
    if (core < 0 || core >= s->cfg.cores)
        return NULL;
    /* the caller may write any of it, values on or off: converted operands are stale */
    if (s->ptq)
        sim_pt_fence_queued(s, core, 0, s->cfg.lx_bytes, 1);
    return s->cores[core].lx;
}

int sim_run(sim *s, const isa_program *p, uint64_t dram_base, sim_stats *st, sim_fault *fault)
{
    uint64_t act = p->weight_bytes <= UINT64_MAX - dram_base ? dram_base + p->weight_bytes : UINT64_MAX;
    return sim_run_regions(s, p, dram_base, act, st, fault);
}

/* Does [base, base + len) lie inside device DRAM? */
static int region_fits(const sim *s, uint64_t base, uint64_t len)
{
    return base <= s->cfg.dram_bytes && len <= s->cfg.dram_bytes - base;
}

static int run_regions(sim *s, const isa_program *p, uint64_t weights_base, uint64_t act_base, sim_stats *st,
                       sim_fault *fault)
{
    sim_fault lfault;
    if (!fault)
        fault = &lfault;
    memset(st, 0, sizeof *st);
    memset(fault, 0, sizeof *fault);
    fault->core = -1;
    fault->unit = ISA_U_SEQ;
    fault->index = -1;
    s->st = st;
    s->fault = fault;
    s->prog = p;
    s->weights_base = weights_base;
    s->act_base = act_base;
    s->weight_bytes = p->weight_bytes;
    s->seg_bytes = p->dram_bytes;
    if (p->ncores > s->cfg.cores)
        return sim_faultf(s, -1, ISA_U_SEQ, -1, "program has streams for %d cores, the chip has %d", p->ncores,
                          s->cfg.cores);
    if (p->weight_bytes > p->dram_bytes)
        return sim_faultf(s, -1, ISA_U_SEQ, -1,
                          "program weights region (%" PRIu64 " bytes) is larger than its DRAM segment (%" PRIu64 " bytes)",
                          p->weight_bytes, p->dram_bytes);
    if (!region_fits(s, weights_base, p->weight_bytes))
        return sim_faultf(s, -1, ISA_U_SEQ, -1,
                          "program weights region [0x%" PRIx64 ", +%" PRIu64 ") does not fit device DRAM (%" PRIu64 " bytes)",
                          weights_base, p->weight_bytes, s->cfg.dram_bytes);
    if (!region_fits(s, act_base, p->dram_bytes - p->weight_bytes))
        return sim_faultf(s, -1, ISA_U_SEQ, -1,
                          "program activation region [0x%" PRIx64 ", +%" PRIu64 ") does not fit device DRAM (%" PRIu64 " bytes)",
                          act_base, p->dram_bytes - p->weight_bytes, s->cfg.dram_bytes);
    /* PT tiles are small: OpenBLAS threads cost more to wake than they
     * save there, so the simulator's products run on this thread. */
    int blas_threads = s->opt.values ? openblas_get_num_threads() : 0;
    if (blas_threads > 1)
        openblas_set_num_threads(1);
    int rc = sim_engine_run(s, p);
    if (blas_threads > 1)
        openblas_set_num_threads(blas_threads);
    const sim_dram_stats *ds = sim_dram_get_stats(s->dram);
    st->dram_row_hits = ds->row_hits;
    st->dram_row_misses = ds->row_misses + ds->row_conflicts;
    st->dram_data_ns = 0;
    for (int c = 0; c < s->cfg.dram_channels && c < SIM_DRAM_MAX_CHANNELS; c++)
        st->dram_data_ns += ds->busy_ns[c];
    st->dram_mix_ns = ds->mix_ns;
    return rc;
}

/* The run's stats and fault belong to the caller (or, when it passes
 * none, to this function's and run_regions' frames): the sim keeps only
 * the figures it reads after the run (the trace's length), never the
 * pointers. */
int sim_run_regions(sim *s, const isa_program *p, uint64_t weights_base, uint64_t act_base, sim_stats *st,
                    sim_fault *fault)
{
    sim_stats local;
    if (!st)
        st = &local;
    int rc = run_regions(s, p, weights_base, act_base, st, fault);
    s->run_cycles = st->cycles;
    s->st = NULL;
    s->fault = NULL;
    return rc;
}

void sim_set_decode(sim *s, sim_decode **d) { s->decode = d; }

void sim_set_options(sim *s, const sim_options *opt) { s->opt = *opt; }
const sim_options *sim_get_options(const sim *s) { return &s->opt; }

void sim_set_host(sim *s, sim_host_fn fn, void *ctx)
{
    s->host_fn = fn;
    s->host_ctx = ctx;
}
