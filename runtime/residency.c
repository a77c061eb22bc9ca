/* residency.c: where a program's tensors live.  Its DRAM segment is two
 * regions: weights ([0, weight_bytes), allocated at load, resident across
 * launches until evicted) and activations (the rest, allocated at load and
 * at each launch, freed when the launch has read its outputs back).  When
 * an allocation does not fit, other programs make room: first activation
 * regions held before a first launch, then weights regions, the one used
 * furthest in the future first (Belady, from the declared schedule) or the
 * least recently used.  docs/runtime.md describes the policy. */
#include "rt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rt_in_weights(const isa_program *p, const isa_tensor *t)
{
    return p->weight_bytes && t->dram_off < p->weight_bytes;
}

int rt_region_present(const rt_program *prog, const isa_tensor *t)
{
    return rt_in_weights(prog->p, t) ? prog->resident : prog->staged;
}

uint64_t rt_tensor_dev_addr(const rt_program *prog, const isa_tensor *t)
{
    if (rt_in_weights(prog->p, t))
        return prog->wbase + t->dram_off;
    return prog->abase + (t->dram_off - prog->p->weight_bytes);
}

void rt_count_upload(rt_program *prog, const isa_tensor *t, uint64_t bytes)
{
    rt_transfer_stats *c[2] = {&prog->pending, &prog->dev->total};
    for (int k = 0; k < 2; k++) {
        c[k]->bytes_uploaded += bytes;
        if (rt_in_weights(prog->p, t))
            c[k]->weight_bytes_uploaded += bytes;
    }
}

/* ---- the schedule ---- */

int rt_set_schedule(rt_device *dev, rt_program *const *order, size_t n, char *err, size_t errlen)
{
    for (size_t k = 0; k < n; k++) {
        const rt_program *q = dev->programs;
        while (q && q != order[k])
            q = q->next;
        if (!q)
            return isa_errf(err, errlen, "rt_set_schedule: entry %zu is not a program loaded on this device", k);
    }
    rt_program **s = NULL;
    if (n) {
        s = malloc(n * sizeof *s);
        if (!s)
            return isa_errf(err, errlen, "rt_set_schedule: out of host memory");
        memcpy(s, order, n * sizeof *s);
    }
    free(dev->sched);
    dev->sched = s;
    dev->nsched = n;
    dev->sched_pos = 0;
    return 0;
}

size_t rt_sched_from(rt_program *prog, int advance)
{
    rt_device *dev = prog->dev;
    if (!dev->nsched || !advance)
        return dev->sched_pos;
    for (size_t j = 0; j < dev->nsched; j++) {
        size_t k = (dev->sched_pos + j) % dev->nsched;
        if (dev->sched[k] == prog) {
            dev->sched_pos = (k + 1) % dev->nsched;
            break;
        }
    }
    return dev->sched_pos; /* unchanged when the schedule does not run prog */
}

void rt_sched_forget(rt_program *prog)
{
    rt_device *dev = prog->dev;
    size_t kept = 0, pos = dev->sched_pos;
    for (size_t k = 0; k < dev->nsched; k++) {
        if (dev->sched[k] == prog) {
            if (k < dev->sched_pos)
                pos--;
            continue;
        }
        dev->sched[kept++] = dev->sched[k];
    }
    dev->nsched = kept;
    dev->sched_pos = kept ? pos % kept : 0;
}

/* Launches until q's next one, counting from schedule position `from`;
 * UINT64_MAX when the schedule never runs it. */
static uint64_t next_use(const rt_device *dev, const rt_program *q, size_t from)
{
    for (size_t j = 0; j < dev->nsched; j++)
        if (dev->sched[(from + j) % dev->nsched] == q)
            return j;
    return UINT64_MAX;
}

/* The resident weights region to evict for self: furthest next use, ties
 * (and no schedule) to the least recently used.  NULL when none is left. */
static rt_program *choose_victim(rt_device *dev, const rt_program *self, size_t from)
{
    rt_program *best = NULL;
    uint64_t best_next = 0;
    for (rt_program *q = dev->programs; q; q = q->next) {
        if (q == self || !q->resident)
            continue;
        uint64_t d = dev->nsched ? next_use(dev, q, from) : 0;
        if (!best || d > best_next || (d == best_next && q->last_use < best->last_use)) {
            best = q;
            best_next = d;
        }
    }
    return best;
}

/* ---- allocation with eviction ---- */

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

