/* sim: the simulated Spyre chip: configuration, device memory and the
 * execution of per-core instruction streams. */
#ifndef SIM_H
#define SIM_H

#include <stddef.h>
#include <stdint.h>

#include "isa.h"

/* Chip configuration: every number the simulator and compiler use.  Read
 * from a `key = value` file (sim/configs/spyre.cfg documents each key). */
typedef struct {
    char name[64];
    int cores;               /* AI cores */
    int corelets;            /* corelets per core (PT + SFP pairs); the ISA has 2 */
    uint64_t lx_bytes;       /* scratchpad per core */
    uint64_t lx_usable_bytes;/* part of LX the compiler may plan */
    uint32_t stick_bytes;    /* DRAM <-> LX transfer unit */
    int pt_rows, pt_cols;    /* systolic array shape per corelet */
    int tokens;              /* sync tokens per core */
    int64_t token_max;       /* largest token count before overflow */
    int queue_depth;         /* instructions queued per unit */
    uint64_t dram_bytes;     /* device DRAM */
    uint64_t dram_page_bytes;/* granularity of the sparse DRAM store */
    uint64_t dram_align;     /* runtime allocator alignment */
    double clock_ghz;        /* core clock */
    int ring_bytes_per_cycle;/* per direction */
} sim_config;

/* Load a configuration file.  Returns 0, or -1 with "file:line: message". */
int sim_config_load(const char *path, sim_config *cfg, char *err, size_t errlen);
/* Directory holding the configurations shipped with the simulator. */
const char *sim_config_dir(void);
/* Path of a shipped configuration by name ("spyre", "spyre-4core"). */
void sim_config_path(const char *name, char *buf, size_t len);

/* Where and why a simulated program broke a rule. */
typedef struct {
    int core;          /* -1 when not tied to a core */
    int unit;          /* isa_unit, ISA_U_SEQ for the sequencer */
    long index;        /* instruction index in the core's stream */
    char msg[512];
} sim_fault;

typedef struct {
    uint64_t insns;            /* instructions executed by units (not control) */
    uint64_t macs;             /* multiply-accumulates done by PT units */
    uint64_t sfp_elems;        /* elements produced by SFP units */
    uint64_t dram_bytes_read;
    uint64_t dram_bytes_written;
    uint64_t ring_bytes;
    uint64_t lx_peak[256];     /* highest LX byte touched + 1, per core */
} sim_stats;

typedef struct sim sim;

/* A chip with zeroed LX and empty DRAM.  NULL on out of memory. */
sim *sim_create(const sim_config *cfg);
void sim_destroy(sim *s);
const sim_config *sim_get_config(const sim *s);

/* Host access to device DRAM (sparse: untouched pages read as zero). */
int sim_dram_write(sim *s, uint64_t addr, const void *src, size_t len);
int sim_dram_read(sim *s, uint64_t addr, void *dst, size_t len);

/* Run a program's streams to completion.  DRAM addresses in DMA
 * instructions are relative to dram_base.  Returns 0, or -1 with the fault
 * filled in (the program broke a rule or deadlocked). */
int sim_run(sim *s, const isa_program *p, uint64_t dram_base, sim_stats *st, sim_fault *fault);

/* Direct LX access, for tests. */
uint8_t *sim_lx(sim *s, int core);

#endif
