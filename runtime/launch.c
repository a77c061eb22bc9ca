/* launch.c: running a loaded program on the simulator: its regions placed
 * (residency.c), the run, its outputs read back. */
#include "rt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rt_launch(rt_program *prog, rt_run_result *res)
{
    /* built where it is kept rather than in a local copied there at the
     * end: it holds the run's statistics (tens of KB), and a timing-only
     * launch of the 1024^3 GEMM is about a millisecond */
    rt_run_result *r = &prog->last;
    memset(r, 0, sizeof *r);
    r->fault.core = -1;
    r->fault.unit = ISA_U_SEQ;
    r->fault.index = -1;
    r->refused = -1;
    rt_device *dev = prog->dev;
    prog->last_use = ++dev->clock;
    size_t from = rt_sched_from(prog, 1);
    char msg[sizeof r->fault.msg];
    int rc = 0, unsupported = 0;
    /* Its weights back if they were evicted, then its activations. */
    /* a timing-only run reads no values: its inputs' transfer is counted, not made */
    const int values = sim_get_options(dev->sim)->values;
    if (rt_ranges_check(prog, &r->refused, msg, sizeof msg) ||
        (values && rt_index_check(prog, &r->refused_line, msg, sizeof msg))) { /* the program relies on them: a user error */
        snprintf(r->fault.msg, sizeof r->fault.msg, "%s", msg);
        rc = -1;
        unsupported = 1;
    } else if (rt_place_weights(prog, from, 1, msg, sizeof msg) || rt_stage(prog, from, values, msg, sizeof msg) ||
        rt_place_lx(prog, msg, sizeof msg) || rt_poison_values(prog, msg, sizeof msg)) {
        snprintf(r->fault.msg, sizeof r->fault.msg, "%s", msg);
        rc = -1;
    } else {
        const isa_program *p = prog->p;
        rt_fallback *fb = rt_fallback_begin(prog, r, msg, sizeof msg);
        if (!fb && msg[0]) {
            snprintf(r->fault.msg, sizeof r->fault.msg, "%s", msg);
            rc = -1;
            unsupported = 1;
        } else {
            sim_set_host(dev->sim, fb ? rt_fallback_host : NULL, fb);
            sim_set_decode(dev->sim, &prog->decode);
            rc = sim_run_regions(dev->sim, p, p->weight_bytes ? prog->wbase : 0, prog->staged ? prog->abase : 0,
                                 &r->stats, &r->fault);
            sim_set_decode(dev->sim, NULL);
            sim_set_host(dev->sim, NULL, NULL);
            unsupported = rt_fallback_failed(fb, r->fault.msg, sizeof r->fault.msg);
            rt_fallback_end(fb);
        }
        /* Outputs come back (also after a fault: what the run wrote), then
         * the activation region is freed. */
        if (rt_download_outputs(prog, msg, sizeof msg) && !rc) {
            snprintf(r->fault.msg, sizeof r->fault.msg, "%s", msg);
            rc = -1;
        }
        /* the state takes the run's updates, unless it faulted */
        if (!rc && rt_state_apply(prog, r, msg, sizeof msg)) {
            snprintf(r->fault.msg, sizeof r->fault.msg, "%s", msg);
            rc = -1;
        }
        rt_unstage(prog);
    }
    r->status = unsupported ? RT_RUN_UNSUPPORTED : rc ? RT_RUN_FAULT : RT_RUN_OK;
    r->xfer = prog->pending;
    memset(&prog->pending, 0, sizeof prog->pending);
    prog->launched = 1;
    if (res)
        *res = *r;
    return rc ? -1 : 0;
}

/* Add st's figures into m's sums (rt_launch_phases divides them). */
static int add_phase(rt_phase_means *m, const sim_stats *st)
{
    if (!m->span) {
        m->nkernels = st->nkernels;
        m->span = calloc((size_t)m->nkernels + 1, sizeof *m->span);
        m->core_span = calloc((size_t)m->nkernels + 1, sizeof *m->core_span);
        if (!m->span || !m->core_span)
            return -1;
    }
    m->cycles += st->cycles;
    for (int k = 0; k < m->nkernels && k < st->nkernels; k++) {
        m->span[k] += st->kernels[k].end - st->kernels[k].start;
        m->core_span[k] += st->kernels[k].core_span;
    }
    return 0;
}