/* Zero [addr, addr + len) of device DRAM. */
static int zero_dram(sim *s, uint64_t addr, uint64_t len, char *err, size_t errlen)
{
    enum { CHUNK = 1 << 20 };
    void *z = calloc(1, len < CHUNK ? (size_t)len : CHUNK);
    if (!z)
        return isa_errf(err, errlen, "out of host memory");
    while (len) {
        size_t n = len < CHUNK ? (size_t)len : CHUNK;
        if (sim_dram_write(s, addr, z, n)) {
            free(z);
            return isa_errf(err, errlen, "device DRAM write failed at %llu", (unsigned long long)addr);
        }
        addr += n;
        len -= n;
    }
    free(z);
    return 0;
}

/* Fill the tensors of one region (weights or activations) that was just
 * allocated: constant data, else the host copy of what feeds the run
 * (weights, inputs), else zeros below dirty_end (where an earlier
 * allocation may have left data); scratch is left as it is. */
static int fill_region(rt_program *prog, int weights, uint64_t dirty_end, char *err, size_t errlen)
{
    const isa_program *p = prog->p;
    for (size_t i = 0; i < p->ntensors; i++) {
        const isa_tensor *t = &p->tensors[i];
        if (rt_in_weights(p, t) != weights || !t->bytes)
            continue;
        uint64_t lo = rt_tensor_dev_addr(prog, t);
        if (t->const_off >= 0) {
            if (sim_dram_write(prog->dev->sim, lo, p->consts + t->const_off, (size_t)t->bytes))
                return isa_errf(err, errlen, "tensor %s: device DRAM write failed", t->name);
            rt_count_upload(prog, t, t->bytes);
            continue;
        }
        /* Outputs are the run's to write: only what feeds the run goes up. */
        if (prog->host[i] && t->role != ISA_ROLE_OUTPUT && t->role != ISA_ROLE_SCRATCH) {
            if (rt_write_f32(prog, (int)i, prog->host[i], err, errlen))
                return -1;
            continue;
        }
        if (t->role == ISA_ROLE_SCRATCH || lo >= dirty_end)
            continue;
        uint64_t hi = lo + t->bytes < dirty_end ? lo + t->bytes : dirty_end;
        if (zero_dram(prog->dev->sim, lo, hi - lo, err, errlen))
            return -1;
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
    if (fill_region(prog, 1, dirty, err, errlen))
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

int rt_stage(rt_program *prog, size_t from, char *err, size_t errlen)
{
    const uint64_t a = prog->p->dram_bytes - prog->p->weight_bytes;
    if (!a || prog->staged)
        return 0;
    uint64_t dirty = prog->dev->dirty_end;
    if (alloc_room(prog, a, from, "activation region", &prog->abase, err, errlen))
        return -1;
    prog->staged = 1;
    return fill_region(prog, 0, dirty, err, errlen);
}

int rt_download_outputs(rt_program *prog, char *err, size_t errlen)
{
    const isa_program *p = prog->p;
    for (size_t i = 0; i < p->ntensors; i++) {
        const isa_tensor *t = &p->tensors[i];
        if (t->role != ISA_ROLE_OUTPUT || !rt_region_present(prog, t))
            continue;
        size_t n = (size_t)rt_tensor_elems(t);
        float *h = prog->host[i] ? prog->host[i] : malloc(n ? n * sizeof *h : 1);
        void *buf = malloc(t->bytes ? (size_t)t->bytes : 1);
        if (!h || !buf) {
            if (h != prog->host[i])
                free(h);
            free(buf);
            return isa_errf(err, errlen, "tensor %s: out of host memory reading it back", t->name);
        }
        prog->host[i] = h;
        if (sim_dram_read(prog->dev->sim, rt_tensor_dev_addr(prog, t), buf, (size_t)t->bytes)) {
            free(buf);
            return isa_errf(err, errlen, "tensor %s: device DRAM read failed", t->name);
        }
        rt_layout_unpack(t, p->stick_bytes, buf, h);
        free(buf);
        prog->pending.bytes_downloaded += t->bytes;
        prog->dev->total.bytes_downloaded += t->bytes;
    }
    return 0;
}

/* ---- queries ---- */

int rt_weights_resident(const rt_program *prog)
{
    return prog->resident;
}

void rt_device_transfers(const rt_device *dev, rt_transfer_stats *total)
{
    *total = dev->total;
}

int rt_tensor_addr(const rt_program *prog, const char *name, uint64_t *addr, char *err, size_t errlen)
{
    int i = rt_find_tensor(prog, name, err, errlen);
    if (i < 0)
        return -1;
    const isa_tensor *t = &prog->p->tensors[i];
    if (!rt_region_present(prog, t))
        return isa_errf(err, errlen, "tensor %s is not in device DRAM now: %s", name,
                        rt_in_weights(prog->p, t) ? "its program's weights are evicted"
                                                  : "activations are allocated only from load to the first launch and during launches");
    *addr = rt_tensor_dev_addr(prog, t);
    return 0;
}
