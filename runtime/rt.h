/* rt: the Spyre runtime.  Opens a simulated device, allocates its DRAM,
 * loads programs, moves tensors between host (row-major fp32 / fp16 / bf16) and
 * device layout, launches programs and validates their outputs against a
 * host reference.
 *
 * Typical use:
 *
 *   rt_device *dev = rt_open("chip/configs/spyre.cfg", err, sizeof err);
 *   rt_program *prog = rt_load(dev, "mm.elf", err, sizeof err);
 *   rt_fill_inputs(prog, 42, err, sizeof err);     (or rt_write_tensor)
 *   rt_run_result res;
 *   rt_launch(prog, &res);
 *   rt_check_result *chk; int n;
 *   rt_check(prog, &chk, &n, err, sizeof err);     (one line per output:)
 *   rt_check_format(&chk[0], line, sizeof line);
 *   free(chk); rt_unload(prog); rt_close(dev);
 *
 * Errors a user can cause (bad file, program too large, unknown tensor,
 * DRAM exhausted...) return -1 / NULL with a one-line message in err
 * (err may be NULL); nothing here exits or aborts on them.  Internal
 * invariants are asserts.  The device is little-endian; so is the host
 * this runtime supports (rt_open refuses a big-endian host).
 */
#ifndef RT_H
#define RT_H

#include <stddef.h>
#include <stdint.h>

#include "chip.h"
#include "graph.h"
#include "isa.h"
#include "sim.h"

typedef struct rt_device rt_device;
typedef struct rt_program rt_program;

/* ---- Device ---- */

/* Load a chip configuration file (chip_config_load) and create the
 * simulated chip.  NULL with a message on error. */
rt_device *rt_open(const char *config_path, char *err, size_t errlen);
/* The same from a configuration already in memory (copied). */
rt_device *rt_open_config(const chip_config *cfg, char *err, size_t errlen);
/* Destroy the device; unloads every program still loaded on it. */
void rt_close(rt_device *dev);
const chip_config *rt_config(const rt_device *dev);
/* The underlying simulator, for raw DRAM / LX access in tests and tools. */
sim *rt_sim(rt_device *dev);
/* Options of the device's next launches: timing only, race check, trace,
 * and the instruction and cycle limits that stop a runaway program (a
 * launch past one faults; sim_options gives the defaults). */
void rt_set_options(rt_device *dev, const sim_options *opt);

/* ---- Device DRAM allocator ----
 * First-fit over [0, cfg.dram_bytes) in blocks aligned to cfg.dram_align,
 * sizes rounded up to the alignment, neighbours coalesced on free.  Only
 * the block lists live in host memory (the simulator stores DRAM sparsely). */

/* Allocate bytes (> 0); the address goes to *addr.  On exhaustion the
 * message names the request, the free total and the largest free block. */
int rt_alloc(rt_device *dev, uint64_t bytes, uint64_t *addr, char *err, size_t errlen);
/* Free a block returned by rt_alloc; -1 when addr is not one. */
int rt_free(rt_device *dev, uint64_t addr);
/* Bytes free in total, and the largest free block (either may be NULL). */
void rt_dram_usage(const rt_device *dev, uint64_t *free_bytes, uint64_t *largest_free);

/* ---- Programs ---- */

/* Read an ELF program (isa_elf_read) and load it (rt_load_program);
 * every message names the file. */
rt_program *rt_load(rt_device *dev, const char *elf_path, char *err, size_t errlen);
/* Load a program built in memory; takes ownership of p (freed on error
 * too).  Checks that it fits the chip (cores, LX size, stick size) and that
 * its tensor table is consistent (every tensor starts on a stick, no two
 * share a byte, the weights region is whole sticks), allocates its weights region
 * (p->weight_bytes, resident until unload or eviction) and its activation
 * region (the rest of p->dram_bytes, until the end of the first launch),
 * evicting other programs' weights when they do not fit (see "Where
 * tensors live" below), zeroes tensors without data where an earlier
 * allocation may have left data, and writes the constant data of every
 * tensor with const_off >= 0 (t->bytes bytes of device layout at
 * consts + const_off). */
rt_program *rt_load_program(rt_device *dev, isa_program *p, char *err, size_t errlen);
/* Free the program's DRAM regions and the program (and drop it from the
 * device's schedule). */
