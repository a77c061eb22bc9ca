/* chip: the chip configuration, every number the simulator, the compiler
 * and the runtime use, read from a `key = value` file (chip/configs/). */
#ifndef CHIP_H
#define CHIP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* K(key, type, min, max, unit, doc): every key of a configuration file, in
 * file order, with its valid range.  This one list makes the struct's
 * fields (named as the keys), the parser's key table, the range checks and
 * the documentation table (chip_config_doc, docs/chip.md).  Types: I int,
 * I32 uint32_t, I64 int64_t, U uint64_t, D double.  Timings without a unit
 * of their own are in core cycles at clock_ghz; the dram_ ones without _ns
 * in tCK (sim/dram.c, docs/dram.md).  Where each value comes from is
 * tagged in the .cfg files.  Constraints between keys are CONFIG_RULES
 * in chip/config.c. */
#define CHIP_CONFIG_KEYS(K)                                                                                 \
    K(cores, I, 1, 256, "", "AI cores")                                                                     \
    K(corelets, I, 2, 2, "", "corelets per core (PT + SFP pairs); the ISA has 2")                          \
    K(lx_bytes, U, 4096, 1ull << 30, "bytes", "LX scratchpad per core")                                     \
    K(lx_usable_bytes, U, 128, 1ull << 30, "bytes", "part of LX the compiler may plan")                     \
    K(stick_bytes, I32, 128, 128, "bytes", "DRAM <-> LX transfer unit")                                     \
    K(pt_rows, I, 1, 1024, "", "rows of a PT unit's systolic array")                                        \
    K(pt_cols, I, 1, 1024, "", "columns of a PT unit's systolic array")                                     \
    K(tokens, I, 1, 256, "", "sync tokens per core")                                                        \
    K(token_max, I64, 1, INT64_MAX, "", "largest token count before overflow")                              \
    K(queue_depth, I, 1, 4096, "instructions", "instructions queued per unit")                              \
    K(dram_bytes, U, 1 << 20, 1ull << 40, "bytes", "device DRAM")                                           \
    K(dram_page_bytes, U, 4096, 1ull << 30, "bytes", "page of the simulator's sparse DRAM store")          \
    K(dram_align, U, 128, 1ull << 30, "bytes", "runtime allocator alignment")                               \
    K(clock_ghz, D, 0.001, 100, "GHz", "core clock")                                                        \
    K(ring_bytes_per_cycle, I, 1, 1 << 20, "bytes/cycle", "ring bandwidth per direction")                   \
    K(ring_hop_cycles, D, 0, 1e6, "cycles", "latency per ring stop")                                        \
    K(ring_dram_ports, I, 1, 256, "", "memory controller stops on the ring")                                \
    K(seq_issue_cycles, D, 0, 1e6, "cycles", "sequencer: per instruction")                                  \
    K(sync_cycles, D, 0, 1e6, "cycles", "wait / sig on a unit")                                             \
    K(barrier_cycles, D, 0, 1e9, "cycles", "release of a barrier across cores")                             \
    K(pt_lanes, I, 1, 1024, "", "MACs per PE per cycle")                                                    \
    K(pt_issue_cycles, D, 0, 1e6, "cycles", "fixed cost per pt.mm")                                         \
    K(pt_fill_cycles, D, 0, 1e6, "cycles", "pipeline fill and drain per pt.mm")                             \
    K(pt_k_step_cycles, D, 0.01, 1e3, "cycles", "per K step of one pass (1 at the datasheet peak)")         \
    K(sfp_issue_cycles, D, 0, 1e6, "cycles", "fixed cost per SFP instruction")                              \
    K(sfp_simple_cycles, D, 0, 1e6, "cycles", "per stick: add, mul, max, mov, ...")                         \
    K(sfp_complex_cycles, D, 0, 1e6, "cycles", "per stick: exp, log, div, tanh, ...")                       \
    K(dma_issue_cycles, D, 0, 1e6, "cycles", "descriptor overhead per DMA")                                 \
    K(lx_bytes_per_cycle, D, 1, 1e6, "bytes/cycle", "LX port bandwidth for LX -> LX copies")                \
    K(dram_channels, I, 1, 64, "", "independent x16 LPDDR5 channels")                                       \
    K(dram_bank_groups, I, 1, 64, "", "bank groups per channel")                                            \
    K(dram_banks_per_group, I, 1, 64, "", "banks per bank group")                                           \
    K(dram_row_bytes, I32, 32, 1 << 20, "bytes", "row (page) of one bank")                                  \
    K(dram_interleave_bytes, I32, 32, 1u << 31, "bytes", "bytes on one channel before the next")            \
    K(dram_burst_bytes, I32, 1, 4096, "bytes", "bytes moved by one BL16 burst")                             \
    K(dram_tck_ns, D, 0.01, 100, "ns", "command clock period")                                              \
    K(dram_burst_tck, D, 0.25, 64, "tCK", "data bus occupancy per burst (fitted)")                          \
    K(dram_cl, D, 0, 4096, "tCK", "read CAS latency")                                                       \
    K(dram_cwl, D, 0, 4096, "tCK", "write CAS latency")                                                     \
    K(dram_rcd, D, 0, 4096, "tCK", "ACT to RD/WR")                                                          \
    K(dram_rp, D, 0, 4096, "tCK", "per-bank PRE to ACT")                                                    \
    K(dram_rp_all, D, 0, 4096, "tCK", "all-bank PRE to REF")                                                \
    K(dram_ras, D, 0, 4096, "tCK", "ACT to PRE")                                                            \
    K(dram_rc, D, 0, 4096, "tCK", "ACT to ACT, same bank")                                                  \
    K(dram_wr, D, 0, 4096, "tCK", "end of write data to PRE")                                               \
    K(dram_rtp, D, 0, 4096, "tCK", "RD to PRE")                                                             \
    K(dram_ccd, D, 0, 4096, "tCK", "RD to RD / WR to WR, same bank group")                                  \
    K(dram_rrd, D, 0, 4096, "tCK", "ACT to ACT, different banks")                                           \
    K(dram_wtr_s, D, 0, 4096, "tCK", "end of write data to RD, other bank group")                           \
    K(dram_wtr_l, D, 0, 4096, "tCK", "end of write data to RD, same bank group")                            \
    K(dram_faw, D, 0, 4096, "tCK", "window holding at most four ACTs")                                      \
    K(dram_rtw, D, 0, 4096, "tCK", "bus idle from read data to write data")                                 \
    K(dram_trefi_ns, D, 1, 1e9, "ns", "all-bank refresh interval")                                          \
    K(dram_trfc_ns, D, 0, 1e6, "ns", "all-bank refresh duration")                                           \
    K(dram_rw_switch_bytes, I32, 32, 1u << 31, "bytes", "per-channel batch between direction switches (fitted)") \
    K(dram_reorder_bursts, D, 0, 1e9, "bursts", "bursts served ahead of a segment waiting for its bank")    \
    K(dram_write_buffer_bytes, D, 0, 1 << 20, "bytes", "per-channel posted-write buffer, whole bursts; 0: not posted") \
    K(dram_write_high_pct, D, 0, 100, "%", "buffer fill that forces a drain ahead of reads")                \
    K(dram_write_low_pct, D, 0, 100, "%", "a forced drain stops at this fill")                              \
    K(dram_write_ack_ns, D, 0, 1e6, "ns", "arrival to acceptance into the write buffer")                   \
    K(pcie_bytes_per_s, D, 1e6, 1e13, "bytes/s", "host link bandwidth per direction (host fallback ops)")    \
    K(pcie_latency_ns, D, 0, 1e9, "ns", "host link: one transfer's fixed cost")                              \
    K(host_bytes_per_s, D, 1e6, 1e13, "bytes/s", "host: bytes a fallback op reads and writes per second")    \
    K(host_op_ns, D, 0, 1e9, "ns", "host: fixed cost of one fallback op (dispatch)")

