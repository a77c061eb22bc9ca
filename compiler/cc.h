/* cc: the Spyre compiler.  Turns a computation into an isa_program: the
 * tensors it reads and writes in device DRAM and one instruction stream
 * per core of the target chip.
 *
 * For now the compiler offers hand-shaped kernels (the analogue of
 * Inductor's templates); the graph front end, fusion and LX planning will
 * be built on the same code-generation layer (compiler/codegen.h).
 *
 * Every generator returns a complete program for cfg: tensors laid out in
 * device layout (last dimension sticked, DL16 on the device, fp32 on the
 * host), config name/ncores/lx_bytes/stick_bytes copied from cfg, one
 * stream per core (cores without work only halt, or only `bar` and halt
 * in a program of several kernels), the kernels of every working core
 * named (isa_program_add_kernel: together they cover every instruction
 * but the final halt), and graph text naming the ATen operation, which
 * the runtime uses to compute a reference.  On a shape, option or budget
 * it cannot handle it returns NULL with a one-line message in err. */
#ifndef CC_H
#define CC_H

#include <stddef.h>
#include <stdint.h>

#include "isa.h"
#include "sim.h"

/* Options of the generators, for calibration and what-if studies.  A NULL
 * options pointer means CC_GEN_OPTS_DEFAULT. */
typedef struct {
    int cores;   /* use at most this many cores; 0 = every core of the chip */
    int lx_plan; /* 1: intermediates stay in LX (fused kernels);
                    0: every intermediate tensor goes through DRAM */
} cc_gen_opts;

#define CC_GEN_OPTS_DEFAULT ((cc_gen_opts){0, 1})

/* C (M, N) = A (M, K) @ B (K, N).  Tensors "A", "B" (inputs), "C" (output);
 * graph "%C = aten.mm(%A, %B)\n"; kernel "gemm".  A GEMM has no
 * intermediate tensors (its partial sums are accumulator state), so
 * lx_plan does not change it. */
isa_program *cc_gen_gemm(const sim_config *cfg, int64_t M, int64_t N, int64_t K, char *err, size_t errlen);
isa_program *cc_gen_gemm_opts(const sim_config *cfg, int64_t M, int64_t N, int64_t K, const cc_gen_opts *opts,
                              char *err, size_t errlen);

/* y (rows, cols) = softmax(x, dim=-1).  Tensors "x" (input), "y" (output);
 * graph "%y = aten._softmax(%x, -1, False)\n".  With lx_plan=1 one fused
 * kernel "softmax"; with lx_plan=0 two kernels separated by a barrier, as
 * TorchInductor structures softmax without on-chip tensors: the reduction
 * "softmax_reduce" reads x and writes the row maxima to the scratch tensor
 * "rmax" and the row sums of exp(x - rmax) to the scratch tensor "rsum"
 * (both (rows, 1), one stick per row), and the pointwise
 * "softmax_normalize" reads x again with rmax and rsum and writes
 * y = exp(x - rmax) / rsum. */
isa_program *cc_gen_softmax(const sim_config *cfg, int64_t rows, int64_t cols, char *err, size_t errlen);
isa_program *cc_gen_softmax_opts(const sim_config *cfg, int64_t rows, int64_t cols, const cc_gen_opts *opts,
                                 char *err, size_t errlen);

/* DRAM streaming microbenchmark: every used core copies its own contiguous
 * slice of bytes_per_core bytes (a multiple of the stick) of tensor "in"
 * (input) into LX in large double-buffered chunks; with write_back it also
 * stores every chunk to the same place of tensor "out" (output), so reads
 * and writes are balanced.  No compute.  Graph "%out = aten.clone(%in)\n"
 * with write_back, none (NULL) without; kernel "stream"; lx_plan is not
 * used. */
isa_program *cc_gen_stream(const sim_config *cfg, uint64_t bytes_per_core, int write_back, const cc_gen_opts *opts,
                           char *err, size_t errlen);

#endif