void rt_unload(rt_program *prog);
const isa_program *rt_program_isa(const rt_program *prog);
/* Device address of the program's activation region while it is allocated
 * (from load to the end of the first launch): a tensor at dram_off >=
 * weight_bytes lives at base + dram_off - weight_bytes, so for a program
 * without weights region this is where its whole segment starts.
 * UINT64_MAX while the region is not allocated. */
uint64_t rt_program_base(const rt_program *prog);
/* Device address of a tensor while its region is in device DRAM; -1 with a
 * message when it is not (evicted weights, activations between runs). */
int rt_tensor_addr(const rt_program *prog, const char *name, uint64_t *addr, char *err, size_t errlen);
rt_device *rt_program_device(rt_program *prog);
/* Index of a tensor by name, or -1 (with "no tensor NAME; tensors: ..." in err). */
int rt_find_tensor(const rt_program *prog, const char *name, char *err, size_t errlen);

/* ---- Tensors ----
 * Host tensors are row-major.  Device layout (see isa.h): the host
 * dimension stick_dim is split into whole sticks of `lanes` elements;
 * device shape (sticks, the other host dims in order, lanes), row-major,
 * padding zero; elements DL16 or fp32 (dev_dtype). */

/* Number of host elements (product of the shape; 1 for rank 0). */
int64_t rt_tensor_elems(const isa_tensor *t);
/* The conversions to and from device layout: isa_layout_pack/unpack (isa.h). */

/* Convert a host tensor (fp32, IEEE fp16 or bf16, per dt) to device layout.
 * Keeps an fp32 copy of the values as the host copy of the tensor (used by
 * rt_check and to upload it later), and writes the device layout to the
 * device when the tensor's region is there (else the next launch uploads
 * it from the host copy).  An input's or a weight's infinities are kept as
 * the device takes them, by every write here and below: DL16's stand-in
 * +-2^30, and NaN across a flagged softmax mask's rows whose softmax
 * PyTorch makes NaN (docs/runtime.md, "Masks"). */
int rt_write_tensor(rt_program *prog, const char *name, const void *host, isa_host_dtype dt,
                    char *err, size_t errlen);
/* Read a tensor into a row-major fp32 host array: from device DRAM while
 * its region is there, else the values the device would hold (its host
 * copy in device precision; an output: what the last launch read back;
 * zero without data).  A bf16 or fp16 tensor's values are narrowed to its
 * host dtype by the device's rule (isa_host_from_device: toward zero).
 * Scratch tensors exist only on the device. */
int rt_read_tensor(rt_program *prog, const char *name, float *host, char *err, size_t errlen);
/* The fp32 host copy of a tensor (written, filled, loaded from a file,
 * decoded from constant data, or an output read back by a launch), or
 * NULL; *count gets its element count. */
const float *rt_host_tensor(const rt_program *prog, const char *name, int64_t *count);

/* ---- Inputs ----
 * Random inputs: for each tensor, a splitmix64 generator seeded with
 * seed ^ fnv1a64(tensor name) gives one 64-bit word per element in
 * row-major order; the top 24 bits k give the value (k - 2^23) / 2^23, a
 * uniform value in [-1, 1) exactly representable in fp32.  Same seed, same
 * data on every machine, independent of the order of the tensor table. */

/* Fill n values for tensor `name` from seed (the generator above). */
void rt_random_uniform(uint64_t seed, const char *name, float *out, size_t n);
/* The generator itself, for other streams (the host's random ops,
 * docs/validation.md "Random ops"): the state for `name` under seed, and
 * the next 64-bit word of a state. */
uint64_t rt_random_key(uint64_t seed, const char *name);
uint64_t rt_random_word(uint64_t *state);
/* Fill every input and weight tensor without constant data with random
 * values (rounded to fp16 first when its host dtype is fp16, as a host
 * fp16 tensor would be) and write it to the device; an input with a
 * declared range gets integers spread over it.  The values are kept as
 * host copies. */
int rt_fill_inputs(rt_program *prog, uint64_t seed, char *err, size_t errlen);
/* Set an input or weight tensor from fp32 values (rounded to the tensor's
 * host dtype), keep the host copy and write it to the device. */
int rt_set_input(rt_program *prog, const char *name, const float *values, char *err, size_t errlen);
/* Set an input from a raw little-endian fp32 file whose size must be
 * exactly elements * 4 bytes. */
