/* dram.h: transaction-level LPDDR5 timing model of the device memory
 * (private to the simulator; docs/dram.md describes the model).
 *
 * The caller hands in whole DMA-sized accesses; the model splits each one
 * into per-channel row segments (the bytes of the access that fall in one
 * channel, bank and row) and schedules every segment against the state of
 * its channel (data bus, bank groups, turnaround, activation window,
 * refresh) and its bank (open row, earliest PRE/ACT/CAS).  Writes are
 * posted into a per-channel write buffer and drained to DRAM later (when
 * reads leave the bus idle, past a high watermark, or when the buffer is
 * full).  The cost of a call is O(channels + segments), amortised over the
 * writes it drains; nothing is simulated per burst.
 *
 * Every number comes from the dram_* keys of the chip configuration. */
#ifndef SIM_DRAM_H
#define SIM_DRAM_H

#include <stdint.h>

#include "sim.h"

/* Upper bound of dram_channels (sizes the per-channel statistics). */
#define SIM_DRAM_MAX_CHANNELS 64

typedef struct sim_dram sim_dram;

typedef struct {
    uint64_t reads, writes;               /* accesses */
    uint64_t bytes_read, bytes_written;   /* bytes asked for */
    uint64_t segments;                    /* row segments scheduled */
    uint64_t row_hits;                    /* segment found its row open */
    uint64_t row_misses;                  /* bank was precharged: ACT */
    uint64_t row_conflicts;               /* another row open: PRE + ACT */
    uint64_t refreshes;                   /* all-bank refreshes, all channels */
    uint64_t turnarounds;                 /* bus direction changes */
    double mix_ns;                        /* bus time charged for read/write interleaving */
    uint64_t write_stalls;                /* write segments that found their buffer full */
    double write_stall_ns;                /* time they waited for room */
    uint64_t write_drains;                /* high-watermark drains (writes ahead of reads) */
    double busy_ns[SIM_DRAM_MAX_CHANNELS];/* data bus occupied, per channel */
    double last_ns;                       /* latest completion or drained write data so far */
} sim_dram_stats;

/* Where an address lands under the interleaving map. */
typedef struct {
    int channel, bank_group, bank;
    uint64_t row;
    uint32_t column;   /* byte offset in the row */
} sim_dram_loc;

/* NULL when the dram_* keys of cfg describe a usable memory, otherwise a
 * message naming the offending key. */
const char *sim_dram_config_error(const chip_config *cfg);

/* A model in the reset state; NULL when the configuration is unusable
 * (see sim_dram_config_error) or on out of memory. */
sim_dram *sim_dram_new(const chip_config *cfg);
void sim_dram_free(sim_dram *d);
/* Idle, all banks precharged, time 0, statistics cleared; time 0 lies
 * refresh_phase_ns (in [0, tREFI)) into the refresh schedule. */
void sim_dram_reset(sim_dram *d, double refresh_phase_ns);

/* One access of `bytes` contiguous bytes at device address addr, arriving
 * at the controller at t_ns.  Arrival times should be non-decreasing; a
 * slightly earlier one is served no earlier than the state allows (the
 * model never goes back in time).  Returns the time in ns when the access
 * is done (t_ns for an empty access): for a read, when its last byte has
 * been transferred; for a write (with dram_write_buffer_bytes > 0), when
 * its last byte has been accepted into the write buffers, which is
 * t_ns + dram_write_ack_ns unless a buffer was full.  The write's data
 * reaches DRAM later; see sim_dram_drain_time. */
double sim_dram_access(sim_dram *d, double t_ns, uint64_t addr, uint64_t bytes, int is_write);

/* When every write so far has its data in DRAM, assuming no further
 * access arrives (0 before any write).  Buffered writes still waiting are
 * drained as soon as the reads already queued are done.  For the end of a
 * run: the run is over when this and its last completion have passed.
 * Does not change the model's state; O(channels x (banks + buffer
 * entries)). */
double sim_dram_drain_time(const sim_dram *d);

const sim_dram_stats *sim_dram_get_stats(const sim_dram *d);

/* The interleaving map and the segmentation, for tests and traces. */
sim_dram_loc sim_dram_map(const sim_dram *d, uint64_t addr);
uint64_t sim_dram_segments(const sim_dram *d, uint64_t addr, uint64_t bytes);

#endif
