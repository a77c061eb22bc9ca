/* cc: the Spyre compiler.  Turns a computation into an isa_program: the
 * tensors it reads and writes in device DRAM and one instruction stream
 * per core of the target chip.
 *
 * There is one compiler: an ATen graph (graph.h) goes through the front
 * half (decomposition, lowering, fusion, scheduling) and, with a target,
 * the back half (layout, work division, code generation on the layer of
 * compiler/back/codegen.h, reroll): cc_compile below.  The named kernels of
 * `spyre gen` (cc_gen_gemm, cc_gen_softmax) write the graph of their ATen
 * op and compile it the same way.  Hand-shaped kernels live only in the
 * benchmarks (bench/shapes.h), for the calibration against the chip.
 *
 * A generated program is complete for cfg: tensors laid out in device
 * layout (last dimension sticked, DL16 on the device, fp32 on the host),
 * config name/ncores/lx_bytes/stick_bytes copied from cfg, one stream per
 * core (cores without work only halt, or only `bar` or `fence` and halt
 * in a program of several kernels), the kernels of every working core
 * named (isa_program_add_kernel: together they cover every instruction
 * but the final halt and a bar or fence between two kernels), and graph
 * text naming the ATen operation, which the runtime uses to compute a
 * reference.  On a shape, option or budget it cannot handle it returns
 * NULL with a one-line message in err. */
#ifndef CC_H
#define CC_H

#include <stddef.h>
#include <stdint.h>

#include "isa.h"
#include "chip.h"

/* Options of the generators, for what-if studies.  A NULL options pointer
 * means CC_GEN_OPTS_DEFAULT. */
typedef struct {
    int cores;   /* use exactly this many cores (a work_div override of
                    every kernel); 0 = the compiler's choice */
    int lx_plan; /* 1: the compiler's LX planning (fused kernels keep
                    their intermediates in LX); 0: no_lx_plan, every
                    intermediate tensor goes through DRAM */
} cc_gen_opts;

#define CC_GEN_OPTS_DEFAULT ((cc_gen_opts){0, 1})

/* C (M, N) = A (M, K) @ B (K, N).  Tensors "A", "B" (inputs), "C" (output);
 * graph "%C = aten.mm(%A, %B)\n"; kernel "gemm".  A GEMM has no
 * intermediate tensors (its partial sums are accumulator state), so
 * lx_plan does not change it.  With cores, the core grid is the squarest
 * of exactly that many cores the output allows. */
isa_program *cc_gen_gemm(const chip_config *cfg, int64_t M, int64_t N, int64_t K, char *err, size_t errlen);
isa_program *cc_gen_gemm_opts(const chip_config *cfg, int64_t M, int64_t N, int64_t K, const cc_gen_opts *opts,
                              char *err, size_t errlen);

/* y (rows, cols) = softmax(x, dim=-1).  Tensors "x" (input), "y" (output);
 * graph "%y = aten._softmax(%x, -1, False)\n".  With lx_plan=1 one fused
 * kernel "softmax"; with lx_plan=0 the kernels of the compiler's
 * no_lx_plan (each op of the decomposition its own kernel, named as the
 * compiler names them, `bar` or `fence` between them; the intermediates
 * y.amax, y.exp, y.sum are scratch tensors in DRAM). */
isa_program *cc_gen_softmax(const chip_config *cfg, int64_t rows, int64_t cols, char *err, size_t errlen);
isa_program *cc_gen_softmax_opts(const chip_config *cfg, int64_t rows, int64_t cols, const cc_gen_opts *opts,
                                 char *err, size_t errlen);

/* ==== The graph compiler's front half (compile.c, docs/compiler.md) ====
 * An ATen graph (graph.h) in; out a scheduled list of fused kernels:
 * decomposition into core ops, Inductor-style lowering to loop-level IR
 * (pointwise, reduction and matmul-template nodes over affine indices),
 * dependencies, dead-code elimination, fusion, ordering, last uses. */
#include "graph.h"

