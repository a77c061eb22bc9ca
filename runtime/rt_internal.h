/* rt_internal.h: the runtime's private structures, shared by the runtime sources
 * only (the public interface is rt.h). */
#ifndef RT_INTERNAL_H
#define RT_INTERNAL_H

#include "rt.h"

/* A [addr, addr + size) range of device DRAM. */
typedef struct {
    uint64_t addr, size;
} rt_block;

struct rt_device {
    chip_config cfg;
    sim *sim;
    rt_block *free_list; /* sorted by addr, never adjacent (coalesced) */
    size_t nfree, capfree;
    rt_block *used;      /* allocated blocks, unordered */
    size_t nused, capused;
    uint64_t dirty_end;  /* end of the highest block ever allocated */
    rt_program *programs;/* loaded programs, linked through next */
    rt_program **sched;  /* declared launch order, cyclic (rt_set_schedule); nsched 0: LRU */
    size_t nsched, sched_pos; /* sched_pos: index of the next expected launch */
    uint64_t clock;      /* counts loads and launches, for LRU */
    rt_transfer_stats total;
    const rt_link_ops *link; /* rt_set_link: this card meets the others through link, or NULL */
    void *link_ctx;
    int card;
    uint8_t *stage;      /* device-layout bytes read back, reused launch after launch (rt_stage) */
    size_t stage_cap;
};

typedef struct rt_update rt_update;

/* Where a kept packed copy was last written: an upload to the same
 * address that no DRAM write has touched since (sim_dram_unwritten_since)
 * finds the bytes there already, and is counted but not made again. */
typedef struct {
    uint8_t *bytes;
    uint64_t at;     /* device address of the last upload */
    uint64_t serial; /* sim_dram_serial just after it; 0: not uploaded */
} rt_packed;

/* An op reading an input as indices into dim `dim` of this size (size 0:
 * none; dim -1: the elements flattened); wrap: a negative index counts
 * from the end, [-size, size). */
typedef struct {
    int64_t size;
    int wrap, dim;
    char use[ISA_NAME_MAX];
} rt_reader;

/* The values an integer input may hold, checked at each launch: a range
 * declared `range=[lo, hi]` (docs/graph-format.md), which the compiler
 * relied on, or, undeclared, DL16's exact integers when its device copy
 * is DL16; line 0: no check.  An input index ops read directly must also
 * index within each one's dim, as PyTorch requires (the device would drop
 * or clamp the element; tensor.c's index_ops lists the ops): the readers
 * allowing the fewest values below and above bound it. */
typedef struct {
    int line;
    int declared;
    int64_t lo, hi;
    rt_reader low, high;
} rt_range;

/* An index computed from inputs that the compiler did not prove within
 * the dim it indexes (cc_index_unproven): the host computes it from each
 * launch's inputs and refuses an out-of-bounds one (idxcheck.c). */
typedef struct {
    int value, node; /* in the program's graph (rt_program.igraph) */
    int64_t size;
    int wrap, dim;   /* as rt_reader's */
} rt_icheck;

struct rt_program {
    rt_device *dev;
    isa_program *p;
    uint64_t wbase;      /* device address of the weights region, while resident */
    uint64_t abase;      /* device address of the activation region, while staged */
    int resident;        /* the weights region is allocated and holds the weights */
    int staged;          /* the activation region is allocated */
    uint64_t last_use;   /* dev->clock at its last load or launch */
    rt_transfer_stats pending; /* moved since the last launch; reported by the next */
    float **host;        /* per tensor: fp32 host copy or NULL */
    /* Per tensor: host[i] with the user's finite values DL16 cannot hold
     * in place of their stand-in +-2^29 (isa_dl16_standin), where it has
     * any, else NULL; the reference reads them (rt_user_values), as
     * PyTorch does (an infinity it reads as the device's stand-in, as
     * compare.c and its softmax take it).  Dropped with every change of
     * host[i] (rt_host_changed). */
    float **user;
    /* Per tensor: an activation-region input's host copy in device layout,
     * as last uploaded (bytes NULL: none).  The region is allocated and
     * filled anew at every launch; packing (DL16 conversion) was most of
     * that.  Every change of host[i] drops it (rt_host_changed). */
    rt_packed *packed;
    uint64_t seed;       /* the run's seed (rt_fill_inputs): inputs and host random ops */
    int launched;
    int keep_values;     /* rt_keep_values: 0, 1 (stepwise when vacuous), 2 (always) */
    rt_run_result last;
    sim_decode *decode;  /* the engine's decode of p, kept for the next launch (sim_set_decode) */
    int host_ops;        /* p has `host` instructions: 1, 0, or -1 until the first launch looks */
    rt_range *range;     /* per tensor: an integer input's declared range (tensor.c), or NULL: none declared */
    gr_graph *igraph;    /* the program's graph while it has computed indices to check, else NULL */
    rt_icheck *icheck;   /* those indices, nicheck of them */
    int nicheck;
    rt_update *upd;      /* the graph's state updates (state.c), nupd of them */
    int nupd;
    float **before;      /* per tensor: a state's host copy before the last launch updated it, or NULL */
    rt_program *next;
};