int rt_load_input_file(rt_program *prog, const char *name, const char *path, char *err, size_t errlen);
/* The same from a command-line argument "NAME=FILE". */
int rt_input_arg(rt_program *prog, const char *arg, char *err, size_t errlen);

/* ---- Execution ---- */

/* UNSUPPORTED: the program has a host op the runtime cannot run (the
 * reference executor lacks its op: nothing ran; or refused its operands:
 * the run stopped there). */
typedef enum { RT_RUN_OK, RT_RUN_FAULT, RT_RUN_UNSUPPORTED } rt_run_status;

/* Data moved between host and device for a run: everything since the
 * previous launch of the program (its load, tensor writes, evictions made
 * to load it) and the launch itself.  Zero fills are not counted. */
typedef struct {
    uint64_t bytes_uploaded;        /* host -> device, device layout bytes */
    uint64_t weight_bytes_uploaded; /* the part of it that went to the weights region */
    uint64_t bytes_downloaded;      /* device -> host: outputs read back after the run */
    int weights_evicted;            /* other programs' weights regions evicted to make room */
    uint64_t weight_bytes_evicted;
    int weights_restored;           /* this program's weights re-uploaded after an eviction */
    uint64_t weight_bytes_restored;
} rt_transfer_stats;

/* One host fallback op of a run (runtime/fallback.c, docs/runtime.md). */
typedef struct {
    int node;                 /* its node in the program's graph (the source graph's node order) */
    int line;                 /* of that node in the program's graph text */
    char op[ISA_NAME_MAX];    /* "aten.cumsum.default" */
    uint64_t bytes_to_host;   /* its inputs, device bytes */
    uint64_t bytes_to_device; /* its result, device bytes */
    double cycles;            /* charged to the run: transfers and host time */
} rt_fallback_op;

#define RT_MAX_FALLBACK 64

typedef struct {
    rt_run_status status;
    sim_fault fault; /* valid when status is RT_RUN_FAULT; RT_RUN_UNSUPPORTED: its msg */
    int refused;     /* RT_RUN_UNSUPPORTED for an input refused: its program tensor; else -1 */
    int refused_line; /* RT_RUN_UNSUPPORTED for a computed index or a host op refused: the graph line; else 0 */
    sim_stats stats;
    rt_transfer_stats xfer;
    uint64_t state_bytes;  /* device bytes of state the program's dma.scatter updates wrote (docs/graph-format.md,
                              "State"); their time is in stats.cycles, as any instruction's */
    int fallback_ops;                        /* host fallback ops run (stats.host_ops) */
    int coll_ops;                            /* collectives among them (rt_set_link) */
    double coll_cycles;                      /* their cycles, in stats.host_cycles: waits and transfers */
    double coll_wait_cycles;                 /* the part spent waiting for later cards */
    rt_fallback_op fallback[RT_MAX_FALLBACK]; /* the first RT_MAX_FALLBACK of them, in order */
} rt_run_result;

/* ---- Several cards (runtime/collective.c, docs/multicard.md) ----
 * A program of one card of a tensor-parallel system meets the other
 * cards' programs at collectives: graph nodes
 * _c10d_functional.all_reduce.default(%x, "sum", GROUP),
 * all_gather_into_tensor.default(%x, NCARDS, GROUP) (dim 0) and
 * reduce_scatter_tensor.default(%x, "sum", NCARDS, GROUP) (dim 0), which
 * the compiler leaves to the host (a `host` instruction).  There the
 * runtime hands the card's data to the device's link (rt_set_link): a
 * table of functions, so that how cards meet (threads of one process,
 * or MPI ranks) is one implementation of it.  Time is synchronised
 * conservatively: a collective completes on every card at the latest
 * arrival plus the ring algorithm's time (rt_coll_ns). */
typedef enum { RT_COLL_ALLREDUCE, RT_COLL_ALLGATHER, RT_COLL_REDUCE_SCATTER, RT_NCOLL } rt_coll_kind;
_Static_assert(RT_NCOLL == GR_NCOLL, "rt_coll_kind follows gr_coll_names");
/* The ring algorithm on ncards cards of sys, ns, for `bytes` the size of
 * every card's whole buffer (allreduce: the tensor; reduce-scatter: its
 * input; allgather: its output), B = link_bytes_per_s, L = link_latency_ns:
 *   allreduce       2 (N-1)/N x bytes / B + 2 (N-1) L
 *   reduce-scatter    (N-1)/N x bytes / B +   (N-1) L
 *   allgather         (N-1)/N x bytes / B +   (N-1) L
 * (0 on one card). */
