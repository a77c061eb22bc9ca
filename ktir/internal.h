/* ktir internal: the per-core compile state shared by the op handlers. */
#ifndef KT_INTERNAL_H
#define KT_INTERNAL_H

#include <setjmp.h>
#include "ktir.h"
#include "mlir.h"

/* A value of the program as one core's compile sees it. */
typedef enum {
    KV_INT,    /* index / integer known at compile time */
    KV_FLOAT,  /* float scalar known at compile time */
    KV_ELEM,   /* float scalar computed on the chip: one element in LX at lx */
    KV_PTR,    /* an HBM pointer: tensor key, element offset i */
    KV_VIEW,   /* memory view: tensor, base element i, row stride, shape */
    KV_TILE,   /* access tile: a view's tensor, base, stride and shape (vshape), off, shape (extent) */
    KV_DVIEW,  /* distributed memory view: partitions dviews[i] */
    KV_TENSOR, /* tensor value: in LX at lx (splat 0), or a splat of f (1) or of the element at lx (2) */
    KV_IDX     /* integers known at compile time, one per element of a linalg.generic's domain: ipool[i ..] */
} kv_kind;

typedef struct {
    kv_kind kind;
    int64_t i;
    double f;
    uint64_t lx;
    int splat;
    int f32;                       /* TENSOR, ELEM, VIEW, TILE: elements are fp32 (else f16, DL16 on the chip) */
    int dynamic;                   /* VIEW (and its TILEs): sizes given at run time ('?'): tiles are clipped to it, not refused */
    int dist;                      /* TILE: of the distributed view dviews[i]: off is global, moved piece by piece */
    int integer;                   /* VIEW, TILE: integer elements (fp32 on the chip) */
    int indirect;                  /* TILE: construct_indirect_access_tile: gathers[i] (loaded as a gather, stored as a scatter) */
    int perm;                      /* TILE: an access_tile_order other than the identity (described, not moved) */
    int w16;                       /* TENSOR: f32 widened from the f16 (DL16) tensor at lx16, which still holds it */
    uint64_t lx16;
    int64_t vstr[ML_MAX_RANK];     /* VIEW, TILE: the view's strides */
    int from_empty;
    int moved;                     /* TENSOR: reshaped so that its sticks hold it as pshape, not shape */
    int prank;
    int64_t pshape[ML_MAX_RANK];                /* TENSOR: tensor.empty's undefined contents (a matmul's outs adds nothing) */
    int tensor;                    /* VIEW, TILE: program tensor */
    int64_t stride;                /* VIEW, TILE: elements from one row of the view to the next */
    const char *key;               /* PTR: tensor key */
    int rank;
    int64_t shape[ML_MAX_RANK];    /* TENSOR, TILE: own shape; VIEW: sizes */
    int vrank;
    int64_t vshape[ML_MAX_RANK];   /* TILE: its view's sizes */
    int64_t off[ML_MAX_RANK];      /* TILE: offsets in the view; VIEW: where its coordinate set starts */
} kv;

typedef struct {
    const char *name;
    kv v;
} kt_binding;

#define KT_MAX_PARTS 16
typedef struct {
    int n;
    kv parts[KT_MAX_PARTS];
} kt_dview;

/* An HBM tensor: the flat f16 memory behind one pointer argument, or
 * behind integer addresses ("hbm"), as one 1-D program tensor. */
typedef struct {
    char key[64];
    int index;      /* in prog->tensors (the final pass) */
    int loaded, stored, f32;
    int64_t extent; /* elements any view reaches (the measuring pass) */
    int contested;  /* two cores store some whole stick of it (stage.c) */
    int lx_core;    /* -1: in HBM; else a ct_local view's memory: in that core's LX from byte lx_off (lxview.c) */
    uint64_t lx_off;
    int line, col;  /* an LX tensor's first view, for messages */
} kt_tensor;

/* Sticks [lo, hi] of an LX tensor that core `reader` loads and another
 * core owns: the owner sends them over the ring at its start into the
 * reader's landing area, at byte `land` of it (lxview.c). */
typedef struct {
    int reader, tensor;
    int64_t lo, hi;
    uint64_t land;
} kt_remote;

/* Sticks [lo, hi] of a tensor that `core` stores whole (stage.c). */
typedef struct {
    int tensor, core;
    int64_t lo, hi;
} kt_full;

/* A partial stick one core stores (stage.c): lanes `mask` of stick `stick`
 * of a tensor; slot on core 0 when staged and core is not 0. */
typedef struct {
    int tensor, core, slot;
    int64_t stick;
    uint64_t mask;
} kt_stage_note;

/* Sticks [lo, hi] of a tensor some core loads (stage.c). */
typedef struct {
    int tensor;
    int64_t lo, hi;
} kt_span;

/* A stick several cores store disjoint parts of, merged on core 0: its
 * notes are notes[first .. first + n); covered: their lanes fill it. */
typedef struct {
    int tensor, first, n, covered;
    int64_t stick;
} kt_staged;

/* A block's ops that wait for a later one (fuse.c's chains) and its
 * widenings only matmuls read (mm_only), found once. */