/* The runtime's internal functions, by file from the bottom up: a file
 * calls only files below it.  docs/runtime.md ("The runtime's files") has
 * the whole order, with the files that offer only rt.h's functions. */

/* tensor.c: a loaded program's tensor table. */
/* A shape as "(100, 70)". */
void rt_dims_str(int rank, const int64_t *shape, char *buf, size_t len);
/* Replace the host copy of tensor i with a copy of values, an input's or
 * a weight's infinities as the device takes them: a softmax mask's rows
 * masked whole (ISA_TF_NANROW) NaN, each other infinity DL16's stand-in
 * +-2^30 (docs/runtime.md, "Masks").  Every write of an input or a
 * weight, whoever makes it, comes here: one rule for all. */
int rt_keep_host(rt_program *prog, int i, const float *values, char *err, size_t errlen);
/* "dim D of size N", or for dim -1 "the N elements flattened", into buf. */
const char *rt_bounds_text(char *buf, size_t len, int dim, int64_t size);
const float *rt_user_values(const rt_program *prog, int i);
/* The ranges of the program graph's integer inputs into prog->range, and
 * its computed indices the compiler did not prove into prog->icheck. */
int rt_ranges_init(rt_program *prog, char *err, size_t errlen);
/* Each checked input's host copy within its range and, for an index, its
 * dim, and each wrapped parameter's (ISA_TF_WRAP) within [-rows, rows): 0,
 * or -1 with a message naming the tensor and the value outside, its tensor
 * index in *bad. */
int rt_ranges_check(const rt_program *prog, int *bad, char *err, size_t errlen);
/* Tensor i's host copy changed (or went): its packed bytes are stale. */
void rt_host_changed(rt_program *prog, int i);
/* Does tensor t live in p's weights region? */
int rt_in_weights(const isa_program *p, const isa_tensor *t);
/* Is t's region in device DRAM now, and where does t live there? */
/* The ISA_TF_LX inputs written into their cores' LX before a run. */
int rt_place_lx(rt_program *prog, char *err, size_t errlen);
int rt_region_present(const rt_program *prog, const isa_tensor *t);
uint64_t rt_tensor_dev_addr(const rt_program *prog, const isa_tensor *t);

/* transfer.c: tensor values between host copies and device DRAM. */
/* Count bytes written from the host to tensor t. */
void rt_count_upload(rt_program *prog, const isa_tensor *t, uint64_t bytes);
/* Convert fp32 values to device layout and write them to tensor i when
 * its region is in device DRAM (counted as uploaded); else nothing. */
int rt_write_f32(rt_program *prog, int i, const float *values, char *err, size_t errlen);
/* Read every output back into its host copy (counted as downloaded), and
 * the values a stepwise check keeps (rt_keep_values; not counted). */
int rt_download_outputs(rt_program *prog, char *err, size_t errlen);
/* Before a run that keeps values: each kept tensor's elements NaN, so
 * what the run does not write reads back NaN (no cut there). */
int rt_poison_values(rt_program *prog, char *err, size_t errlen);

/* idxcheck.c: the computed indices of prog->icheck, computed on the host
 * from the inputs' and weights' host copies by the reference executor:
 * 0 when each is within its dim, or -1 with *line the graph line of the
 * op reading it and one line naming the index, the value and the dim (or
 * the op the executor cannot run that computes it). */
int rt_index_check(const rt_program *prog, int *line, char *err, size_t errlen);

/* fallback.c: host fallback ops during a launch (sim_set_host). */
typedef struct rt_fallback rt_fallback;
/* Ready the `host` instructions of prog's program for a run whose
 * result goes to res; NULL with a message when the program has a host op
 * the runtime cannot run (no graph, or an op the reference executor
 * lacks: res->refused_line its graph line), or when it has none (*err empty). */
rt_fallback *rt_fallback_begin(rt_program *prog, rt_run_result *res, char *err, size_t errlen);
void rt_fallback_end(rt_fallback *fb);
/* Did a host op of the run fail (the reference executor refused it)?
 * Then why (the op and the reason; res->refused_line its graph line). */
int rt_fallback_failed(const rt_fallback *fb, char *why, size_t len);
/* The tensor of graph value `name` in p (named by gr_tensor_name), or -1. */
int rt_value_tensor(const isa_program *p, const char *name);
/* The simulator's callback for a `host` instruction (sim_host_fn), ctx the rt_fallback. */
int rt_fallback_host(void *ctx, sim *s, const isa_program *p, int64_t node, double at, double *cycles, char *err,
                     size_t errlen);