double rt_coll_ns(const chip_system *sys, int ncards, rt_coll_kind k, uint64_t bytes);

/* Card `card`'s result (nout values) of a collective from every card's
 * input (ins[c], nin values each): sums in card order, so every link
 * gives the same bits. */
void rt_coll_combine(rt_coll_kind kind, int ncards, const float *const *ins, int64_t nin, int card, float *out,
                     int64_t nout);

/* One card's part in a collective. */
typedef struct {
    rt_coll_kind kind;
    int card;
    const float *in; /* nin values (NULL: timing only, nothing moves) */
    int64_t nin;
    float *out;      /* nout values */
    int64_t nout;
    uint64_t bytes;  /* the buffer rt_coll_ns times, device bytes */
    double at_ns;    /* when the card arrives, simulated */
    double done_ns;  /* set: when it completes on every card */
    double cost_ns;  /* set: its part of that time on the links (the rest: waiting for later cards) */
} rt_coll;

/* How cards meet.  collective blocks until every card has arrived (or
 * one has failed: -1 with that card's message); leave says a card's run
 * ended (msg NULL: normally), which fails a collective still waiting for
 * it rather than hang. */
typedef struct {
    int (*collective)(void *ctx, rt_coll *c, char *err, size_t errlen);
    void (*leave)(void *ctx, int card, const char *msg);
} rt_link_ops;

/* The device is card `card` of a system, meeting the others through ops. */
void rt_set_link(rt_device *dev, const rt_link_ops *ops, void *ctx, int card);
/* The one-process link: each card runs in a thread of its own. */
void *rt_threads_link_new(const chip_system *sys, int ncards);
void rt_threads_link_free(void *link);
extern const rt_link_ops rt_threads_link_ops;
/* Launch progs[c] (on the device of card c, linked by rt_set_link) for
 * every card at once, a thread each, res[c] its result; a card that
 * faults leaves the link with its message, so the others stop at their
 * next collective instead of waiting for it.  The number of cards whose
 * launch did not run to completion. */
int rt_launch_cards(rt_program *const *progs, int ncards, rt_run_result *res);

/* Run the program on the simulator (synchronous): restore its weights if
 * they were evicted, allocate its activation region if it is not (uploading
 * the host copies of its inputs), run, read every output back into its host
 * copy, free the activation region.  Returns 0 when it ran to completion,
 * -1 when it faulted (res->fault says where and why; core -1 when its
 * regions could not be placed in device DRAM).  An input whose graph line
 * declares range=[lo, hi] (docs/graph-format.md) holding a value outside it,
 * or an undeclared integer input the device keeps in DL16 holding one past
 * its exact integers, is refused before anything runs: -1, status
 * RT_RUN_UNSUPPORTED, the message naming the input and the value, its
 * tensor in res->refused.  res may be NULL. */
int rt_launch(rt_program *prog, rt_run_result *res);
/* The means of launches at several phases of the DRAM's refresh. */
typedef struct {
    int phases;
    double cycles;     /* the whole launch's mean cycles */
    int nkernels;      /* the launches' kernels, in res->stats.kernels order */
    double *span;      /* [nkernels] mean end - start */
    double *core_span; /* [nkernels] mean core_span */
} rt_phase_means;

/* Launch prog once per refresh phase k * tREFI / phases (k = 0 ..
 * phases - 1: hardware starts a launch at any phase of the refresh), into
 * *m the means and res the last launch (bytes, MACs and LX are the same at
 * every phase).  The device's other simulator options stay; its refresh
 * phase is restored after.  0, or -1 with res->fault (res is required). */
int rt_launch_phases(rt_program *prog, int phases, rt_run_result *res, rt_phase_means *m);
void rt_phase_means_free(rt_phase_means *m);
/* The result of the last launch; -1 when the program was never launched. */
int rt_wait(rt_program *prog, rt_run_result *res);
/* One line: "run: ok insns=... macs=... uploaded=... evicted=N (B bytes)
 * restored=N (B bytes)" or "run: FAULT core C unit U insn I: msg". */
void rt_run_format(const rt_run_result *res, char *buf, size_t len);