typedef struct {
    const char *dump_after; /* a pass of cc_pass_names(): print the IR after it (NULL: none) */
    FILE *dump;             /* where the dump goes (NULL: stderr) */
    /* Not NULL: each pass, as it ends, prints its host time there, one
     * line "pass NAME MS ms"; every attempt's passes print (fuse_siblings'
     * estimate plans the graph fused and apart, the host fallback compiles
     * again: docs/compiler.md, "Timing the passes"). */
    FILE *time_passes;
    int max_reads;          /* realize a value read by more consumers than this (0: 1) */
    int max_body;           /* realize an expression of more nodes than this (0: 64) */
    const chip_config *target; /* not NULL: also run the back half for this chip
                                 (cc_backend_pass_names); cc_result_program has the program */
    /* Work-division overrides for the workdiv pass, each "KERNEL=SPEC"
     * with KERNEL a kernel's name as the report prints it and SPEC
     * "GMxGN" (a matmul's core grid: M parts x N parts) or "CORES" (a
     * row kernel's core count).  The graph's `hint work_div KERNEL=SPEC`
     * lines come first, these after them: for one kernel the last wins.
     * An unknown kernel or a split the kernel or chip cannot take is an
     * error naming the kernel.  Used only with a target. */
    const char *const *work_div;
    int nwork_div;
    /* 1: no LX planning: the fusion passes keep nothing on chip, so every
     * intermediate tensor goes to DRAM between single-node kernels (for
     * comparison with the default, where fused kernels keep their
     * intermediates in LX). */
    int no_lx_plan;
    /* 1: no tensor is kept in LX from one kernel to a later one (the
     * fusions still keep their intermediates); no_lx_plan implies it. */
    int no_lx_keep;
    /* 1: the reroll pass leaves the streams as code generation spelled
     * them out, every chunk of every kernel, instead of rolling them into
     * counted loops (for comparison). */
    int no_reroll;
    /* 1: no host fallback: an op the compiler cannot lower (or the back
     * half cannot compile) is an error, as it was before the fallback;
     * 0: such an op becomes a host op, which the runtime runs on the host
     * between device kernels (docs/compiler.md, "Host ops"). */
    int no_fallback;
    /* 1: a probe build for a stepwise check (docs/validation.md): every
     * graph value the LX plan keeps for later kernels is also stored to
     * its DRAM tensor; the plan, the kernels and their arithmetic are the
     * same, so the outputs are the same bits as the default build's. */
    int write_values;
    /* Products that share their A operand (docs/compiler.md, "Sibling
     * products"): CC_SIBLINGS_ESTIMATE (0) fuses them where the back half
     * estimates the program faster, CC_SIBLINGS_NEVER keeps them apart,
     * CC_SIBLINGS_ALWAYS fuses them wherever it can (for comparison). */
    int siblings;
    /* Which cores a kernel runs on (docs/compiler.md, "Placement"):
     * CC_PLACE_FREE (0) moves a kernel that depends on none since the last
     * bar to the cores the estimates expect free first (reading kept
     * tensors from DRAM, adding bars that let the next kernel move);
     * CC_PLACE_INDEPENDENT only one that depends on no earlier kernel;
     * CC_PLACE_NONE runs every kernel from core 0. */
    int placement;
    /* Host threads codegen emits a kernel's cores on (docs/compiler.md,
     * "Two threads"): 1 one, 2 (or more) two; 0 as SPYRE_THREADS (the
     * simulator's override) says, else two when the host has two
     * processors, while the second is free (no other task runnable: each
     * kernel that would split looks).  The program is the same either way. */
    int threads;
    /* The instructions a kernel's cores after its first must emit (as
     * the first did, times their number) for codegen to split them
     * between two threads: fewer cost more in the worker's wake-up and
     * the joins than they save.  0: the default, 20,000 (docs/compiler.md, "Two
     * threads"); 1 splits every kernel of two cores or more (the tests). */
    long par_min;
    /* Tests: a planned attempt set aside while the other's codegen runs
     * (compile.c, shelve) is planned again even when it can no longer be
     * kept, as it is after a failed codegen, which no test graph meets:
     * the program must be the same. */
    int replan;
} cc_compile_opts;
enum { CC_SIBLINGS_ESTIMATE, CC_SIBLINGS_NEVER, CC_SIBLINGS_ALWAYS };
enum { CC_PLACE_FREE, CC_PLACE_INDEPENDENT, CC_PLACE_NONE };