int rt_launch_phases(rt_program *prog, int phases, rt_run_result *res, rt_phase_means *m)
{
    memset(m, 0, sizeof *m);
    m->phases = phases > 0 ? phases : 1;
    sim *s = prog->dev->sim;
    sim_options opt = *sim_get_options(s);
    const double was = opt.refresh_phase_ns;
    int rc = 0;
    for (int k = 0; k < m->phases && !rc; k++) {
        opt.refresh_phase_ns = k * prog->dev->cfg.dram_trefi_ns / m->phases;
        sim_set_options(s, &opt);
        rc = rt_launch(prog, res);
        if (!rc && add_phase(m, &res->stats)) {
            snprintf(res->fault.msg, sizeof res->fault.msg, "out of memory");
            res->status = RT_RUN_FAULT;
            rc = -1;
        }
    }
    opt.refresh_phase_ns = was;
    sim_set_options(s, &opt);
    m->cycles /= m->phases;
    for (int k = 0; k < m->nkernels; k++) {
        m->span[k] /= m->phases;
        m->core_span[k] /= m->phases;
    }
    return rc;
}

void rt_phase_means_free(rt_phase_means *m)
{
    free(m->span);
    free(m->core_span);
    m->span = m->core_span = NULL;
}

void rt_keep_values(rt_program *prog, int mode)
{
    prog->keep_values = mode < 0 ? 0 : mode > 2 ? 2 : mode;
}

int rt_wait(rt_program *prog, rt_run_result *res)
{
    if (!prog->launched)
        return -1;
    if (res)
        *res = prog->last;
    return prog->last.status == RT_RUN_OK ? 0 : -1;
}

static const char *unit_name(int unit)
{
    if (unit >= 0 && unit < ISA_NUNITS)
        return isa_unit_names[unit];
    return "seq";
}

void rt_run_format(const rt_run_result *res, char *buf, size_t len)
{
    if (res->status == RT_RUN_OK) {
        const rt_transfer_stats *x = &res->xfer;
        snprintf(buf, len,
                 "run: ok insns=%llu macs=%llu sfp_elems=%llu dram_read=%llu dram_written=%llu ring=%llu "
                 "uploaded=%llu weights_uploaded=%llu downloaded=%llu evicted=%d (%llu bytes) restored=%d (%llu bytes)",
                 (unsigned long long)res->stats.insns, (unsigned long long)res->stats.macs,
                 (unsigned long long)res->stats.sfp_elems,
                 (unsigned long long)res->stats.dram_bytes_read,
                 (unsigned long long)res->stats.dram_bytes_written,
                 (unsigned long long)res->stats.ring_bytes, (unsigned long long)x->bytes_uploaded,
                 (unsigned long long)x->weight_bytes_uploaded, (unsigned long long)x->bytes_downloaded,
                 x->weights_evicted, (unsigned long long)x->weight_bytes_evicted, x->weights_restored,
                 (unsigned long long)x->weight_bytes_restored);
        size_t used = strlen(buf);
        if (res->state_bytes && used < len) /* a graph with state updates (docs/graph-format.md) */
            snprintf(buf + used, len - used, " state_written=%llu", (unsigned long long)res->state_bytes);
        return;
    }
    const sim_fault *f = &res->fault;
    if (res->refused >= 0) /* a user error, not the device's */
        snprintf(buf, len, "%s", f->msg);
    else if (res->refused_line)
        snprintf(buf, len, "graph line %d: %s", res->refused_line, f->msg);
    else if (f->core < 0)
        snprintf(buf, len, "run: FAULT: %s", f->msg);
    else
        snprintf(buf, len, "run: FAULT core %d unit %s insn %ld: %s", f->core, unit_name(f->unit),
                 f->index, f->msg);
}