/* ---- Where tensors live (runtime/residency.c, schedule.c, docs/runtime.md) ----
 * A program's DRAM segment is two regions (isa_program.weight_bytes): its
 * weights are uploaded once and stay in device DRAM across launches;
 * activations (inputs, outputs, scratch) get a region per launch, freed
 * when the launch has read the outputs back.  When an allocation does not
 * fit, the runtime first frees the activation regions other programs hold
 * before their first launch (their inputs have host copies), then evicts
 * other programs' weights regions (their host copies stay; nothing moves)
 * until it fits, and restores a program's weights at its next launch.
 * The victim is the program whose next launch is furthest in the future
 * in the schedule (Belady); without a schedule, or among programs the
 * schedule never runs again, the least recently used (load or launch). */

/* Declare the order the caller will launch programs in, repeated
 * cyclically (e.g. the layers of a model, one inference after another);
 * n == 0 clears it (LRU).  Every program must be loaded on dev.  A launch
 * moves the position past the next occurrence of its program; launching a
 * program out of order is allowed. */
int rt_set_schedule(rt_device *dev, rt_program *const *order, size_t n, char *err, size_t errlen);
/* 1 when the program has a weights region and it is in device DRAM. */
int rt_weights_resident(const rt_program *prog);
/* Totals over the device's life (every load and launch). */
void rt_device_transfers(const rt_device *dev, rt_transfer_stats *total);

/* ---- Validation (runtime/validate.c, derivation in docs/validation.md) ----
 * The program's graph text names what it computes; each output tensor the
 * graph defines is compared with a host reference computed from the host
 * copies of the inputs. */

typedef struct {
    char name[ISA_NAME_MAX]; /* output tensor */
    char op[32];             /* the graph op that defines it */
    int line;                /* its graph line */
    int rank;                /* shape of the output */
    int64_t shape[ISA_MAX_RANK];
    int64_t count;           /* elements compared */
    int64_t within;          /* elements within tolerance */
    int64_t nans;            /* NaN (or NINF) elements in the output */
    int64_t vacuous;         /* elements whose tolerance is infinite: the check proves nothing of them */
    int64_t differ;          /* of those, an integer or bool output's that differ from the reference */
    int64_t beyond;          /* a reference DL16 cannot hold, the device's value of its sign from 2^30 on, no stand-in */
    double max_abs_err;      /* over non-NaN elements */
    double max_rel_err;      /* |y - ref| / max(|ref|, RT_REL_TINY) */
    int64_t worst;           /* flat index of the largest err / tol, -1 if none */
    float worst_value, worst_ref, worst_tol;
    double worst_ratio;      /* that largest err / tol (inf for a NaN), 0 if none */
    int ok;                  /* every element within tolerance and no NaN */
    int step;                /* RT_CHECK_*: what was compared */
    int cuts;                /* a stepwise output: the cuts its reference went through */
} rt_check_result;

/* rt_check_result.step: an output end to end, an output checked stepwise
 * (its reference continued from the device's values at the cuts), a cut
 * (a value the device holds) where the device left its tolerance. */
enum { RT_CHECK_END_TO_END, RT_CHECK_STEPWISE, RT_CHECK_CUT };

#define RT_REL_TINY 0x1p-30

/* Validate every output the graph defines.  *results (malloc'd, free()
 * it) gets one entry per output.  Returns -1 on error (no graph, an
 * unsupported op, an input without host data, shape mismatch...), else the
 * number of outputs that are not ok. */
int rt_check(rt_program *prog, rt_check_result **results, int *n, char *err, size_t errlen);
/* Stepwise checks (docs/validation.md, "Stepwise checks"): from the next
 * launch on, keep the values of the scratch tensors that hold a graph
 * value whole (ISA_TF_VALUE), so that rt_check and rt_check_graph can
 * compare the device there and continue the reference from its value.
 * mode 0: off (the default); 1: a stepwise check follows when an output's
 * end-to-end check is vacuous (an infinite tolerance); 2: always. */
void rt_keep_values(rt_program *prog, int mode);
/* Has any of the n results an infinite tolerance (vacuous > 0)? */
int rt_check_vacuous(const rt_check_result *res, int n);
/* The stepwise check of prog's last run with its cuts from probe's last
 * run: probe is the same graph compiled with cc_compile_opts.write_values
 * (every value kept in LX also written to DRAM), loaded with the same
 * inputs and launched after rt_keep_values(probe, 2).  Its outputs must be
 * prog's bit for bit (else -1: the probe build computed something else).
 * *results as rt_check_graph's stepwise part; returns the number not ok. */
