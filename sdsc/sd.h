/* sd: torch-spyre's SuperDSC (SDSC) kernel bundles on the simulated chip.
 *
 * A kernel directory (torch-spyre's cache, or spyre-cli's examples) holds
 * one sdsc_N.json per kernel and, usually, bundle.mlir: the program that
 * executes them, in its order, with its arguments (without one the kernels
 * run in the order of N).  sd_load reads every sdsc_N.json and
 * bundle.mlir, checks each file against RFC 0552's rules and the chip (one
 * line per violation, "FILE: JSON.path: rule") and bundle.mlir against the
 * JSON ("bundle.mlir:LINE: rule"), and sd_build translates the
 * kernels into one program of per-core instruction streams that keeps what
 * the SDSC fixes: the work slices of each core, the data-stage sizes, the
 * stick layouts (a DRAM tensor lies in its SDSC's layout), which tensors
 * live in LX (at the LX addresses given) and which in DRAM, and the unit of
 * every compute op.  The program's graph
 * text runs the ATen op named in each kernel's debug_handle_, so
 * rt_check compares the outputs with the reference executor
 * (docs/torch-spyre.md). */
#ifndef SD_H
#define SD_H

#include <stddef.h>
#include <stdint.h>

#include "chip.h"
#include "isa.h"

typedef struct sd_bundle sd_bundle;

/* Does path name a directory holding at least one sdsc_N.json? */
int sd_is_kernel_dir(const char *path);

/* Read and check the kernel directory dir for chip cfg.  Returns the
 * bundle (NULL only when out of memory or dir cannot be listed: message in
 * err); the check's lines are sd_problems(b). */
sd_bundle *sd_load(const char *dir, const chip_config *cfg, char *err, size_t errlen);
void sd_free(sd_bundle *b);
/* The violations found, one "FILE: JSON.path: rule" per line ("" when
 * none), and their count. */
const char *sd_problems(const sd_bundle *b);
int sd_nproblems(const sd_bundle *b);
/* Kernels read, in run order. */
int sd_nkernels(const sd_bundle *b);

/* A kernel argument as spyre launch gives it: "512x1024@fp16". */
typedef struct {
    int rank;
    int64_t shape[ISA_MAX_RANK];
    isa_host_dtype dtype;
} sd_spec;

/* Parse a spec; -1 with a message naming it. */
int sd_spec_parse(const char *text, sd_spec *out, char *err, size_t errlen);
/* "512x1024@fp16" */
void sd_spec_format(const sd_spec *s, char *buf, size_t len);

/* The kernel arguments (DRAM tensors the bundle reads or writes, in
 * argument order: the order of their symbols), inputs first. */
int sd_ninputs(const sd_bundle *b);
int sd_noutputs(const sd_bundle *b);
/* The spec the SDSC implies for argument i (inputs, then outputs). */
void sd_arg_spec(const sd_bundle *b, int i, sd_spec *out);
/* The program's tensor name of argument i ("arg0", ...). */
const char *sd_arg_name(const sd_bundle *b, int i);

/* The program for a bundle without problems.  specs (n of them, inputs
 * then outputs, as -i and -o give them; n == 0: the SDSC's own) must match
 * the arguments' shapes (a dtype may differ: fp16, bf16 and fp32 host data
 * are converted at the boundary).  NULL with a one-line message when the
 * specs do not fit or a kernel uses what the translation does not support
 * (docs/torch-spyre.md lists it). */
isa_program *sd_build(const sd_bundle *b, const chip_config *cfg, const sd_spec *specs, int n, char *err,
                      size_t errlen);

#endif
