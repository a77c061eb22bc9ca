/* inputs.c: giving a program its inputs: seeded random values (splitmix64,
 * reproducible on every machine) and raw little-endian fp32 files. */
#include "rt_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
 * generators", 2014): a Weyl sequence through a 64-bit finaliser. */
uint64_t rt_random_word(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* FNV-1a, 64 bits. */
static uint64_t fnv1a64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) {
        h ^= (uint8_t)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t rt_random_key(uint64_t seed, const char *name) { return seed ^ fnv1a64(name); }

void rt_random_uniform(uint64_t seed, const char *name, float *out, size_t n)
{
    uint64_t state = rt_random_key(seed, name);
    for (size_t i = 0; i < n; i++) {
        int32_t k = (int32_t)(rt_random_word(&state) >> 40); /* 24 bits */
        out[i] = (float)(k - (1 << 23)) * 0x1p-23f;
    }
}

static int is_input_role(isa_role r)
{
    return r == ISA_ROLE_INPUT || r == ISA_ROLE_WEIGHT;
}

/* Round to the host dtype, keep the host copy, write the device. */
static int set_input(rt_program *prog, int i, float *vals, char *err, size_t errlen)
{
    const isa_tensor *t = &prog->p->tensors[i];
    if (t->host_dtype != ISA_HT_F32) {
        size_t n = (size_t)rt_tensor_elems(t);
        for (size_t k = 0; k < n; k++)
            vals[k] = isa_host_round(t->host_dtype, vals[k]);
    }
    if (rt_keep_host(prog, i, vals, err, errlen))
        return -1;
    /* from the kept copy: its packed bytes are kept too, so a launch's
     * upload neither packs again nor faults in a fresh buffer */
    return rt_write_f32(prog, i, prog->host[i], err, errlen);
}

/* Uniform values in [-1, 1) as integers spread over an input's declared range. */
static void into_range(const rt_range *r, float *v, size_t n)
{
    const double count = (double)r->hi - (double)r->lo + 1;
    for (size_t k = 0; k < n; k++)
        v[k] = (float)fmin((double)r->lo + floor((v[k] + 1.0) * 0.5 * count), (double)r->hi);
}

int rt_fill_inputs(rt_program *prog, uint64_t seed, char *err, size_t errlen)
{
    prog->seed = seed;
    for (size_t i = 0; i < prog->p->ntensors; i++) {
        const isa_tensor *t = &prog->p->tensors[i];
        if (!is_input_role(t->role) || t->const_off >= 0)
            continue;
        size_t n = (size_t)rt_tensor_elems(t);
        float *v = malloc(n ? n * sizeof *v : 1);
        if (!v)
            return isa_errf(err, errlen, "tensor %s: out of host memory", t->name);
        rt_random_uniform(seed, t->name, v, n);
        if (prog->range && prog->range[i].declared)
            into_range(&prog->range[i], v, n);
        int rc = set_input(prog, (int)i, v, err, errlen);
        free(v);
        if (rc)
            return -1;
    }
    return 0;
}

/* Index of an input or weight tensor, or -1 with a message. */
static int find_input(rt_program *prog, const char *name, char *err, size_t errlen)
{
    int i = rt_find_tensor(prog, name, err, errlen);
    if (i < 0)
        return -1;
    const isa_tensor *t = &prog->p->tensors[i];
    if (!is_input_role(t->role))
        return isa_errf(err, errlen, "tensor %s is %s %s, not an input or weight", name,
                        t->role == ISA_ROLE_OUTPUT ? "an" : "a", isa_role_names[t->role]);
    return i;
}

int rt_set_input(rt_program *prog, const char *name, const float *values, char *err, size_t errlen)
{
    int i = find_input(prog, name, err, errlen);
    if (i < 0)
        return -1;
    size_t n = (size_t)rt_tensor_elems(&prog->p->tensors[i]);
    float *v = malloc(n ? n * sizeof *v : 1);
    if (!v)
        return isa_errf(err, errlen, "tensor %s: out of host memory", name);
    if (n)
        memcpy(v, values, n * sizeof *v);
    int rc = set_input(prog, i, v, err, errlen);
    free(v);
    return rc;
}

int rt_load_input_file(rt_program *prog, const char *name, const char *path, char *err, size_t errlen)
{
    int i = find_input(prog, name, err, errlen);
    if (i < 0)
        return -1;
    const isa_tensor *t = &prog->p->tensors[i];
    size_t n = (size_t)rt_tensor_elems(t);
    /* The size first, from fstat: a file of the wrong size is not read. */
    char e[1024];
    uint64_t size;
    int fd = isa_file_open(path, UINT64_MAX, &size, e, sizeof e);
    if (fd < 0)
        return isa_errf(err, errlen, "input %s: %s", name, e);
    close(fd);
    if (size != (uint64_t)n * 4) {
        char shape[192];
        rt_dims_str(t->rank, t->shape, shape, sizeof shape);
        return isa_errf(err, errlen, "input %s: %s has %llu bytes but shape %s needs %zu bytes of fp32", name, path,
                        (unsigned long long)size, shape, n * 4);
    }
    size_t got;
    uint8_t *raw = (uint8_t *)isa_file_read(path, (uint64_t)n * 4, &got, e, sizeof e);
    if (!raw)
        return isa_errf(err, errlen, "input %s: %s", name, e);
    float *v = got == n * 4 ? malloc(n ? n * sizeof *v : 1) : NULL;
    if (!v) {
        free(raw);
        return got == n * 4 ? isa_errf(err, errlen, "input %s: out of host memory", name)
                            : isa_errf(err, errlen, "input %s: %s changed size while read", name, path);
    }
    for (size_t k = 0; k < n; k++) {
        uint32_t u = (uint32_t)raw[4 * k] | (uint32_t)raw[4 * k + 1] << 8 |
                     (uint32_t)raw[4 * k + 2] << 16 | (uint32_t)raw[4 * k + 3] << 24;
        memcpy(&v[k], &u, 4);
    }
    free(raw);
    int rc = set_input(prog, i, v, err, errlen);
    free(v);
    return rc;
}

int rt_input_arg(rt_program *prog, const char *arg, char *err, size_t errlen)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return isa_errf(err, errlen, "input argument '%s' is not NAME=FILE", arg);
    char *value = strndup(arg, (size_t)(eq - arg)), name[GR_TENSOR_NAME_MAX];
    if (!value)
        return isa_errf(err, errlen, "out of host memory");
    gr_tensor_name(value, name); /* a long value name is shortened in the program */
    free(value);
    return rt_load_input_file(prog, name, eq + 1, err, errlen);
}