int rt_check_stepwise(rt_program *prog, rt_program *probe, const gr_graph *g, rt_check_result **results, int *n,
                      char *err, size_t errlen);
/* The same against a parsed graph (what rt_check does when the program's
 * graph text is a full graph, docs/graph-format.md): its inputs and
 * parameters are the program's tensors of the same name (a parameter also
 * by its weight key, else from the graph's weights file), each output
 * tensor of the program is the graph value of the same name (or "outputN":
 * the graph's output N), and the reference executor (rt_ref) computes the
 * references. */
int rt_check_graph(rt_program *prog, const gr_graph *g, rt_check_result **results, int *n, char *err,
                   size_t errlen);
/* The same against PyTorch's outputs: output N of the graph is compared
 * with tensor "outputN" of the safetensors file path (tools/export.py's
 * expected.safetensors), with rt_check_graph's tolerance widened by 2^-10
 * of itself (PyTorch computes in fp32: docs/validation.md). */
int rt_check_expected(rt_program *prog, const gr_graph *g, const char *path, rt_check_result **results, int *n,
                      char *err, size_t errlen);
/* "check C: max_abs_err=1.2e-03 max_rel_err=3.1e-03 within_tol=1.000000
 * (1048576/1048576) worst_err_over_tol=0.031 ok"; a mismatch also names its
 * worst element and ends in " MISMATCH". */
void rt_check_format(const rt_check_result *r, char *buf, size_t len);

/* ==== A compiled graph's data (runtime/graphdata.c) ====
 * For a program compiled from graph g (cc_codegen): write every input
 * tensor from the safetensors file inputs_path (by name; NULL: keep the
 * inputs' random values, those of a bool or integer input made 0/1 or
 * truncated to integers) and every weight tensor from g's weights file (by the
 * parameter's key), as fp32 host data through rt_write_tensor, so the
 * host copies are there for rt_check_graph.  -1 with a message naming the
 * file and tensor on a missing tensor, a shape or kind other than the
 * graph declares (rt_st_check_type) or an element count mismatch. */
int rt_load_graph_tensors(rt_program *prog, const gr_graph *g, const char *inputs_path, char *err, size_t errlen);

/* ==== Safetensors files (runtime/safetensors.c) ====
 * The tensor files of the Hugging Face ecosystem: a little-endian u64
 * header length N, N bytes of JSON {"name": {"dtype": "F32", "shape": [..],
 * "data_offsets": [begin, end]}, ..., "__metadata__": {..}}, then the raw
 * row-major little-endian data; offsets are relative to the data.
 * Reading validates everything (header length against the file size, the
 * JSON, each dtype, shape x itemsize == the span of data_offsets, offsets
 * inside the data and not overlapping, no name twice); every message
 * names the file and, where there is one, the tensor. */

typedef enum {
    RT_ST_F32, RT_ST_F16, RT_ST_BF16, RT_ST_F64, RT_ST_I64, RT_ST_I32, RT_ST_I16, RT_ST_I8, RT_ST_U8,
    RT_ST_BOOL, RT_ST_NDTYPES
} rt_st_dtype;

#define RT_ST_MAX_RANK 8
/* The header's JSON is at most 100 MB: the limit of the reference
 * implementation (Hugging Face safetensors, MAX_HEADER_SIZE).  The file is
 * mapped, not read, so the data has no cap beyond the address space. */
#define RT_ST_HEADER_MAX 100000000ull

typedef struct {
    char *name;
    rt_st_dtype dtype;
    int rank;
    int64_t shape[RT_ST_MAX_RANK];
    int64_t numel;    /* product of the shape (1 for rank 0) */
    const void *data; /* numel elements inside the file's bytes (not aligned) */
    uint64_t nbytes;
} rt_st_tensor;

typedef struct {
    char *path;
    rt_st_tensor *tensors; /* in header order */
    int ntensors;
    void *map;             /* the whole file (private) */
    size_t size;
} rt_st_file;