typedef struct {
    const ml_block *block;
    int *wait, *chain, *mm_only;
} kt_plan;

/* An indirect access tile (gather.c): dimension dim of the view is the
 * integer tensor idx at positions pos (pos[var_pos] + the variable, when
 * var_pos >= 0); or, elem, both dimensions of a matrix are indices, the
 * row idx and the column col at positions pos and cpos, each position j
 * stepping with variable j; the view starts at element base; why: the
 * reason a pattern outside the subset cannot be moved, else NULL. */
#define KT_MAX_GATHERS 64
typedef struct {
    int dim, var_pos, elem;
    kv idx, col;
    int64_t pos[ML_MAX_RANK], cpos[ML_MAX_RANK], base;
    const char *why;
} kt_gather;

typedef struct {
    const ml_module *m;
    const chip_config *cfg;
    isa_program *prog;
    const kt_arg *args;
    int nargs;
    int ncores, core;
    int64_t grid[3];
    int ngrid;
    kt_dview dviews[64];           /* this core's distributed views (released with the loop iteration) */
    int ndviews;
    kt_gather gathers[KT_MAX_GATHERS]; /* this core's indirect tiles (released with the loop iteration) */
    int ngathers;
    kt_binding *env;
    int nenv, capenv;
    uint64_t lx_top, lx_peak;      /* bump allocator of this core's LX */
    kt_tensor tensors[64];
    int ntensors;
    uint64_t dram_top;
    int final;                     /* 0: the measuring pass (HBM extents), 1: the program */
    int last_unit;                 /* unit of the last instruction since a fence, or -1 */
    int exchanges;                 /* ring exchanges so far on this core (bank = count % 2) */
    int64_t ring_slot;             /* bytes of one ring slot: the largest partial (measuring pass) */
    kt_stage_note *notes;          /* the measuring pass's partial-stick stores, then the staged sticks' (stage.c) */
    int nnotes, capnotes;
    kt_plan *plans;
    int nplans, capplans;
    kt_span *loads;                /* the measuring pass's loaded sticks, then merged and sorted */
    int nloads, caploads;
    kt_staged *staged;             /* sorted by tensor and stick */
    int nstaged, capstaged, nslots;
    uint64_t stage_bytes;          /* LX below the ring slots: staged sticks, then core 0's slots */
    kt_remote *remotes;            /* the measuring pass's remote LX reads, one per reader and tensor */
    int nremotes, capremotes;
    uint64_t land_bytes;           /* LX below the staged sticks: the landing area of remote LX reads */
    int land_waited;               /* this core waited for its remote LX sticks */
    kt_full *fulls;                /* the measuring pass's whole-stick stores, then sorted */
    int nfulls, capfulls;
    char note[256];                /* one line for stderr: a store dropped as overwritten (stage.c) */
    double hbm_bytes, simd_elems, trans_elems, mm_flops, ring_bytes; /* this core's counts for ktir-cpu's roofline */
    double roofline;                           /* the slowest core's roofline so far */
    int mm_only;                   /* the op being compiled is an extf only matmuls read (kt_plan) */
    int in_generic;                /* compiling a linalg.generic's body over the domain dom */
    kv dom;
    int64_t *ipool;                /* the KV_IDX values (released with their linalg.generic) */
    int nipool, capipool;
    jmp_buf fail;
    int code;
    char *err;
    size_t errlen;
} kt_ctx;

