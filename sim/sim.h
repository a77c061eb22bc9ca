/* sim: the simulated Spyre chip: device memory and the execution of
 * per-core instruction streams, for a chip configuration (chip.h). */
#ifndef SIM_H
#define SIM_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "chip.h"
#include "isa.h"

/* Where and why a simulated program broke a rule. */
typedef struct {
    int core;          /* -1 when not tied to a core */
    int unit;          /* isa_unit, ISA_U_SEQ for the sequencer */
    long index;        /* instruction index in the core's stream */
    char msg[512];
} sim_fault;

#define SIM_MAX_CORES 256
#define SIM_MAX_KERNELS 256

/* One kernel's share of a run, over every core that runs a kernel of that
 * name (isa_program.kernels).  Unit instructions only: the sequencer's
 * control instructions take no unit time.  When a program names more than
 * SIM_MAX_KERNELS kernels, the last entry, "(other kernels)", holds the rest. */
typedef struct {
    char name[ISA_NAME_MAX];
    double start;        /* cycle the earliest of its instructions started */
    double end;          /* cycle the last of them completed */
    double core_span;    /* the longest of one core's own span: from its first instruction's start
                            to its last one's end (after a fence cores start a kernel at
                            different times, so end - start can be far more than any core ran) */
    double busy;         /* unit cycles, summed over units and cores (as unit_busy) */
    uint64_t insns;      /* unit instructions executed */
    uint64_t macs;       /* multiply-accumulates of its pt.mm */
    uint64_t dram_bytes; /* DRAM bytes read and written by its DMAs */
} sim_kernel_stats;

typedef struct {
    double cycles;             /* simulated core cycles from launch to the last unit done */
    uint64_t insns;            /* instructions executed by units (not control) */
    uint64_t macs;             /* multiply-accumulates done by PT units */
    uint64_t sfp_elems;        /* elements produced by SFP units */
    uint64_t dram_bytes_read;
    uint64_t dram_bytes_written;
    uint64_t dram_row_hits, dram_row_misses; /* row-buffer outcomes of DRAM segments */
    double dram_data_ns, dram_mix_ns; /* DRAM data-bus time summed over channels: bursts, read/write interleaving */
    uint64_t ring_bytes;       /* bytes carried over ring links (DMA and core to core) */
    uint64_t lx_peak[SIM_MAX_CORES];            /* highest LX byte touched + 1, per core */
    double unit_busy[SIM_MAX_CORES][ISA_NUNITS];  /* cycles executing */
    double unit_stall[SIM_MAX_CORES][ISA_NUNITS]; /* cycles blocked on a token */
    int host_ops;              /* host fallback ops run (`host` instructions, sim_set_host) */
    double host_cycles;        /* cycles they took, in `cycles` (transfers and host time) */
    int nkernels;              /* entries of kernels[] in use */
    sim_kernel_stats kernels[SIM_MAX_KERNELS];  /* per kernel name, in program order */
} sim_stats;

/* The entry of stats for kernel `name`, or NULL. */
const sim_kernel_stats *sim_stats_kernel(const sim_stats *st, const char *name);

/* Figures derived from stats and the configuration. */
double sim_stats_time_us(const sim_stats *st, const chip_config *cfg);
double sim_stats_mac_utilization(const sim_stats *st, const chip_config *cfg);
/* The share of the run the DRAM's data buses spent moving bursts (mix 0)
 * or on the read/write interleaving charge (mix 1), mean over channels:
 * what is left is the bus idle or waiting for its banks. */
double sim_stats_dram_bus(const sim_stats *st, const chip_config *cfg, int mix);
/* Write the statistics as one JSON object (keys in docs/timing.md). */
int sim_write_stats_json(const sim_stats *st, const chip_config *cfg, const char *path, char *err, size_t errlen);
/* The same object into f (no newline after it). */
void sim_print_stats_json(FILE *f, const sim_stats *st, const chip_config *cfg);

typedef enum { SIM_TRACE_OFF, SIM_TRACE_KERNEL, SIM_TRACE_INSN } sim_trace_level;

/* Limits that stop a runaway program (docs/robustness.md "Limits").  The
 * instruction limit bounds host time (a loop of nops, the cheapest
 * instruction, issues 1e9 in about 25 s), the cycle limit simulated time
 * and so host time for loops of real work.  The largest shipped workload,
 * the Llama-8B prefill layer, issues 4.0e6 to 4.5e6 instructions in
 * 1.35e7 cycles: each default is over 100 times that. */
#define SIM_DEFAULT_MAX_INSNS 1000000000ull  /* 1e9 */
#define SIM_DEFAULT_MAX_CYCLES 1500000000ull /* 1 s simulated at 1.5 GHz */
#define SIM_NO_LIMIT UINT64_MAX

