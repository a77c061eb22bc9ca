/* ktir: KTIR programs (torch-spyre's ktdp MLIR dialect, RFC 0682) compiled
 * per core to our ISA and run on the simulator with values and timing.
 *
 * A KTIR function runs SPMD over its `grid`: every core runs the body with
 * its own ktdp.get_compute_tile_id.  The compiler evaluates each core's
 * index arithmetic at compile time (grid position, --arg values, loop
 * counters) and emits that core's stream: ktdp.load/store as DMA between
 * the HBM tensors the memory views name and LX, elementwise arith/math and
 * linalg ops and reductions on the SFP, scf.for unrolled.  HBM is flat f16
 * memory addressed in elements, as in ktir-cpu: each pointer argument
 * without an --arg value is one 1-D program tensor named after it (offsets
 * added to it stay in it), and integer addresses share one tensor "hbm";
 * a tensor is an input when only loaded, an output when stored.
 */
#ifndef KT_KTIR_H
#define KT_KTIR_H

#include <stddef.h>
#include <stdint.h>
#include "chip.h"
#include "isa.h"

/* Exit codes of the KTIR path: a program we refuse (syntax, unsupported
 * construct, bad argument) and one that breaks a chip rule (LX overflow,
 * out-of-bounds access tile, a fault of the run). */
#define KT_EXIT_REFUSED 2
#define KT_EXIT_CHIP 3

typedef struct {
    const char *name;  /* function argument, without '%' */
    double value;
} kt_arg;

/* Compile the first func.func of FILE for chip cfg with scalar arguments
 * args.  NULL with a one-line message ("FILE:LINE:COL: ...") in err and the
 * exit code in *code (KT_EXIT_REFUSED or KT_EXIT_CHIP). */
/* ktir-cpu's roofline estimate of the same program (its docs/latency.md,
 * v1 model at its defaults): per core, HBM bytes / (1000 / cores) +
 * elementwise elements / 64 (x4 for math.* ops) + matmul flops / (2*64^3)
 * + ring bytes / 4000, nothing overlapped; the kernel is its slowest core.
 * In its cycles of 1 ns. */
#define KT_MAX_INOUT 16
typedef struct {
    double roofline_cycles;
    int ninout;                         /* tensors the program both loads and stores: */
    char inout[KT_MAX_INOUT][ISA_NAME_MAX]; /* outputs that need initial data */
    char note[256];                     /* one line for stderr, or empty: a store dropped as overwritten */
} kt_report;

isa_program *kt_compile_file(const char *path, const kt_arg *args, int nargs, const chip_config *cfg, char *err,
                             size_t errlen, int *code, kt_report *rep);

/* `spyre run FILE.mlir ...`: argv[0] is "run".  Returns the exit code. */
int kt_cli_run(int argc, char **argv);

/* Does the path name a KTIR program (.mlir or .ktir)? */
int kt_is_ktir_path(const char *path);

#endif
