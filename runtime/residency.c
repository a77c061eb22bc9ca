/* residency.c: where a program's tensors live.  Its DRAM segment is two
 * regions: weights ([0, weight_bytes), allocated at load, resident across
 * launches until evicted) and activations (the rest, allocated at load and
 * at each launch, freed when the launch has read its outputs back).  When
 * an allocation does not fit, other programs make room: first activation
 * regions held before a first launch, then weights regions, the one used
 * furthest in the future first (Belady, from the declared schedule) or the
 * least recently used.  docs/runtime.md describes the policy.  An input
 * resident in a core's LX (ISA_TF_LX) takes no DRAM: it is written into
 * that LX before every run. */
#include "rt_internal.h"

#include <stdlib.h>
#include <string.h>

/* The resident weights region to evict for self: furthest next use, ties
 * (and no schedule) to the least recently used.  NULL when none is left. */
static rt_program *choose_victim(rt_device *dev, const rt_program *self, size_t from)
{
    rt_program *best = NULL;
    uint64_t best_next = 0;
    for (rt_program *q = dev->programs; q; q = q->next) {
        if (q == self || !q->resident)
            continue;
        uint64_t d = dev->nsched ? rt_sched_next_use(dev, q, from) : 0;
        if (!best || d > best_next || (d == best_next && q->last_use < best->last_use)) {
            best = q;
            best_next = d;
        }
    }
    return best;
}

void rt_drop_weights(rt_program *prog)
{
    if (!prog->resident)
        return;
    int rc = rt_free(prog->dev, prog->wbase);
    (void)rc;
    prog->resident = 0;
}

void rt_unstage(rt_program *prog)
{
    if (!prog->staged)
        return;
    int rc = rt_free(prog->dev, prog->abase);
    (void)rc;
    prog->staged = 0;
}

/* Allocate bytes for self, making room from other programs as needed. */
static int alloc_room(rt_program *self, uint64_t bytes, size_t from, const char *what, uint64_t *addr, char *err,
                      size_t errlen)
{
    rt_device *dev = self->dev;
    char msg[400];
    for (;;) {
        if (!rt_alloc(dev, bytes, addr, msg, sizeof msg))
            return 0;
        /* Activation regions held before a first launch: their inputs have
         * host copies, so dropping them moves nothing now. */
        rt_program *q = dev->programs;
        while (q && (q == self || !q->staged))
            q = q->next;
        if (q) {
            rt_unstage(q);
            continue;
        }
        q = choose_victim(dev, self, from);
        if (!q)
            return isa_errf(err, errlen, "%s: %s; no other program's weights are left to evict", what, msg);
        /* The host copies of its weights already exist: evicting frees. */
        uint64_t w = q->p->weight_bytes;
        rt_drop_weights(q);
        rt_transfer_stats *c[2] = {&self->pending, &dev->total};
        for (int k = 0; k < 2; k++) {
            c[k]->weights_evicted++;
            c[k]->weight_bytes_evicted += w;
        }
    }
}

/* Fill the tensors of one region (weights or activations) that was just
 * allocated: constant data, else the host copy of what feeds the run
 * (weights, inputs), else zeros below dirty_end (where an earlier
 * allocation may have left data); scratch is left as it is. */
static int fill_region(rt_program *prog, int weights, int values, uint64_t dirty_end, char *err, size_t errlen)
{
    const isa_program *p = prog->p;
    for (size_t i = 0; i < p->ntensors; i++) {
        const isa_tensor *t = &p->tensors[i];
        if (rt_in_weights(p, t) != weights || !t->bytes || (t->flags & ISA_TF_LX))
            continue; /* an LX input is placed at each launch (rt_place_lx) */
        uint64_t lo = rt_tensor_dev_addr(prog, t);
        if (t->const_off >= 0) {
            if (sim_dram_write(prog->dev->sim, lo, p->consts + t->const_off, (size_t)t->bytes))
                return isa_errf(err, errlen, "tensor %s: device DRAM write failed", t->name);
            rt_count_upload(prog, t, t->bytes);
            continue;
        }
        /* Outputs are the run's to write: only what feeds the run goes up.
         * values 0 (an activation region staged for one timing-only run,
         * which reads no values): the transfer is counted, not made. */
        if (prog->host[i] && t->role != ISA_ROLE_OUTPUT && t->role != ISA_ROLE_SCRATCH) {
            if (!values)
                rt_count_upload(prog, t, t->bytes);
            else if (rt_write_f32(prog, (int)i, prog->host[i], err, errlen))
                return -1;
            continue;
        }
        /* values 0: the run reads no values and its outputs are not read
         * back (rt_download_outputs), so the zeros are not made either */
        if (t->role == ISA_ROLE_SCRATCH || lo >= dirty_end || !values)
            continue;
        uint64_t hi = lo + t->bytes < dirty_end ? lo + t->bytes : dirty_end;
        if (sim_dram_zero(prog->dev->sim, lo, hi - lo))
            return isa_errf(err, errlen, "device DRAM write failed at %llu", (unsigned long long)lo);
    }
    return 0;
}

int rt_place_weights(rt_program *prog, size_t from, int restoring, char *err, size_t errlen)
{
    const uint64_t w = prog->p->weight_bytes;
    if (!w || prog->resident)
        return 0;
    uint64_t dirty = prog->dev->dirty_end;
    if (alloc_room(prog, w, from, "weights region", &prog->wbase, err, errlen))
        return -1;
    prog->resident = 1;
    if (fill_region(prog, 1, 1, dirty, err, errlen))
        return -1;
    if (restoring) {
        rt_transfer_stats *c[2] = {&prog->pending, &prog->dev->total};
        for (int k = 0; k < 2; k++) {
            c[k]->weights_restored++;
            c[k]->weight_bytes_restored += w;
        }
    }
    return 0;
}

int rt_stage(rt_program *prog, size_t from, int values, char *err, size_t errlen)
{
    const uint64_t a = prog->p->dram_bytes - prog->p->weight_bytes;
    if (!a || prog->staged)
        return 0;
    uint64_t dirty = prog->dev->dirty_end;
    if (alloc_room(prog, a, from, "activation region", &prog->abase, err, errlen))
        return -1;
    prog->staged = 1;
    return fill_region(prog, 0, values, dirty, err, errlen);
}

/* Inputs resident in a core's LX (ISA_TF_LX): their host copy (zeros
 * without one) written there before every run, since any program run on
 * the device may have used that LX since; untimed, as the program states
 * the data is there when it starts. */
int rt_place_lx(rt_program *prog, char *err, size_t errlen)
{
    const isa_program *p = prog->p;
    for (size_t i = 0; i < p->ntensors; i++) {
        const isa_tensor *t = &p->tensors[i];
        if (!(t->flags & ISA_TF_LX) || !t->bytes)
            continue;
        uint8_t *lx = sim_lx(prog->dev->sim, t->lx_core);
        if (!lx || t->dram_off + t->bytes > sim_get_config(prog->dev->sim)->lx_bytes)
            return isa_errf(err, errlen, "tensor %s: does not fit the LX of core %d", t->name, t->lx_core);
        if (prog->host[i])
            isa_layout_pack(t, p->stick_bytes, prog->host[i], lx + t->dram_off);
        else
            memset(lx + t->dram_off, 0, (size_t)t->bytes);
        rt_count_upload(prog, t, t->bytes);
    }
    return 0;
}

int rt_weights_resident(const rt_program *prog)
{
    return prog->resident;
}