typedef struct {
    int values;             /* compute values; 0 = timing only (addresses still checked) */
    int detect_races;       /* report unordered overlapping accesses as faults */
    sim_trace_level trace;  /* record a timeline for sim_write_trace */
    /* A run faults when its cores' sequencers together issue more than
     * max_insns instructions (control ones included), or when simulated
     * time would pass max_cycles.  0 takes the default (SIM_DEFAULT_MAX_*),
     * so an initializer that omits them keeps the limits; SIM_NO_LIMIT: none. */
    uint64_t max_insns;
    uint64_t max_cycles;
    /* Where the launch starts in the DRAM's refresh schedule, in ns, in
     * [0, dram_trefi_ns): channel c's first all-bank refresh is due at
     * tREFI * (c + 1) / channels - phase (one tREFI later when that is not
     * after time 0).  On hardware a launch meets the refresh at an arbitrary
     * phase (docs/dram.md, "Refresh phase"); 0 is the schedule from time 0.
     * A value out of range faults the run. */
    double refresh_phase_ns;
} sim_options;

typedef struct sim sim;

/* A chip with zeroed LX and empty DRAM.  NULL on out of memory. */
sim *sim_create(const chip_config *cfg);
void sim_destroy(sim *s);
const chip_config *sim_get_config(const sim *s);

/* Host access to device DRAM (sparse: untouched pages read as zero). */
int sim_dram_write(sim *s, uint64_t addr, const void *src, size_t len);
int sim_dram_read(sim *s, uint64_t addr, void *dst, size_t len);
/* [addr, addr + len) reads as zeros from now on (0, or -1 outside DRAM):
 * what writing zeros there does, without a buffer of them. */
int sim_dram_zero(sim *s, uint64_t addr, uint64_t len);
/* DRAM writes are numbered (host writes, zeroing and a program's stores
 * alike): sim_dram_serial is the number of the latest.  Whether no write
 * after number `serial` has touched [addr, addr + len), by page (a write
 * beside the range in one of its pages counts): the runtime does not
 * upload again bytes the DRAM still holds. */
uint64_t sim_dram_serial(const sim *s);
int sim_dram_unwritten_since(const sim *s, uint64_t addr, uint64_t len, uint64_t serial);

/* Run a program's streams to completion.  A DRAM address off in a DMA
 * instruction (an offset in the program's segment) lies in the weights
 * region when off < p->weight_bytes and goes to device address
 * weights_base + off, else in the activation region and goes to
 * act_base + (off - p->weight_bytes).  Each region is checked against its
 * own size; one DMA piece (`run` sticks) may not straddle the boundary, and
 * DMA stores into the weights region fault (weights are read-only).
 * Returns 0, or -1 with the fault filled in (the program broke a rule or
 * deadlocked). */
int sim_run_regions(sim *s, const isa_program *p, uint64_t weights_base, uint64_t act_base, sim_stats *st,
                    sim_fault *fault);
/* The contiguous case: the segment at dram_base (weights_base = dram_base,
 * act_base = dram_base + p->weight_bytes). */
int sim_run(sim *s, const isa_program *p, uint64_t dram_base, sim_stats *st, sim_fault *fault);

/* A host fallback op: every core reached the `host` instruction of graph
 * node `node` (a bar), the device is idle; the callback does the op on
 * the DRAM of s (sim_dram_read, sim_dram_write), sets *cycles to the time
 * it takes (transfers and host compute) and returns 0, or -1 with a
 * one-line message in err: the run then faults.  The chip resumes
 * *cycles later.  p is the program running; at, the cycle it starts. */
typedef int (*sim_host_fn)(void *ctx, sim *s, const isa_program *p, int64_t node, double at, double *cycles,
                           char *err, size_t errlen);
/* The callback for `host` instructions of the next runs (NULL: a `host`
 * instruction faults: a program with host ops needs a runtime). */
void sim_set_host(sim *s, sim_host_fn fn, void *ctx);

/* What the engine derives from a program's instructions (each one's unit,
 * opcode, token, kernel and address operands, and the largest least
 * duration), kept by a caller that runs one program many times: the next
 * runs take *d when it was built for their program (by address) on this
 * sim, else build one and leave it in *d (freeing the one there).  A place
 * serves one program: the caller frees its decode with sim_decode_free
 * when the program goes (a program later allocated at the same address
 * would take it); NULL (the default): each run builds its own. */
typedef struct sim_decode sim_decode;
void sim_set_decode(sim *s, sim_decode **d);
void sim_decode_free(sim_decode *d);

/* Options for the next runs (default: values on, races detected, no trace). */
void sim_set_options(sim *s, const sim_options *opt);
const sim_options *sim_get_options(const sim *s);
/* The timeline of the last run as Chrome trace-event JSON (needs a trace
 * level other than OFF during the run). */
int sim_write_trace(sim *s, const isa_program *p, const char *path, char *err, size_t errlen);
/* The same timeline as the events of card `card` of a system, into f
 * between the caller's "traceEvents":[ and ]: a process per card (pid =
 * card), a track per core's unit, the host ops (collectives) on a track
 * of their own.  first: no comma before the first event. */
void sim_write_trace_card(sim *s, const isa_program *p, FILE *f, int card, int first);

/* Direct LX access, for tests. */
uint8_t *sim_lx(sim *s, int core);

#endif
