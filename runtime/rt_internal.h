/* rt_internal.h: the runtime's private structures, shared by the runtime sources
 * only (the public interface is rt.h). */
#ifndef RT_INTERNAL_H
#define RT_INTERNAL_H

#include "rt.h"

#include <stdarg.h>

/* A [addr, addr + size) range of device DRAM. */
typedef struct {
    uint64_t addr, size;
} rt_block;

struct rt_device {
    sim_config cfg;
    sim *sim;
    rt_block *free_list; /* sorted by addr, never adjacent (coalesced) */
    size_t nfree, capfree;
    rt_block *used;      /* allocated blocks, unordered */
    size_t nused, capused;
    uint64_t dirty_end;  /* end of the highest block ever allocated */
    rt_program *programs;/* loaded programs, linked through next */
};

struct rt_program {
    rt_device *dev;
    isa_program *p;
    uint64_t base;       /* device address of the DRAM segment */
    float **host;        /* per tensor: fp32 host copy or NULL */
    int launched;
    rt_run_result last;
    rt_program *next;
};

/* Format a message into err (which may be NULL); always returns -1. */
int rt_errf(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* "(100, 70)" */
void rt_shape_str(const isa_tensor *t, char *buf, size_t len);

/* Replace the host copy of tensor i with a copy of values. */
int rt_keep_host(rt_program *prog, int i, const float *values, char *err, size_t errlen);
/* Convert fp32 values to device layout and write them to tensor i. */
int rt_write_f32(rt_program *prog, int i, const float *values, char *err, size_t errlen);

#endif
