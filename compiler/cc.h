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
 * stream per core (cores without work only halt), and graph text naming
 * the ATen operation, which the runtime uses to compute a reference.  On a
 * shape or budget it cannot handle it returns NULL with a one-line message
 * in err. */
#ifndef CC_H
#define CC_H

#include <stddef.h>
#include <stdint.h>

#include "isa.h"
#include "sim.h"

/* C (M, N) = A (M, K) @ B (K, N).  Tensors "A", "B" (inputs), "C" (output);
 * graph "%C = aten.mm(%A, %B)\n". */
isa_program *cc_gen_gemm(const sim_config *cfg, int64_t M, int64_t N, int64_t K, char *err, size_t errlen);

/* y (rows, cols) = softmax(x, dim=-1).  Tensors "x" (input), "y" (output);
 * graph "%y = aten._softmax(%x, -1, False)\n". */
isa_program *cc_gen_softmax(const sim_config *cfg, int64_t rows, int64_t cols, char *err, size_t errlen);

#endif
