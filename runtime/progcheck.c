/* progcheck.c: what a program must pass before it is loaded: it fits the
 * chip, and its tensor table (an ELF file is user input) is consistent. */
#include "rt_internal.h"

#include <stdlib.h>
#include <string.h>

/* Element counts beyond this are rejected as corrupt before any
 * multiplication can overflow (2^44 elements is far beyond any device). */
#define RT_SIZE_LIMIT ((uint64_t)1 << 44)

/* Check one tensor of the table (after the program's stick size). */
static int check_tensor(const isa_program *p, size_t idx, char *err, size_t errlen)
{
    const isa_tensor *t = &p->tensors[idx];
    if (!memchr(t->name, 0, sizeof t->name) || !t->name[0])
        return isa_errf(err, errlen, "tensor %zu has an empty or unterminated name", idx);
    if ((int)t->role < 0 || t->role > ISA_ROLE_SCRATCH)
        return isa_errf(err, errlen, "tensor %s: bad role %d", t->name, (int)t->role);
    if ((int)t->host_dtype < 0 || t->host_dtype >= ISA_HT_COUNT)
        return isa_errf(err, errlen, "tensor %s: bad host dtype %d", t->name, (int)t->host_dtype);
    if ((int)t->dev_dtype < 0 || t->dev_dtype > ISA_T_F32)
        return isa_errf(err, errlen, "tensor %s: bad device dtype %d", t->name, (int)t->dev_dtype);
    if (t->rank < 0 || t->rank > ISA_MAX_RANK)
        return isa_errf(err, errlen, "tensor %s: rank %d is outside 0..%d", t->name, t->rank, ISA_MAX_RANK);
    if (t->rank ? (t->stick_dim < 0 || t->stick_dim >= t->rank) : t->stick_dim != 0)
        return isa_errf(err, errlen, "tensor %s: stick_dim %d is outside 0..%d", t->name, t->stick_dim,
                        t->rank ? t->rank - 1 : 0);
    if (!isa_order_valid(t->order, t->rank))
        return isa_errf(err, errlen, "tensor %s: order 0x%x is not an order of its %d dims", t->name,
                        (unsigned)t->order, t->rank);
    uint64_t elems = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->shape[i] < 0 || (uint64_t)t->shape[i] > RT_SIZE_LIMIT)
            return isa_errf(err, errlen, "tensor %s: bad dimension %d of size %lld", t->name, i,
                            (long long)t->shape[i]);
        if (t->shape[i] && elems > RT_SIZE_LIMIT / (uint64_t)t->shape[i])
            return isa_errf(err, errlen, "tensor %s: too many elements", t->name);
        elems *= (uint64_t)t->shape[i];
    }
    /* groups * rows <= max(elems, 1) <= 2^44, so the device bytes cannot
     * overflow for any sane stick size (checked by rt_open_config). */
    uint64_t want = isa_tensor_device_bytes(t, p->stick_bytes);
    if (t->bytes != want)
        return isa_errf(err, errlen, "tensor %s: records %llu device bytes but its shape and layout need %llu",
                        t->name, (unsigned long long)t->bytes, (unsigned long long)want);
    if (t->flags & ~ISA_TF_ALL)
        return isa_errf(err, errlen, "tensor %s: unknown flags 0x%x", t->name, (unsigned)t->flags);
    if (t->flags & ISA_TF_LX)
        return isa_tensor_check_lx(p, t, err, errlen);
    if (t->dram_off > p->dram_bytes || t->bytes > p->dram_bytes - t->dram_off)
        return isa_errf(err, errlen, "tensor %s: [%llu, +%llu) lies outside the program's DRAM segment of %llu bytes",
                       t->name, (unsigned long long)t->dram_off, (unsigned long long)t->bytes,
                       (unsigned long long)p->dram_bytes);
    int weight = t->role == ISA_ROLE_WEIGHT;
    if (p->weight_bytes && (weight ? t->dram_off + t->bytes > p->weight_bytes : t->dram_off < p->weight_bytes))
        return isa_errf(err, errlen, "tensor %s (%s): [%llu, +%llu) is not in the %s region (weights: [0, %llu))",
                       t->name, isa_role_names[t->role], (unsigned long long)t->dram_off,
                       (unsigned long long)t->bytes, weight ? "weights" : "activation",
                       (unsigned long long)p->weight_bytes);
    if (t->const_off != -1 &&
        (t->const_off < 0 || (uint64_t)t->const_off > p->nconsts || t->bytes > p->nconsts - (uint64_t)t->const_off))
        return isa_errf(err, errlen, "tensor %s: constant data [%lld, +%llu) lies outside the %zu constant bytes",
                       t->name, (long long)t->const_off, (unsigned long long)t->bytes, p->nconsts);
    return 0;
}

