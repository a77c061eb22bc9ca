/* sdsc_cmd.h: `spyre run DIR` of a torch-spyre kernel directory and
 * `spyre check DIR` (sdsc_cmd.c), and the run report they share with
 * main.c's `spyre run`. */
#ifndef SPYRE_SDSC_CMD_H
#define SPYRE_SDSC_CMD_H

#include "chip.h"
#include "sim.h"

/* Does `spyre run`'s command line name a kernel directory (sdsc_N.json)? */
int sdsc_names_kernel_dir(int argc, char **argv);
/* `spyre run DIR ...` and `spyre check DIR ...`: exit statuses. */
int sdsc_run(int argc, char **argv);
int sdsc_check(int argc, char **argv);
extern const char sdsc_check_usage[], sdsc_check_help[];

/* main.c: the statistics and the five longest kernels of a run. */
void print_stats(const sim_stats *st, const chip_config *cfg);
void print_top_kernels(const sim_stats *st, const chip_config *cfg);

#endif
