/* benchutil: helpers shared by the benchmark programs. */
#ifndef BENCHUTIL_H
#define BENCHUTIL_H

/* Monotonic wall time in seconds. */
double bench_now(void);
/* dir with its last path component removed, in place. */
void bench_parent(char *dir);
/* 1 if path exists. */
int bench_exists(const char *path);

#include <stddef.h>

#include "cc.h"
#include "rt.h"

/* The source tree (two levels above the shipped configurations) and the
 * build directory (two levels above this program).  0, or -1. */
int bench_dirs(char *src, size_t srclen, char *build, size_t buildlen);
/* Unless DIR/graph.txt exists, export SRC/traces/models/MODEL ("FILE.py:FUNC")
 * into DIR with tools/export.py and the extra flags.  0, or -1 (message on
 * stderr, naming who). */
int bench_export(const char *who, const char *src, const char *model, const char *dir, const char *flags);
/* Compile g for cfg, front and back half; the program, or NULL with err.
 * *seconds gets the compile time. */
isa_program *bench_compile(const gr_graph *g, const chip_config *cfg, double *seconds, char *err, size_t errlen);
/* The device of the shipped "spyre" configuration; on failure a message
 * naming who on stderr and exit status 2. */
rt_device *bench_open(const char *who);
/* Simulate dev's launches with values and race detection or not, no trace. */
void bench_sim_options(rt_device *dev, int values, int races);
/* The roofline's two rates on cfg: peak MACs per second (cores x corelets
 * x pt_rows x pt_cols x pt_lanes x clock) and DRAM bytes per second
 * (dram_channels x dram_burst_bytes / (dram_burst_tck x dram_tck_ns)). */
double bench_peak_macs_per_s(const chip_config *cfg);
double bench_dram_bytes_per_s(const chip_config *cfg);

#endif
