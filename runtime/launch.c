/* launch.c: running a loaded program on the simulator. */
#include "rt_internal.h"

#include <stdio.h>
#include <string.h>

int rt_launch(rt_program *prog, rt_run_result *res)
{
    rt_run_result r;
    memset(&r, 0, sizeof r);
    r.fault.core = -1;
    r.fault.unit = ISA_U_SEQ;
    r.fault.index = -1;
    int rc = sim_run(prog->dev->sim, prog->p, prog->base, &r.stats, &r.fault);
    r.status = rc ? RT_RUN_FAULT : RT_RUN_OK;
    prog->last = r;
    prog->launched = 1;
    if (res)
        *res = r;
    return rc ? -1 : 0;
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
        snprintf(buf, len, "run: ok insns=%llu macs=%llu sfp_elems=%llu dram_read=%llu dram_written=%llu ring=%llu",
                 (unsigned long long)res->stats.insns, (unsigned long long)res->stats.macs,
                 (unsigned long long)res->stats.sfp_elems,
                 (unsigned long long)res->stats.dram_bytes_read,
                 (unsigned long long)res->stats.dram_bytes_written,
                 (unsigned long long)res->stats.ring_bytes);
        return;
    }
    const sim_fault *f = &res->fault;
    if (f->core < 0)
        snprintf(buf, len, "run: FAULT: %s", f->msg);
    else
        snprintf(buf, len, "run: FAULT core %d unit %s insn %ld: %s", f->core, unit_name(f->unit),
                 f->index, f->msg);
}
