/* program.c: loading programs onto a device and unloading them: the
 * checks (progcheck.c), its DRAM regions placed (residency.c), the host
 * copies of its constant data. */
#include "rt_internal.h"

#include <stdlib.h>

/* The host copy of constant data is its decoded device value. */
static int decode_consts(rt_program *prog, char *err, size_t errlen)
{
    const isa_program *p = prog->p;
    for (size_t i = 0; i < p->ntensors; i++) {
        const isa_tensor *t = &p->tensors[i];
        if (t->const_off < 0 || !t->bytes)
            continue;
        size_t n = (size_t)rt_tensor_elems(t);
        float *h = malloc(n ? n * sizeof *h : 1);
        if (!h)
            return isa_errf(err, errlen, "out of host memory");
        isa_layout_unpack(t, p->stick_bytes, p->consts + t->const_off, h);
        free(prog->host[i]);
        prog->host[i] = h;
        rt_host_changed(prog, (int)i);
    }
    return 0;
}

rt_program *rt_load_program(rt_device *dev, isa_program *p, char *err, size_t errlen)
{
    char msg[512];
    if (rt_program_check(dev, p, msg, sizeof msg)) {
        isa_errf(err, errlen, "load: %s", msg);
        isa_program_free(p);
        return NULL;
    }
    rt_program *prog = calloc(1, sizeof *prog);
    float **host = calloc(p->ntensors ? p->ntensors : 1, sizeof *host);
    float **user = calloc(p->ntensors ? p->ntensors : 1, sizeof *user);
    rt_packed *packed = calloc(p->ntensors ? p->ntensors : 1, sizeof *packed);
    if (!prog || !host || !user || !packed) {
        isa_errf(err, errlen, "load: out of host memory");
        free(prog);
        free(host);
        free(user);
        free(packed);
        isa_program_free(p);
        return NULL;
    }
    prog->dev = dev;
    prog->p = p;
    prog->host = host;
    prog->user = user;
    prog->packed = packed;
    prog->abase = UINT64_MAX;
    prog->host_ops = -1;
    prog->last_use = ++dev->clock;
    prog->next = dev->programs;
    dev->programs = prog;
    size_t from = rt_sched_from(prog, 0);
    if (decode_consts(prog, msg, sizeof msg) || rt_state_init(prog, msg, sizeof msg) ||
        rt_ranges_init(prog, msg, sizeof msg) || rt_place_weights(prog, from, 0, msg, sizeof msg) ||
        rt_stage(prog, from, 1, msg, sizeof msg)) {
        isa_errf(err, errlen, "load: %s", msg);
        rt_unload(prog);
        return NULL;
    }
    return prog;
}

rt_program *rt_load(rt_device *dev, const char *elf_path, char *err, size_t errlen)
{
    char msg[512];
    isa_program *p = isa_elf_read(elf_path, msg, sizeof msg);
    if (!p) {
        isa_errf(err, errlen, "%s", msg);
        return NULL;
    }
    rt_program *prog = rt_load_program(dev, p, msg, sizeof msg);
    if (!prog)
        isa_errf(err, errlen, "%s: %s", elf_path, msg);
    return prog;
}

void rt_unload(rt_program *prog)
{
    if (!prog)
        return;
    rt_device *dev = prog->dev;
    for (rt_program **pp = &dev->programs; *pp; pp = &(*pp)->next)
        if (*pp == prog) {
            *pp = prog->next;
            break;
        }
    rt_sched_forget(prog);
    rt_drop_weights(prog);
    rt_unstage(prog);
    for (size_t i = 0; i < prog->p->ntensors; i++) {
        free(prog->host[i]);
        free(prog->user[i]);
        free(prog->packed[i].bytes);
    }
    free(prog->host);
    free(prog->user);
    free(prog->packed);
    rt_state_free(prog);
    free(prog->range);
    free(prog->icheck);
    if (prog->igraph)
        gr_graph_free(prog->igraph);
    sim_decode_free(prog->decode);
    isa_program_free(prog->p);
    free(prog);
}

const isa_program *rt_program_isa(const rt_program *prog)
{
    return prog->p;
}

uint64_t rt_program_base(const rt_program *prog)
{
    return prog->staged ? prog->abase : UINT64_MAX;
}

rt_device *rt_program_device(rt_program *prog)
{
    return prog->dev;
}
