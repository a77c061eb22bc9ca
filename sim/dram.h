/* dram.h: transaction-level LPDDR5 timing model of the device memory
 * (private to the simulator; docs/dram.md describes the model).
 *
 * The caller hands in whole DMA-sized accesses; the model splits each one
 * into per-channel row segments (the bytes of the access that fall in one
 * channel, bank and row) and schedules every segment against the state of
 * its channel (data bus, bank groups, turnaround, activation window,
 * refresh) and its bank (open row, earliest PRE/ACT/CAS).  The cost of a
 * call is O(channels + segments); nothing is simulated per burst.
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
    double busy_ns[SIM_DRAM_MAX_CHANNELS];/* data bus occupied, per channel */
    double last_ns;                       /* latest completion so far */
} sim_dram_stats;

/* Where an address lands under the interleaving map. */
typedef struct {
    int channel, bank_group, bank;
    uint64_t row;
    uint32_t column;   /* byte offset in the row */
} sim_dram_loc;

/* NULL when the dram_* keys of cfg describe a usable memory, otherwise a
 * message naming the offending key. */
const char *sim_dram_config_error(const sim_config *cfg);

/* A model in the reset state; NULL when the configuration is unusable
 * (see sim_dram_config_error) or on out of memory. */
sim_dram *sim_dram_new(const sim_config *cfg);
void sim_dram_free(sim_dram *d);
/* Idle, all banks precharged, time 0, statistics cleared. */
void sim_dram_reset(sim_dram *d);

/* One access of `bytes` contiguous bytes at device address addr, arriving
 * at the controller at t_ns.  Arrival times should be non-decreasing; a
 * slightly earlier one is served no earlier than the state allows (the
 * model never goes back in time).  Returns the time in ns when the last
 * byte has been transferred (t_ns for an empty access). */
double sim_dram_access(sim_dram *d, double t_ns, uint64_t addr, uint64_t bytes, int is_write);

const sim_dram_stats *sim_dram_get_stats(const sim_dram *d);

/* The interleaving map and the segmentation, for tests and traces. */
sim_dram_loc sim_dram_map(const sim_dram *d, uint64_t addr);
uint64_t sim_dram_segments(const sim_dram *d, uint64_t addr, uint64_t bytes);

#endif