_Noreturn void kt_fail(kt_ctx *c, int code, int line, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
void kt_bind(kt_ctx *c, const char *name, const kv *v);
/* p (an array of elem-byte items, *cap of them) with room for need: doubled from first; aborts without memory. */
void *kt_grow(void *p, int *cap, int need, size_t elem, int first);
const kv *kt_lookup(kt_ctx *c, const ml_item *it);
const kv *kt_operand(kt_ctx *c, const ml_op *op, int i); /* tail item i's value; refused when the op has none */
int64_t kt_int_of(kt_ctx *c, const ml_item *it);         /* an index value known at compile time; refused otherwise */
void kt_compile_block(kt_ctx *c, const ml_block *b, const ml_op **yield_op);
/* One op; returns 0, or 1 for a terminator (scf.yield, return). */
int kt_compile_op(kt_ctx *c, const ml_op *op);

int kt_ring_op(kt_ctx *c, const ml_op *op, kv *r);
/* d := f(a) on the SFP over a's sticks (a scalar computed on the chip stays one). */
void kt_sfp_unary(kt_ctx *c, const ml_op *op, int isa_op, kv a, kv *r);

/* Op patterns the SFP runs as one instruction (fuse.c): the four ops of
 * 1 / (1 + exp(-x)) from ops[i] (the negf) are the sigmoid at[3]; at[] gets
 * their indices in the block.  kt_sigmoid emits it when both constants are
 * 1 (0: compile the ops one by one). */
int kt_sigmoid_chain(const ml_block *b, int i, int at[4]);
int kt_sigmoid(kt_ctx *c, const ml_block *b, const int at[4]);
/* Is ops[i] an arith.extf whose result only linalg.matmul ops read, as operands? */
int kt_matmul_only(const ml_block *b, int i);

/* An access tile's subscripts [e, ...] (iexpr.c): each an affine or
 * quasi-affine expression of index values; returns how many. */
int kt_index_list(kt_ctx *c, const ml_item *list, int64_t *out, int max);
/* Refuses (exit 2) a shape with a dimension below 1 (dynamic: negative)
 * or more than 2^40 elements in all. */
void kt_check_shape(kt_ctx *c, const ml_op *op, const int64_t *shape, int rank);

/* Chip code (emit.c). */
uint64_t kt_lx_alloc(kt_ctx *c, const ml_op *op, uint64_t bytes);
int64_t kt_sticks(const kv *t);
int kt_ebytes(const kv *t);                  /* bytes of one element on the chip: 4 (fp32) or 2 (DL16) */
int kt_dtype(const kv *t);                   /* the SFP's value type of its elements */
void kt_emit(kt_ctx *c, isa_insn *in);      /* the instruction, after a fence if the unit changes */
void kt_push(kt_ctx *c, int op);             /* one instruction of op without operands (fence, bar, halt) */
void kt_emit_fill(kt_ctx *c, uint64_t lx, int64_t sticks, double value, int dtype);
void kt_materialize(kt_ctx *c, const ml_op *op, kv *t);
/* Refuse a tensor whose sticks hold another shape (a reshape moved its values) where the layout matters. */
void kt_need_layout(kt_ctx *c, const ml_op *op, const kv *t);
/* Partial-stick stores of several cores (stage.c). */
void kt_stage_note_store(kt_ctx *c, int tensor, int64_t first, int64_t stride, int64_t h, int64_t w, int64_t lanes);
void kt_stage_note_load(kt_ctx *c, int tensor, int64_t lo, int64_t hi);
void kt_stage_plan(kt_ctx *c);             /* after the measuring pass */
uint64_t kt_stage_base(const kt_ctx *c);   /* LX of the staged sticks' local copies */
int kt_stage_index(const kt_ctx *c, int tensor, int64_t stick); /* staged stick's index, or -1 */
int kt_stage_any(const kt_ctx *c, int tensor, int64_t lo, int64_t hi); /* is one of sticks [lo, hi] staged? */
void kt_stage_flush(kt_ctx *c, const ml_op *fn); /* at the end of each core's program */
/* Indirect access tiles (gather.c). */
void kt_gather_parse(kt_ctx *c, const ml_op *op, kv *r);
void kt_gather_load(kt_ctx *c, const ml_op *op, const kv *tile, uint64_t lx);
void kt_gather_store(kt_ctx *c, const ml_op *op, const kv *tile, uint64_t lx);
void kt_dma_tile(kt_ctx *c, const ml_op *op, const kv *tile, uint64_t lx, int store);
/* A vector into the matrix r: row i is x[i] (dim 1) or every row is x (dim 0) (ring.c). */
void kt_broadcast_vector(kt_ctx *c, const ml_op *op, kv *x, int dim, kv *r);
/* linalg.generic, linalg.index, arith.bitcast (generic.c). */
int kt_generic_op(kt_ctx *c, const ml_op *op, kv *r);
kv kt_idx_new(kt_ctx *c, const ml_op *op);
int64_t *kt_idx_values(kt_ctx *c, const kv *t);
int64_t kt_idx_at(kt_ctx *c, const kv *v, int64_t e);
void kt_select_mask(kt_ctx *c, const ml_op *op, const kv *cond, const kv *a, const kv *b, kv *r);
/* extf / truncf of a tensor; mm_only: an extf only matmuls read (kept as its DL16 source, lx16) */
void kt_cast(kt_ctx *c, const ml_op *op, const kv *v, int to_f32, int mm_only, kv *r);
uint64_t kt_dl16_operand(kt_ctx *c, const ml_op *op, kv *t);           /* a matmul operand in DL16 */
/* A store of rows h x w from element first (row stride) that a later core
 * overwrites whole, with no core loading it: that core's number, else -1. */
int kt_stage_dead_store(kt_ctx *c, int tensor, int64_t first, int64_t stride, int64_t h, int64_t w, int64_t lanes);
/* The HBM (or LX) tensor behind key; the measuring pass adds it on first use. */
int kt_tensor_for(kt_ctx *c, const ml_op *op, const char *key, int f32);
/* ct_local memory views (lxview.c). */
int kt_lx_space(kt_ctx *c, const ml_op *op);  /* memory_space: -1 global, else the ct_id's core */
void kt_lx_view(kt_ctx *c, const ml_op *op, int core, kv *r, const int64_t *size, const int64_t *st);
uint64_t kt_lx_skip(const kt_ctx *c, uint64_t at, uint64_t bytes); /* at, moved past this core's LX tensors */
void kt_lx_plan(kt_ctx *c);                     /* after the measuring pass */
void kt_lx_send(kt_ctx *c);                     /* at each core's start: the owner's sends */
void kt_lx_load(kt_ctx *c, const ml_op *op, const kv *p, uint64_t lx, int64_t hf, int64_t ro, int64_t co);

#endif