static int by_offset(const void *a, const void *b)
{
    const isa_tensor *x = *(const isa_tensor *const *)a, *y = *(const isa_tensor *const *)b;
    return x->dram_off < y->dram_off ? -1 : x->dram_off > y->dram_off;
}

/* Tensors start on a stick (DMA moves whole sticks, and the regions are
 * placed stick-aligned) and no two share a byte: one tensor's data would
 * be another's. */
static int check_placement(const isa_program *p, char *err, size_t errlen)
{
    const isa_tensor **order = malloc((p->ntensors ? p->ntensors : 1) * sizeof *order);
    size_t n = 0;
    if (!order)
        return isa_errf(err, errlen, "out of host memory");
    int rc = 0;
    for (size_t i = 0; i < p->ntensors && !rc; i++) {
        const isa_tensor *t = &p->tensors[i];
        if (t->flags & ISA_TF_LX)
            continue; /* not in DRAM (check_tensor placed it in its LX) */
        if (t->dram_off % p->stick_bytes)
            rc = isa_errf(err, errlen, "tensor %s: DRAM offset %llu is not a multiple of the %u-byte stick", t->name,
                          (unsigned long long)t->dram_off, p->stick_bytes);
        if (t->bytes)
            order[n++] = t;
    }
    if (!rc)
        qsort(order, n, sizeof *order, by_offset);
    for (size_t k = 1; k < n && !rc; k++) {
        const isa_tensor *a = order[k - 1], *b = order[k];
        if (a->dram_off + a->bytes > b->dram_off)
            rc = isa_errf(err, errlen, "tensors %s [%llu, +%llu) and %s [%llu, +%llu) overlap in DRAM", a->name,
                         (unsigned long long)a->dram_off, (unsigned long long)a->bytes, b->name,
                         (unsigned long long)b->dram_off, (unsigned long long)b->bytes);
    }
    free(order);
    return rc;
}

/* Does the program fit this chip, and is it self-consistent? */
int rt_program_check(const rt_device *dev, const isa_program *p, char *err, size_t errlen)
{
    const chip_config *c = &dev->cfg;
    if (p->ncores < 1 || p->ncores > c->cores)
        return isa_errf(err, errlen, "program built for %d cores (config %s) does not fit chip %s with %d cores",
                        p->ncores, p->config, c->name, c->cores);
    if (p->lx_bytes > c->lx_bytes)
        return isa_errf(err, errlen, "program assumes %llu bytes of LX per core (config %s) but chip %s has %llu",
                        (unsigned long long)p->lx_bytes, p->config, c->name, (unsigned long long)c->lx_bytes);
    if (p->stick_bytes != c->stick_bytes)
        return isa_errf(err, errlen, "program uses %u-byte sticks (config %s) but chip %s has %u-byte sticks",
                        p->stick_bytes, p->config, c->name, c->stick_bytes);
    if (p->dram_bytes > c->dram_bytes)
        return isa_errf(err, errlen, "program needs a DRAM segment of %llu bytes but chip %s has %llu bytes of DRAM",
                        (unsigned long long)p->dram_bytes, c->name, (unsigned long long)c->dram_bytes);
    if (p->weight_bytes > p->dram_bytes)
        return isa_errf(err, errlen, "weights region of %llu bytes is larger than the DRAM segment of %llu bytes",
                        (unsigned long long)p->weight_bytes, (unsigned long long)p->dram_bytes);
    /* activations live at their offset minus weight_bytes in a stick-aligned region */
    if (p->weight_bytes % p->stick_bytes)
        return isa_errf(err, errlen, "weights region of %llu bytes is not a whole number of %u-byte sticks",
                        (unsigned long long)p->weight_bytes, p->stick_bytes);
    for (size_t i = 0; i < p->ntensors; i++)
        if (check_tensor(p, i, err, errlen))
            return -1;
    const char *dup = isa_program_duplicate_tensor(p);
    if (dup)
        return isa_errf(err, errlen, "tensor %s is defined twice", dup);
    return check_placement(p, err, errlen);
}
