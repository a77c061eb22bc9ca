/* timing.c: latency of each unit instruction: PT passes, SFP sticks, DMA
 * through the ring and the LPDDR5 model, ring transfers with per-link
 * contention.  Every number comes from the configuration. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dram.h"

void sim_timing_reset(sim *s)
{
    size_t n = 2 * (size_t)s->cfg.cores;
    if (!s->link_free) {
        s->link_free = calloc(n, sizeof *s->link_free);
        if (!s->link_free)
            abort();
    }
    memset(s->link_free, 0, n * sizeof *s->link_free);
    sim_dram_reset(s->dram, s->opt.refresh_phase_ns);
}

static double cycles_from_ns(const sim *s, double ns) { return ns * s->cfg.clock_ghz; }
static double ns_from_cycles(const sim *s, double cyc) { return cyc / s->cfg.clock_ghz; }

/* Reserve the ring links from stop a to stop b (shorter way round) for
 * `bytes` starting no earlier than t; returns when the last byte arrives.
 * The transfer occupies every link of its path for bytes / bandwidth
 * (cut-through), so transfers sharing a link queue behind each other.
 * The links of a direction sit in one array by stop, so a path is at most
 * two runs of it (split where it wraps), walked without a division per
 * hop.  Forced inline into its two callers (a GEMM launch: 4.7 k calls). */
static inline __attribute__((always_inline)) double ring_reserve(sim *s, int a, int b, double t, double bytes)
{
    const int n = s->cfg.cores;
    int cw = b - a < 0 ? b - a + n : b - a, ccw = n - cw; /* both stops are in [0, n): no division */
    int dir = cw <= ccw ? 0 : 1, hops = dir == 0 ? cw : ccw;
    double occupy = bytes / s->cfg.ring_bytes_per_cycle;
    if (hops == 0)
        return t + occupy;
    /* clockwise the links of stops a .. a + hops - 1, counter-clockwise
     * those of a - hops + 1 .. a, modulo n */
    int first = dir == 0 ? a : a - hops + 1;
    if (first < 0)
        first += n;
    double *link = &s->link_free[dir * n];
    int run1 = first + hops <= n ? hops : n - first, run2 = hops - run1;
    double start = t;
    for (int i = first; i < first + run1; i++)
        start = link[i] > start ? link[i] : start;
    for (int i = 0; i < run2; i++)
        start = link[i] > start ? link[i] : start;
    for (int i = first; i < first + run1; i++)
        link[i] = start + occupy;
    for (int i = 0; i < run2; i++)
        link[i] = start + occupy;
    s->st->ring_bytes += (uint64_t)bytes;
    return start + occupy + hops * s->cfg.ring_hop_cycles;
}

static int port_stop(const sim *s, int port) { return port * s->cfg.cores / s->cfg.ring_dram_ports; }

void sim_dma_begin(sim *s, sim_dma_timer *tm, double t)
{
    tm->issue = t + s->cfg.dma_issue_cycles;
    tm->done = tm->issue;
    tm->bytes = 0;
    (void)s;
}

/* One contiguous piece of DRAM: it reaches the controller when the DMA
 * engine issues it; the engine issues at the ring's injection rate. */
void sim_dma_piece(sim *s, sim_dma_timer *tm, uint64_t addr, uint64_t bytes, int is_write)
{
    double done_ns = sim_dram_access(s->dram, ns_from_cycles(s, tm->issue), addr, bytes, is_write);
    double done = cycles_from_ns(s, done_ns);
    if (done > tm->done)
        tm->done = done;
    tm->issue += (double)bytes / s->cfg.ring_bytes_per_cycle;
    tm->bytes += bytes;
}

/* The data crosses the ring between the memory controllers and the core;
 * interleaving spreads an access over every controller evenly. */
double sim_dma_end(sim *s, sim_core *c, sim_dma_timer *tm, double t, int is_write)
{
    const int ports = s->cfg.ring_dram_ports;
    double arrive = tm->done;
    double share = (double)tm->bytes / ports;
    for (int p = 0; p < ports && tm->bytes; p++) {
        int ps = port_stop(s, p);
        double r = is_write ? ring_reserve(s, c->id, ps, t, share) : ring_reserve(s, ps, c->id, t, share);
        if (r > arrive)
            arrive = r;
    }
    return arrive;
}

double sim_time_lx_copy(const sim *s, double t, uint64_t bytes)
{
    return t + s->cfg.dma_issue_cycles + (double)bytes / s->cfg.lx_bytes_per_cycle;
}

double sim_time_ring(sim *s, sim_core *c, int dst, double t, uint64_t bytes)
{
    return ring_reserve(s, c->id, dst, t + s->cfg.dma_issue_cycles, (double)bytes);
}

/* PT: M streams through the array in passes of pt_rows rows; each pass
 * computes pt_cols * pt_lanes output columns per K step. */
double sim_time_pt(const sim *s, double t, int64_t m, int64_t n, int64_t k)
{
    const chip_config *cfg = &s->cfg;
    int64_t passes = (m + cfg->pt_rows - 1) / cfg->pt_rows;
    int64_t colw = (int64_t)cfg->pt_cols * cfg->pt_lanes;
    int64_t cols = (n + colw - 1) / colw;
    return t + cfg->pt_issue_cycles + cfg->pt_fill_cycles + (double)(passes * cols * k) * cfg->pt_k_step_cycles;
}

double sim_time_sfp(const sim *s, double t, int op, int64_t sticks)
{
    const chip_config *cfg = &s->cfg;
    double per = isa_info(op)->cost == ISA_COST_COMPLEX ? cfg->sfp_complex_cycles : cfg->sfp_simple_cycles;
    return t + cfg->sfp_issue_cycles + per * (double)sticks;
}

double sim_time_min(const sim *s, const isa_insn *in)
{
    const chip_config *cfg = &s->cfg;
    const double n01 = (double)in->n[0] * (double)in->n[1], run = (double)in->run * cfg->stick_bytes;
    const double fastest = cfg->ring_bytes_per_cycle > cfg->lx_bytes_per_cycle ? cfg->ring_bytes_per_cycle
                                                                              : cfg->lx_bytes_per_cycle;
    switch (isa_info(in->op)->cls) {
    case ISA_C_DMAI:
    case ISA_C_DMAO: /* its pieces issue one after another at the ring's or LX's rate */
        if (in->op == ISA_OP_DMA_GATHER || in->op == ISA_OP_DMA_SCATTER)
            return cfg->dma_issue_cycles + (n01 - 1) * run / cfg->ring_bytes_per_cycle;
        return cfg->dma_issue_cycles + (n01 * (double)in->n[2] * (double)in->n[3] - 1) * run / fastest;
    case ISA_C_RING: return cfg->dma_issue_cycles + n01 * run / cfg->ring_bytes_per_cycle;
    case ISA_C_SFP: /* sfp.rst's sticks depend on vl: count none */
        return sim_time_sfp(s, 0, in->op, in->op == ISA_OP_SFP_RST ? 0 : (int64_t)in->n[0] * in->n[1]);
    default: return 0;
    }
}