/* Read and validate a file.  NULL with a message on error. */
rt_st_file *rt_st_read(const char *path, char *err, size_t errlen);
void rt_st_free(rt_st_file *f);
/* A tensor by name, or NULL. */
const rt_st_tensor *rt_st_find(const rt_st_file *f, const char *name);
/* "F32", "BF16", ...; and the element size in bytes. */
const char *rt_st_dtype_name(rt_st_dtype d);
size_t rt_st_dtype_size(rt_st_dtype d);
/* Convert all numel elements to fp32 (BOOL: 0 / 1; integers rounded to
 * the nearest float). */
void rt_st_to_f32(const rt_st_tensor *t, float *out);
/* Convert to int64 (floats truncated toward zero, as torch's .long()
 * does); -1 with a message naming the element when a value is NaN,
 * infinite or out of the int64 range. */
int rt_st_to_i64(const rt_st_tensor *t, const char *path, int64_t *out, char *err, size_t errlen);

/* A tensor to write: numel(shape) elements of dtype at data. */
typedef struct {
    const char *name;
    rt_st_dtype dtype;
    int rank;
    int64_t shape[RT_ST_MAX_RANK];
    const void *data;
} rt_st_entry;

/* Write n tensors (header in the given order, the header padded with
 * spaces to a multiple of 8 bytes, data packed in order). */
int rt_st_write(const char *path, const rt_st_entry *t, int n, char *err, size_t errlen);

/* The one check of a file's tensor t against the graph value val it
 * stands for (an input, a parameter, an expected output), shared by run
 * and ref (runtime/graphdata.c): the same shape as declared, and a float dtype exactly when the
 * declared one is (F16 data for an f32 value is fine, I32 is not).  -1
 * with "PATH: WHAT 'NAME' has shape [3, 8] but %x (graph line 4) is
 * f32[8, 3]" or "... is I32 but ...". */
int rt_st_check_type(const rt_st_tensor *t, const char *path, const gr_value *val, const char *what, char *err,
                     size_t errlen);

/* ==== Reference executor (runtime/ref_*.c) ====
 * Runs a parsed graph (graph/graph.h) as written, op by op, on the
 * host: the independent reference the compiler's output is checked
 * against.  It shares no lowering or decomposition with the compiler.
 * Every float tensor (whatever its declared float dtype) is computed in
 * fp32, integer tensors as int64, bool as 0 / 1; data is plain row-major
 * contiguous; matrix products go to OpenBLAS (cblas_sgemm), the rest is
 * plain C.  At every node the executor computes the output shape and
 * kind (float, integer, bool) itself and compares them with the declared
 * type.  Errors are one line "FILE:LINE: OP: message" naming the graph
 * line ("FILE:LINE: unsupported op aten.foo.bar" for an op it does not
 * implement).  The ops it implements are the rows of the op tables of its
 * family files (ref_binary.c, ref_views.c, ...; ref_exec.c lists them).
 *
 *   rt_ref *r = rt_ref_new(g, err, sizeof err);
 *   rt_ref_load_weights(r, NULL, err, sizeof err);    (g->weights)
 *   rt_ref_load_inputs(r, "inputs.safetensors", err, sizeof err);
 *   rt_ref_run(r, err, sizeof err);
 *   const float *y = rt_ref_output(r, 0, &type);
 */

typedef struct rt_ref rt_ref;

/* An executor for g (which must outlive it).  NULL with a message when the
 * graph uses an op the executor does not implement. */
rt_ref *rt_ref_new(const gr_graph *g, char *err, size_t errlen);
void rt_ref_free(rt_ref *r);
/* Set an input or a parameter (by value name, with or without %, or by a
 * parameter's weight key) from count values, which must be the numel of
 * its declared type; converted to the declared kind (float -> integer
 * truncates). */
int rt_ref_set(rt_ref *r, const char *name, const float *data, int64_t count, char *err, size_t errlen);
int rt_ref_set_i64(rt_ref *r, const char *name, const int64_t *data, int64_t count, char *err, size_t errlen);
/* Set every parameter from a safetensors file, by key (path NULL: the
 * graph's `weights` file, relative to the graph file).  Errors: "missing
 * weight KEY for %name (graph line N)", a shape other than the declared
 * one, a float stored for an integer parameter or the reverse. */
int rt_ref_load_weights(rt_ref *r, const char *path, char *err, size_t errlen);
/* Set every input from a safetensors file, by name (without %). */
int rt_ref_load_inputs(rt_ref *r, const char *path, char *err, size_t errlen);
/* Keep value v (an index into g->values) after rt_ref_run; intermediate
 * values are otherwise freed after their last use.  Outputs are kept. */