typedef struct cc_result cc_result;
typedef enum { CC_KERNEL_POINTWISE, CC_KERNEL_REDUCTION, CC_KERNEL_MATMUL, CC_KERNEL_HOST } cc_kernel_kind;

/* The passes, in the order cc_compile runs them; NULL-terminated. */
const char *const *cc_pass_names(void);
/* Compile g (opts may be NULL).  On a user error (an op the compiler does
 * not lower, a declared type that disagrees with the op, an unknown pass
 * in dump_after) returns NULL with "FILE:LINE: message" in err. */
cc_result *cc_compile(const gr_graph *g, const cc_compile_opts *opts, char *err, size_t errlen);
/* The kernels in order: kind, iteration space, the ATen ops fused into
 * each (with graph lines), buffers read and written (internal ones
 * marked), and totals.  When the back half ran (a target), then a
 * section per kernel for the chip: core split, tiles, tensors kept in LX
 * and those through DRAM, restickified operands, DRAM bytes moved, and
 * totals (docs/compiler.md, "The report"). */
void cc_compile_report(const cc_result *r, FILE *f);
void cc_result_free(cc_result *r);

/* Kernels in execution order, i in [0, cc_result_nkernels). */
int cc_result_nkernels(const cc_result *r);
cc_kernel_kind cc_result_kernel_kind(const cc_result *r, int i);
const char *cc_result_kernel_name(const cc_result *r, int i);
int cc_result_kernel_nnodes(const cc_result *r, int i);
/* The ATen ops fused into kernel i, ordered by line: op j's name, and its
 * graph line in *line (if not NULL). */
int cc_result_kernel_nops(const cc_result *r, int i);
const char *cc_result_kernel_op(const cc_result *r, int i, int j, int *line);
/* The back half's cost-model estimate, in cycles, of the program's kernel
 * `name` as the simulator names it (a kernel, or a ring exchange
 * NAME.xchg): what the report's `estimate:` line prints; -1 without a
 * target or for an unknown name (docs/compiler.md, "The report"). */
double cc_result_estimate(const cc_result *r, const char *name);
/* 1: the buffer named `name` never leaves its kernel; 0: it goes through
 * memory; -1: no such buffer (or removed as dead). */
int cc_result_buffer_internal(const cc_result *r, const char *name);
/* Estimated bytes moved through memory (every non-internal buffer). */
void cc_result_traffic(const cc_result *r, int64_t *bytes_read, int64_t *bytes_written);
/* The decomposition table: one line per composite op and what it becomes. */
void cc_decompositions_print(FILE *f);
/* atan(r) on [0, 1] as the compiler computes it (atan, asin, acos, atan2):
 * r (c0 + c1 r^2 + ... + c4 r^8), Horner in r^2; within CC_ATAN_ERR of
 * atan in exact arithmetic (a fit measured at 10^6 points: 1.16e-5).  The
 * reference executor's bounds add that error. */
#define CC_ATAN_NCOEF 5
#define CC_ATAN_ERR 2e-5
extern const double cc_atan_coef[CC_ATAN_NCOEF];
/* Point j of linspace(a, b, n) as PyTorch 1.13's CPU kernel computes it (the first half counted up from a,
 * the second down from b), of logspace (is_log: base to that power, any base), truncated for an integer result.
 * The compiler bakes these values; the reference executor computes them (dec_space.c). */
double cc_space_at(double a, double b, int is_log, double base, int64_t n, int64_t j, int is_float);
/* The pairs (rows[k], cols[k]) of tril_indices(row, col, offset) (upper: triu_indices), row-major, into
 * rows and cols unless NULL; returns their count. */
int64_t cc_tri_indices(int64_t row, int64_t col, int64_t offset, int upper, int64_t *rows, int64_t *cols);
/* Whether value v of g, an index over a dim of size positions (wrap: a
 * negative one counts from the end), is a node reading inputs or
 * parameters (a view of one among them) and not proven within the dim by
 * the compiler's interval analysis (dec_range.c): the runtime then checks
 * its values at each launch. */
