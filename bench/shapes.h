/* shapes.h: the hand-shaped kernels the calibration benchmark
 * (bench_calibrate.c) compares with the figures measured on the chip, and
 * that tests/test_compiler.c checks: they are written directly on the
 * compiler's code-generation layer (compiler/back/codegen.h) with their own
 * tiling, so their cycles stay fixed while the compiler changes.  Programs
 * use the compiler's kernels' conventions (cc.h): tensors in device
 * layout, one stream per core, kernels named, graph text for the
 * reference; NULL with a one-line message in err when a shape, option or
 * budget does not fit. */
#ifndef SHAPES_H
#define SHAPES_H

#include "codegen.h"

/* C (M, N) = A (M, K) @ B (K, N): tensors "A", "B", "C", graph
 * "%C = aten.mm(%A, %B)\n", kernel "gemm"; opts->cores caps the cores
 * (lx_plan does not change a GEMM). */
isa_program *shapes_gemm(const chip_config *cfg, int64_t M, int64_t N, int64_t K, const cc_gen_opts *opts, char *err,
                         size_t errlen);

/* y (rows, cols) = softmax(x, dim=-1): tensors "x", "y", graph
 * "%y = aten._softmax(%x, -1, False)\n".  lx_plan=1: one fused kernel
 * "softmax"; lx_plan=0: as TorchInductor structures softmax without
 * on-chip tensors, two kernels separated by a barrier: "softmax_reduce"
 * reads x and writes the row maxima and the row sums of exp(x - max) to
 * the scratch tensors "rmax" and "rsum" ((rows, 1), one stick per row),
 * "softmax_normalize" reads x again with them and writes y. */
isa_program *shapes_softmax(const chip_config *cfg, int64_t rows, int64_t cols, const cc_gen_opts *opts, char *err,
                            size_t errlen);

/* DRAM streaming: every used core copies its own contiguous slice of
 * bytes_per_core bytes (a multiple of the stick) of tensor "in" into LX in
 * large double-buffered chunks; with write_back it also stores every
 * chunk to the same place of tensor "out", so reads and writes are
 * balanced.  No compute.  Graph "%out = aten.clone(%in)\n" with
 * write_back, none (NULL) without; kernel "stream"; lx_plan is not used. */
isa_program *shapes_stream(const chip_config *cfg, uint64_t bytes_per_core, int write_back, const cc_gen_opts *opts,
                           char *err, size_t errlen);

/* Add a 2-D tensor (rows, cols), sticked on cols, at the next aligned DRAM
 * offset of p; returns its DRAM offset. */
static inline uint64_t shapes_add_2d(isa_program *p, const chip_config *cfg, const char *name, isa_role role,
                                     int64_t rows, int64_t cols)
{
    uint64_t align = cfg->stick_bytes;
    if (cfg->dram_align > align && cfg->dram_align % align == 0)
        align = cfg->dram_align;
    uint64_t off = (p->dram_bytes + align - 1) / align * align;
    int64_t shape[2] = {rows, cols};
    isa_program_add_tensor(p, name, role, ISA_HT_F32, ISA_T_DL16, 2, shape, off);
    return off;
}

#endif
