/* sweep.h: `spyre sweep` (sweep.c) as main.c's command table sees it, and
 * the tuning files that `spyre compile/run --tuning FILE` read. */
#ifndef SPYRE_SWEEP_H
#define SPYRE_SWEEP_H

#include <stddef.h>

#include "cc.h"
#include "sim.h"

extern const char sweep_usage[];
extern const char sweep_help[];
int cmd_sweep(int argc, char **argv);

/* Append to work_div[*n..max) a "KERNEL=SPEC" (malloc'd) for every line
 * `tune GRAPH CONFIG KERNEL SPEC` of the tuning file at path whose GRAPH is
 * the name of graph_path (its directory's last component), CONFIG is
 * cfg->name and KERNEL is a kernel of g compiled for cfg; other lines are
 * ignored.  -1 with err on an unreadable or malformed file. */
int sweep_tuning_load(const char *path, const char *graph_path, const cc_graph *g, const chip_config *cfg,
                      const char **work_div, int *n, int max, char *err, size_t errlen);

#endif