int cc_index_unproven(const gr_graph *g, int v, int64_t size, int wrap);
/* ==== end of the graph compiler's front half ==== */

/* ==== Tensor parallelism (tp.c, docs/multicard.md) ====
 * cc_tp_split finds the Megatron split of a transformer graph for ncards
 * cards: each linear whose input can be cut along its reduced dimension
 * back to other linears through per-head attention and pointwise ops is
 * row-parallel (its weight cut by columns, an allreduce after it), those
 * linears column-parallel (weights cut by rows: attention heads, MLP
 * up/gate columns; key/value heads shared by cards when fewer than
 * ncards); everything else is computed whole on every card.  Every card
 * runs the same graph text on its own shards of the parameters.  NULL
 * with "FILE:LINE: OP: cannot split for tensor parallelism: why" when an
 * op on a cut tensor has no rule. */
typedef struct {
    int dim;    /* the dimension, seen as [a][parts][b] */
    int a;
    int parts;  /* card c holds part (c / stride) % parts */
    int64_t b;
    int stride;
} cc_tp_factor;
typedef struct cc_tp_plan cc_tp_plan;
cc_tp_plan *cc_tp_split(const gr_graph *g, int ncards, char *err, size_t errlen);
void cc_tp_free(cc_tp_plan *p);
/* Row-parallel linears (allreduces per run). */
int cc_tp_rows(const cc_tp_plan *p);
/* Every card's graph, its parameters read from `weights` (NULL: none). */
char *cc_tp_graph_text(const cc_tp_plan *p, const char *weights);
/* The weights-file key of parameter v in the cards' graph. */
void cc_tp_param_key(const cc_tp_plan *p, int v, char *buf, size_t len);
/* Card `card`'s values of parameter v from its whole values: the count. */
int64_t cc_tp_shard(const cc_tp_plan *p, int v, int card, const float *full, float *out);
/* Is value v cut (each card holds a part)?  cc_tp_unshard puts card's
 * part of v where it belongs in the whole tensor. */
int cc_tp_is_cut(const cc_tp_plan *p, int v);
void cc_tp_unshard(const cc_tp_plan *p, int v, int card, const float *part, float *full);
/* ==== end of tensor parallelism ==== */

/* ==== The back half (backend.c, be_lxplan.c, be_matmul.c, be_rows.c, be_reroll.c; docs/compiler.md) ====
 * layout (a device layout per DRAM buffer), workdiv (each kernel's output
 * split across cores), lxplan (the tensors kept in LX across kernels), codegen (per-core streams, the tensor table, the
 * source graph as the program's graph text), reroll (each kernel's stream
 * rolled into counted loops). */

/* Roll each core's whole stream of a program made elsewhere (the KTIR
 * path, which unrolls scf.for as it compiles it) into counted loops, as
 * the reroll pass rolls a kernel: the same instructions in the same order
 * when expanded (checked), fewer to hold.  A stream that already uses
 * loops or registers is left as it is. */
void cc_roll_streams(isa_program *prog);

/* The back half's passes, in order; NULL-terminated.  (cc_pass_names
 * lists the front half's; dump_after accepts these with a target.  Both
 * come from the one pass table, passes.c.) */
const char *const *cc_backend_pass_names(void);
/* Generate the program for cfg from a compiled result: graph inputs are
 * tensors of role input named as the input values, parameters role
 * weight named by their value names, graph outputs role output named by
 * their output value names, other DRAM buffers role scratch.  NULL with
 * "kernel K: what is missing" (or another one-line reason) in err when
 * the back half cannot handle the graph; never wrong code. */
isa_program *cc_codegen(const cc_result *r, const chip_config *cfg, char *err, size_t errlen);
/* The program cc_compile made (opts->target set), handed to the caller
 * (who frees it); NULL without a target or when already taken. */
isa_program *cc_result_take_program(cc_result *r);
/* ==== end of the back half ==== */

#endif