#define CHIP_CTYPE_I int
#define CHIP_CTYPE_I32 uint32_t
#define CHIP_CTYPE_I64 int64_t
#define CHIP_CTYPE_U uint64_t
#define CHIP_CTYPE_D double

/* A chip configuration: its name, then one field per key. */
typedef struct {
    char name[64];
#define K(key, ty, lo, hi, unit, doc) CHIP_CTYPE_##ty key;
    CHIP_CONFIG_KEYS(K)
#undef K
} chip_config;

/* Load a configuration file and validate every value (its range, and the
 * constraints between keys).  Returns 0, or -1 with one line
 * "file:line: KEY = VALUE: reason" (or "file: message"). */
int chip_config_load(const char *path, chip_config *cfg, char *err, size_t errlen);
/* The same validation of a configuration built in memory: 0, or -1 with
 * "configuration NAME: KEY = VALUE: reason". */
int chip_config_check(const chip_config *cfg, char *err, size_t errlen);
/* One line of a `key = value` file (a chip or system configuration),
 * split in place: 0 for a blank or comment line, 1 with *key and *val set
 * (blanks trimmed, '#' starting a comment), -1 with "where: ..." in err. */
int chip_key_value(char *line, const char *where, char **key, char **val, char *err, size_t errlen);
/* Directory holding the shipped configurations ($SPYRE_CONFIG_DIR if set). */
const char *chip_config_dir(void);
/* Path of a shipped configuration by name ("spyre", "spyre-4core"), or of
 * a configuration file (a name with a '/' or ".cfg"), in a new string. */
char *chip_config_path(const char *name);
/* The markdown tables of every key (type, range, unit, meaning) and of the
 * constraints between keys, as docs/chip.md holds them; `spyre config
 * --keys` prints them. */
void chip_config_doc(FILE *out);

/* ---- A system of several cards (docs/multicard.md) ----
 * S(key, type, min, max, unit, doc): the keys of a system file
 * (chip/configs/NAME.sys), as CHIP_CONFIG_KEYS: one list makes the
 * struct, the parser and the table of keys.  Besides them the file names
 * the chip of every card: `chip = NAME` (a chip configuration by name or
 * path, relative to the system file's directory). */
#define CHIP_SYSTEM_KEYS(S)                                                                                  \
    S(cards, I, 1, 64, "", "Spyre cards, each a whole chip of the `chip` configuration")                    \
    S(link_bytes_per_s, D, 1e6, 1e13, "bytes/s", "one card's link to the others, per direction")          \
    S(link_latency_ns, D, 0, 1e9, "ns", "one card-to-card transfer's fixed cost")

typedef struct {
    char name[64];
    chip_config chip; /* every card's */
#define S(key, ty, lo, hi, unit, doc) CHIP_CTYPE_##ty key;
    CHIP_SYSTEM_KEYS(S)
#undef S
} chip_system;

/* Load a system file (and the chip configuration it names); 0, or -1
 * with one line "file:line: KEY = VALUE: reason" (or "file: message"). */
int chip_system_load(const char *path, chip_system *sys, char *err, size_t errlen);
/* Path of a shipped system by name ("spyre-x4") or of a file (a name with
 * a '/' or ".sys"), in a new string. */
char *chip_system_path(const char *name);
/* The markdown table of a system file's keys (docs/multicard.md). */
void chip_system_doc(FILE *out);

#endif
