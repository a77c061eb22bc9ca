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
    /* Timing (cycles at clock_ghz); sim/configs/spyre.cfg explains each. */
    double ring_hop_cycles;  /* latency per ring stop */
    int ring_dram_ports;     /* memory controller stops on the ring */
    double seq_issue_cycles; /* sequencer: per instruction */
    double sync_cycles;      /* wait / sig */
    double barrier_cycles;   /* release of a barrier */
    int pt_lanes;            /* MACs per PE per cycle */
    double pt_issue_cycles;  /* per pt.mm */
    double pt_fill_cycles;   /* pipeline fill and drain per pt.mm */
    double pt_k_step_cycles; /* cycles per K step of one pass (1 at the datasheet peak) */
    double sfp_issue_cycles; /* per SFP instruction */
    double sfp_simple_cycles;  /* per stick: add, mul, max, mov, ... */
    double sfp_complex_cycles; /* per stick: exp, log, div, tanh, ... */
    double dma_issue_cycles; /* descriptor overhead per DMA */
    double lx_bytes_per_cycle; /* LX port bandwidth for LX->LX copies */
    /* LPDDR5 timing model (sim/dram.c, docs/dram.md); timings without _ns are in tCK */
    int dram_channels;              /* independent x16 channels */
    int dram_bank_groups;           /* bank groups per channel */
    int dram_banks_per_group;       /* banks per bank group */
    uint32_t dram_row_bytes;        /* row (page) of one bank, bytes */
    uint32_t dram_interleave_bytes; /* bytes on one channel before the next */
    uint32_t dram_burst_bytes;      /* bytes moved by one BL16 burst */
    double dram_tck_ns;             /* command clock period */
    double dram_burst_tck;          /* data bus occupancy per burst, tCK (fitted) */
    double dram_cl;                 /* read CAS latency */
    double dram_cwl;                /* write CAS latency */
    double dram_rcd;                /* ACT to RD/WR */
    double dram_rp;                 /* per-bank PRE to ACT */
    double dram_rp_all;             /* all-bank PRE to REF */
    double dram_ras;                /* ACT to PRE */
    double dram_rc;                 /* ACT to ACT, same bank */
    double dram_wr;                 /* end of write data to PRE */
    double dram_rtp;                /* RD to PRE */
    double dram_ccd;                /* RD to RD / WR to WR, same bank group */
    double dram_rrd;                /* ACT to ACT, different banks */
    double dram_wtr_s;              /* end of write data to RD, other bank group */
    double dram_wtr_l;              /* end of write data to RD, same bank group */
    double dram_faw;                /* window holding at most four ACTs */
    double dram_rtw;                /* bus idle from read data to write data */
    double dram_trefi_ns;           /* all-bank refresh interval */
    double dram_trfc_ns;            /* all-bank refresh duration */
    uint32_t dram_rw_switch_bytes;  /* per-channel batch between direction switches (fitted) */
    double dram_reorder_bursts;     /* bursts served ahead of a segment waiting for its bank */
    double dram_write_buffer_bytes; /* per-channel posted-write buffer, whole bursts; 0: not posted */
    double dram_write_high_pct;     /* buffer fill (%) that forces a drain ahead of reads */
    double dram_write_low_pct;      /* a forced drain stops at this fill (%) */
    double dram_write_ack_ns;       /* arrival to acceptance into the write buffer */
} sim_config;

/* Load a configuration file and validate every value (its range, and the
 * constraints between keys).  Returns 0, or -1 with one line
 * "file:line: KEY = VALUE: reason" (or "file: message"). */
int sim_config_load(const char *path, sim_config *cfg, char *err, size_t errlen);
/* The same validation of a configuration built in memory: 0, or -1 with
 * "configuration NAME: KEY = VALUE: reason". */
int sim_config_check(const sim_config *cfg, char *err, size_t errlen);
/* Directory holding the configurations shipped with the simulator. */
const char *sim_config_dir(void);
/* Path of a shipped configuration by name ("spyre", "spyre-4core"), or of
 * a configuration file (a name with a '/' or ".cfg"), in a new string. */
char *sim_config_path(const char *name);

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
    uint64_t ring_bytes;       /* bytes carried over ring links (DMA and core to core) */
    uint64_t lx_peak[SIM_MAX_CORES];            /* highest LX byte touched + 1, per core */
    double unit_busy[SIM_MAX_CORES][ISA_NUNITS];  /* cycles executing */
    double unit_stall[SIM_MAX_CORES][ISA_NUNITS]; /* cycles blocked on a token */
    int nkernels;              /* entries of kernels[] in use */
    sim_kernel_stats kernels[SIM_MAX_KERNELS];  /* per kernel name, in program order */
} sim_stats;

/* The entry of stats for kernel `name`, or NULL. */
const sim_kernel_stats *sim_stats_kernel(const sim_stats *st, const char *name);

/* Figures derived from stats and the configuration. */
double sim_stats_time_us(const sim_stats *st, const sim_config *cfg);
double sim_stats_mac_utilization(const sim_stats *st, const sim_config *cfg);
/* Write the statistics as one JSON object (keys in docs/timing.md). */
int sim_write_stats_json(const sim_stats *st, const sim_config *cfg, const char *path, char *err, size_t errlen);

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
} sim_options;

typedef struct sim sim;

/* A chip with zeroed LX and empty DRAM.  NULL on out of memory. */
sim *sim_create(const sim_config *cfg);
void sim_destroy(sim *s);
const sim_config *sim_get_config(const sim *s);

/* Host access to device DRAM (sparse: untouched pages read as zero). */
int sim_dram_write(sim *s, uint64_t addr, const void *src, size_t len);
int sim_dram_read(sim *s, uint64_t addr, void *dst, size_t len);

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

/* Options for the next runs (default: values on, races detected, no trace). */
void sim_set_options(sim *s, const sim_options *opt);
/* The timeline of the last run as Chrome trace-event JSON (needs a trace
 * level other than OFF during the run). */
int sim_write_trace(sim *s, const isa_program *p, const char *path, char *err, size_t errlen);

/* Direct LX access, for tests. */
uint8_t *sim_lx(sim *s, int core);

#endif