/* schedule.c: the declared launch order. */
/* Schedule position for decisions made by a load (advance 0) or a launch
 * of prog (advance 1: moves past prog's next occurrence). */
size_t rt_sched_from(rt_program *prog, int advance);
/* Forget prog in the device's schedule (at unload). */
void rt_sched_forget(rt_program *prog);
/* Launches until q's next one, counting from schedule position `from`;
 * UINT64_MAX when the schedule never runs it. */
uint64_t rt_sched_next_use(const rt_device *dev, const rt_program *q, size_t from);

/* residency.c: the two regions of a program. */
/* Allocate and fill the weights region (restoring: after an eviction). */
int rt_place_weights(rt_program *prog, size_t from, int restoring, char *err, size_t errlen);
/* Allocate the activation region and upload what the host holds for it
 * (values 0, for one timing-only run: count the transfer, make none). */
int rt_stage(rt_program *prog, size_t from, int values, char *err, size_t errlen);
/* Free the activation region / the weights region, if allocated. */
void rt_unstage(rt_program *prog);
void rt_drop_weights(rt_program *prog);

/* state.c: a program's state updates (docs/graph-format.md, "State"). */
/* Read the update lines of the program's graph text; -1 with a message
 * when an update's tensors are not what the runtime can update, or the
 * program has no dma.scatter into a state. */
int rt_state_init(rt_program *prog, char *err, size_t errlen);
void rt_state_free(rt_program *prog);
/* After a launch (whose dma.scatter wrote the program's own copy): each
 * update's source slices into the state's host copy and into every other
 * loaded program holding a state of that name; r->state_bytes counts the
 * bytes the program's scatters wrote. */
int rt_state_apply(rt_program *prog, rt_run_result *r, char *err, size_t errlen);
/* State tensor ti's host copy before the last launch updated it, or NULL. */
const float *rt_state_before(const rt_program *prog, int ti);

/* progcheck.c: does the program fit this chip, and is it self-consistent? */
int rt_program_check(const rt_device *dev, const isa_program *p, char *err, size_t errlen);

/* compare.c: an output against its reference. */
/* The reference of one value: values and per-element tolerances. */
typedef struct {
    char name[ISA_NAME_MAX];
    int rank;
    int64_t shape[ISA_MAX_RANK];
    const float *val; /* host copy of a tensor, or owned below */
    float *owned;
    double *tol;      /* per-element tolerance of a computed value */
    int line;         /* graph line that computes it */
    const char *op;   /* its op; NULL for a tensor's host copy */
    int exact;        /* integers or bools: an element whose tolerance is infinite must equal ref, else said */
} rt_refval;
/* The absolute floor of every tolerance: values DL16 flushes to zero. */
#define RT_ABS_FLOOR 0x1p-30
/* Device values y (n elements, read as host dtype hdt) against v into r
 * (its counts zero, its name set by the caller). */
void rt_compare_values(isa_host_dtype hdt, const float *y, const rt_refval *v, int64_t n, rt_check_result *r);
/* Read output tensor ti from the device and compare it with v into r. */
int rt_compare(rt_program *prog, const rt_refval *v, int ti, rt_check_result *r, char *err, size_t errlen);
/* -1 with a message when the graph computes name (at line) but the
 * program holds it as data it reads (an input or a weight). */
int rt_computed_as_data(const isa_program *p, const char *name, int line, char *err, size_t errlen);

/* shortform.c: rt_check for a program whose graph text is the short form. */
int rt_check_short(rt_program *prog, rt_check_result **results, int *n, char *err, size_t errlen);

/* stepwise.c: a stepwise check's cuts (docs/validation.md). */
/* The tolerance of every element of value v (n elements) into tol: the
 * smaller of the two error bounds the executor propagated to it plus the
 * absolute floor. */
int rt_value_tolerance(rt_ref *r, const gr_graph *g, int v, const float *ref, int64_t n, double *tol, char *err,
                       size_t errlen);
typedef struct rt_stepper rt_stepper;
/* The cuts of g's values that prog's last run kept (NULL: out of memory);
 * rt_stepper_attach makes a reference run compare and continue at them. */
rt_stepper *rt_stepper_new(rt_program *prog, const gr_graph *g);
void rt_stepper_attach(rt_stepper *s, rt_ref *r);
int rt_stepper_candidates(const rt_stepper *s);
int rt_stepper_cuts(const rt_stepper *s);
/* Cuts out of tolerance (rt_stepper_bad counts all), and those with
 * infinite tolerances: the first few, as check results. */
int rt_stepper_report(const rt_stepper *s, const rt_check_result **cuts);
int rt_stepper_bad(const rt_stepper *s);
void rt_stepper_free(rt_stepper *s);

#endif