void rt_ref_keep(rt_ref *r, int v);
/* Run every node in order.  0, or -1 with a message. */
int rt_ref_run(rt_ref *r, char *err, size_t errlen);
/* Output i of the last run as fp32 (integers and bools converted), or NULL;
 * *type (may be NULL) gets its declared type. */
const float *rt_ref_output(rt_ref *r, int i, gr_ttype *type);
/* The same for any tensor value that is still held (inputs, parameters,
 * outputs, kept values), or NULL. */
const float *rt_ref_value(rt_ref *r, int v, gr_ttype *type);
/* The int64 data of an integer or bool value, or NULL (float values). */
const int64_t *rt_ref_value_i64(rt_ref *r, int v, gr_ttype *type);

/* Error bounds (docs/validation.md, "Error bounds"): with tracking on
 * (before rt_ref_run), every value also gets, per element, two bounds on
 * |device value - reference value| for a device that rounds the graph's
 * inputs and parameters and every value of its decomposition to DL16:
 * each op's bound is its arguments' bounds carried through it at the
 * reference values, plus its own rounding.  Track 0 is the worst case
 * (every rounding error at its largest and of the same sign); track 1 is
 * the probabilistic scale S, for rounding errors that are independent and
 * of mean zero (the errors of the terms of a sum add in quadrature): the
 * error exceeds RT_REF_LAMBDA * S with probability at most
 * 2 exp(-RT_REF_LAMBDA^2 / 2), about 3e-8.  A bool's bound is 1 where the
 * device's comparison may come out the other way.  rt_check_graph's
 * tolerance is min(track 0, RT_REF_LAMBDA * track 1) + 2^-30.  A bound is
 * never NaN: rt_ref_run fails ("internal error") when a rule gives a NaN
 * bound to an element whose value is a number. */
#define RT_REF_LAMBDA 6.0
void rt_ref_track_errors(rt_ref *r, int on);
/* One node at a time (the host fallback, runtime/fallback.c): an executor
 * that does not check the graph's ops up front; whether it has node n's
 * op; a value set (any value of the graph, its arguments); node n run on
 * the values of its arguments (rt_ref_value then gives its result). */
rt_ref *rt_ref_new_partial(const gr_graph *g, char *err, size_t errlen);
int rt_ref_supports(const gr_node *n);
int rt_ref_set_value(rt_ref *r, int v, const float *data, int64_t count, char *err, size_t errlen);
int rt_ref_run_node(rt_ref *r, int n, char *err, size_t errlen);
/* The reason in rt_ref_run_node's message msg for graph g's node n: msg
 * past the "PATH:LINE: " it begins with (the caller names the line its
 * own way), or msg whole. */
const char *rt_ref_reason(const gr_graph *g, int n, const char *msg);
/* The bounds (track 0 or 1) of a value that is still held (see
 * rt_ref_value), as fp32, or NULL (tracking off, a tuple, a value freed). */
const float *rt_ref_error(rt_ref *r, int v, int track);
/* Random ops (runtime/ref_random.c, docs/validation.md "Random ops"):
 * without tracking they draw from the host's generator, keyed by seed
 * (default 0) and the result's name; with tracking each element is the
 * middle of the interval every draw could give and its bound the
 * half-width.  rt_ref_drawn: value v depends on a draw (so PyTorch's own
 * draw is no reference for it).  rt_ref_written: the value the last node
 * run also wrote in place (rrelu_with_noise's noise), or -1. */
/* A stepwise check's hook (rt_ref_on_value): fn runs after each node of
 * rt_ref_run with the value the node computed, and may compare it and
 * replace it (rt_ref_reseed); non-zero stops the run with fn's message. */
typedef int (*rt_ref_hook)(void *ctx, rt_ref *r, int v, char *err, size_t errlen);
void rt_ref_on_value(rt_ref *r, rt_ref_hook fn, void *ctx);
/* Value v (one float tensor of count elements) becomes data, exact: its
 * error bounds become zero (what later nodes read is the device's value). */
int rt_ref_reseed(rt_ref *r, int v, const float *data, int64_t count, char *err, size_t errlen);
void rt_ref_seed(rt_ref *r, uint64_t seed);
int rt_ref_drawn(const rt_ref *r, int v);
int rt_ref_written(const rt_ref *r);

#endif
