/* ir.h: the graph compiler's internal IR (its front half), shared by the
 * passes; the public entry points are in cc.h (cc_compile and friends).
 * docs/compiler.md describes the pipeline, the text form and the fusion
 * rules for a user.
 *
 * Pipeline (compile.c lists the passes in this order):
 *
 *   gr_graph --decompose--> core-op graph --lower--> buffers + nodes
 *     --deps--> reads, one kernel per node --dce--> live nodes
 *     --fuse_vertical, fuse_reduction, fuse_epilogue, fuse_horizontal--> kernels
 *     --order--> kernels in execution order --lastuse--> last uses, internal buffers
 *
 * The IR, bottom up:
 *
 *   ir_index   an AFFINE index: offset + sum coef[v] * var_v over the loop
 *              variables of a node.  A buffer element is always addressed
 *              by its flat row-major offset, so every view (permute,
 *              transpose, expand with stride 0, slice, select, reshape of a
 *              contiguous buffer ...) is just another index.
 *   ir_expr    a value computed per loop iteration: a DAG of loads,
 *              constants, index values, arithmetic, where, casts, held in
 *              one hash-consed arena per program (equal expressions share
 *              one id).  Operators come from the IR_OPS table.
 *   ir_buf     a tensor in memory: graph input, parameter or computed;
 *              contiguous row-major in its shape.
 *   ir_node    one loop nest writing one buffer: POINTWISE, REDUCTION or
 *              the MATMUL template.
 *   ir_kernel  nodes fused to run as one kernel over one loop structure.
 *
 * Loop variables are numbered per node; their names in the text form are
 * i0, i1, ... (outer loops), r0, r1, ... (reduced loops of a REDUCTION)
 * and b0, ..., m, n, k (MATMUL).  A node's loops need not be its output's
 * dims: extent-1 loops are dropped and contiguous neighbours merged
 * (ir_node_simplify); its store index says where each element goes. */
#ifndef CC_IR_H
#define CC_IR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cc.h"
#include "graph.h"

/* The compiler's state (defined below); the user sees it as cc_result. */
typedef struct cc_result ir_prog;

/* A REDUCTION with keepdim can have rank output dims plus rank reduced dims. */
#define IR_MAX_VARS (2 * GR_MAX_RANK)
#define IR_INT_EXACT ISA_DL16_EXACT_INT /* (intexact.c) */

/* ---- Affine indices ---- */

typedef struct {
    int64_t offset;
    int64_t coef[IR_MAX_VARS];
} ir_index;

ir_index ir_idx_const(int64_t c);
ir_index ir_idx_var(int v);
/* row(coords): row is an index over nvars variables, coords[v] the index
 * each variable stands for; the result is an index over coords' variables. */
ir_index ir_idx_compose(const ir_index *row, int nvars, const ir_index *coords);
int ir_idx_equal(const ir_index *a, const ir_index *b);
/* "64*i0 + i1 - 3"; names[v] names variable v; "0" when empty. */
void ir_idx_print(const ir_index *x, int nvars, const char *const *names, FILE *f);

/* ---- Expressions ---- */

/* The operators of unary and binary expressions: name, arity, how it
 * prints (an infix symbol with its precedence, or a function name).
 * Comparisons and the logical operators produce bool; the other binary
 * operators take and produce operands of one dtype. */
#define IR_OPS(X)                                                        \
    X(NEG, 1, "neg", 0)      /* -a                                    */ \
    X(EXP, 1, "exp", 0)      /* e^a                                   */ \
    X(LOG, 1, "log", 0)      /* natural log                           */ \
    X(SQRT, 1, "sqrt", 0)    /* square root                           */ \
    X(RSQRT, 1, "rsqrt", 0)  /* 1 / sqrt(a)                           */ \
    X(RECIP, 1, "recip", 0)  /* 1 / a                                 */ \
    X(TANH, 1, "tanh", 0)    /* hyperbolic tangent                    */ \
    X(SIGMOID, 1, "sigmoid", 0) /* 1 / (1 + e^-a)                     */ \
    X(ERF, 1, "erf", 0)      /* error function                        */ \
    X(RELU, 1, "relu", 0)    /* max(a, 0)                             */ \
    X(SIN, 1, "sin", 0)      /* sine                                  */ \
    X(COS, 1, "cos", 0)      /* cosine                                */ \
    X(ABS, 1, "abs", 0)      /* |a|                                   */ \
    X(NOT, 1, "not", 0)      /* logical not (bool)                    */ \
    X(ADD, 2, "+", 1)        /* a + b                                 */ \
    X(SUB, 2, "-", 1)        /* a - b                                 */ \
    X(MUL, 2, "*", 2)        /* a * b                                 */ \
    X(DIV, 2, "/", 2)        /* a / b (true division)                 */ \
    X(MAX, 2, "max", 0)      /* larger of a, b (NaN propagates)       */ \
    X(MIN, 2, "min", 0)      /* smaller of a, b (NaN propagates)      */ \
    X(POW, 2, "pow", 0)      /* a ^ b                                 */ \
    X(EQ, 2, "eq", 0)        /* a == b -> bool                        */ \
    X(NE, 2, "ne", 0)        /* a != b -> bool                        */ \
    X(LT, 2, "lt", 0)        /* a < b -> bool                         */ \
    X(LE, 2, "le", 0)        /* a <= b -> bool                        */ \
    X(GT, 2, "gt", 0)        /* a > b -> bool                         */ \
    X(GE, 2, "ge", 0)        /* a >= b -> bool                        */ \
    X(AND, 2, "and", 0)      /* logical and (bool) -> bool            */ \
    X(OR, 2, "or", 0)        /* logical or (bool) -> bool             */

typedef enum {
#define X(name, arity, text, prec) IR_##name,
    IR_OPS(X)
#undef X
    IR_NOPS
} ir_op;

typedef struct {
    const char *text;
    int arity;
    int prec; /* > 0: infix with this precedence */
} ir_op_info;
extern const ir_op_info ir_ops[IR_NOPS];

/* What an elementwise ATen op computes (opsem.c, the one table of it):
 * per domain a function, NULL where the compiler does not evaluate the
 * op in that domain.  Unary ops ignore b. */
typedef struct {
    double lo, hi;
} ir_ival;
enum {
    IR_SEM_ALPHA = 1 << 0, /* other is scaled by the op's alpha first */
    IR_SEM_SWAP = 1 << 1,  /* self and other swapped (rsub: other - self) */
    IR_SEM_LIBM = 1 << 2,  /* transcendental: the last bit differs between libms */
};
typedef struct {
    const char *aten; /* the op's base name ("floor_divide") */
    unsigned flags;
    int (*i64)(int64_t a, int64_t b, int64_t *r); /* exact, as PyTorch's integer op; 0 where int64
                                                      would wrap or PyTorch raises */
    double (*f64)(double a, double b);
    float (*f32)(float a, float b); /* PyTorch's fp32 where not f64's result rounded once; else NULL */
    ir_ival (*iv)(ir_ival a, ir_ival b); /* every value it may give over a's and b's */
    int arity;
    int ir; /* the IR operator lower.c makes of it; -1: none (decompose rewrites it first) */
} ir_opsem;
const ir_opsem *ir_opsem_ir(ir_op op);
const ir_opsem *ir_opsem_aten(const char *base); /* NULL: no row for it */
/* s->i64 on an ATen call's operands, with its alpha and swap applied. */
int ir_opsem_i64(const ir_opsem *s, int64_t self, int64_t other, int64_t alpha, int64_t *r);
/* s->iv so (s->iv not NULL). */
ir_ival ir_opsem_iv(const ir_opsem *s, ir_ival self, ir_ival other, ir_ival alpha);

typedef enum {
    IR_E_LOAD,  /* load(buf, idx): the element at flat offset idx           */
    IR_E_ILOAD, /* load(buf, idx + stride*a): a gather, a an integer expr   */
    IR_E_CONST, /* the constant value                                       */
    IR_E_INDEX, /* the integer value of idx (arange, triangular masks)      */
    IR_E_ACC,   /* acc: the matmul accumulator (MATMUL epilogues only)      */
    IR_E_OP,    /* op(a) or op(a, b)                                         */
    IR_E_WHERE, /* where(a, b, c): b if a else c; only the chosen operand is
                   evaluated, so a load it guards may be out of range (cat) */
    IR_E_CAST,  /* a converted to dtype                                     */
} ir_expr_kind;

typedef struct {
    ir_expr_kind kind;
    ir_op op;         /* IR_E_OP */
    gr_dtype dtype;   /* of the result */
    int a, b, c;      /* operand expressions, -1 if unused */
    int buf;          /* LOAD, ILOAD */
    int64_t stride;   /* ILOAD */
    double value;     /* CONST */
    ir_index idx;     /* LOAD, ILOAD, INDEX */
} ir_expr;

/* The arena: expressions by id, hash-consed. */
typedef struct {
    ir_expr *e;
    int n, cap;
    int *hash;        /* open addressing: expression id + 1, 0 empty */
    int hcap;
    int *memo, *stamp; /* scratch for rewrites, per expression id */
    int gen;
} ir_arena;

int ir_load(ir_arena *A, int buf, gr_dtype dt, const ir_index *idx);
int ir_iload(ir_arena *A, int buf, gr_dtype dt, const ir_index *idx, int64_t stride, int sub);
int ir_const(ir_arena *A, double v, gr_dtype dt);
int ir_indexval(ir_arena *A, const ir_index *idx);
int ir_acc(ir_arena *A, gr_dtype dt);
int ir_op1(ir_arena *A, ir_op op, int a);
int ir_op2(ir_arena *A, ir_op op, int a, int b);
int ir_where(ir_arena *A, int c, int a, int b);
int ir_cast(ir_arena *A, int a, gr_dtype dt); /* a itself when already dt */

/* e with every variable v (of nvars) replaced by the index vars[v], and,
 * if repl is not NULL, every load of a buffer b with repl[b] >= 0
 * replaced by the expression repl[b] (for epilogues: the index of such a
 * load is known to be the one the replacement was computed at). */
int ir_subst(ir_arena *A, int e, int nvars, const ir_index *vars, const int *repl);
/* e with every LOAD x replaced by fn(ctx, A, x) where that is >= 0 (the
 * load is kept where it is -1); variables unchanged. */
int ir_map_loads(ir_arena *A, int e, int (*fn)(void *ctx, ir_arena *A, const ir_expr *x), void *ctx);
/* e with every occurrence of expression from replaced by to. */
int ir_replace(ir_arena *A, int e, int from, int to);
/* Number of distinct expressions in the DAG of e. */
int ir_expr_size(ir_arena *A, int e);
/* Call fn for each expression in the DAG of e (each once). */
void ir_expr_walk(ir_arena *A, int e, void (*fn)(void *ctx, const ir_expr *x), void *ctx);
/* The shortest text that reads back as the same double ("0.5", "1.0",
 * "-inf"). */
void ir_print_double(double v, FILE *f);
/* Print e: "exp(load(x, 64*i0 + i1) - load(amax, i0))". */
void ir_expr_print(const ir_arena *A, int e, const char *const *vars, const char *const *bufs, FILE *f);

/* ---- Buffers ---- */

typedef enum { IR_BUF_INPUT, IR_BUF_PARAM, IR_BUF_COMPUTED } ir_buf_kind;

/* The most rows a table indexed by a parameter's wrapped positions has
 * (ir_buf.wrap_rows; ISA_WRAP_ROWS_MAX). */
#define IR_WRAP_ROWS_MAX 65535

/* What an ATen movement op does to its first argument's elements: the one
 * table of them (ir.c's OP_ATTRS), each pass asking for the property it
 * needs.  0 for any other op. */
enum {
    IR_OP_RESHAPE = 1 << 0, /* the same elements in the same row-major order, a new shape */
    IR_OP_ALIAS = 1 << 1,   /* the same tensor */
    IR_OP_COPY = 1 << 2,    /* the same values in fresh row-major storage */
    IR_OP_CAST = 1 << 3,    /* the same values in another dtype */
    IR_OP_PERMUTE = 1 << 4, /* the same elements, dims reordered */
    IR_OP_SLICE = 1 << 5,   /* a range along one dim, rank kept */
    IR_OP_SELECT = 1 << 6,  /* one position of a dim, that dim dropped */
    IR_OP_SPLIT = 1 << 7,   /* ranges along one dim, several results */
    IR_OP_EXPAND = 1 << 8,  /* elements repeated along broadcast dims */
    IR_OP_VIEW = 1 << 9,    /* a view of the argument's storage */
};
/* The attributes of the ATen op whose base name is the len characters at
 * name, none of them NUL ("view" of aten.view.default). */
unsigned ir_op_attrs_n(const char *name, size_t len);
unsigned ir_op_attrs(const char *name);

/* Value v of graph g seen through views (IR_OP_RESHAPE, IR_OP_SLICE,
 * IR_OP_EXPAND): the value they view. */
int ir_view_root(const gr_graph *g, int v);
/* Whether every reader of param (through views) in g is a row gather from
 * a table of rows rows (index.Tensor with it the one index of a 2-D
 * table's dim 0, or embedding's indices): only then may the device copy
 * hold its positions wrapped, no other reader seeing x mod rows. */
int ir_only_row_gathers(const gr_graph *g, int param, int64_t rows);

typedef struct {
    char *name;       /* unique in the program */
    gr_ttype type;    /* contiguous row-major */
    ir_buf_kind kind;
    char *param_key;  /* PARAM: its key in the weights file */
    float *cdata;     /* PARAM made by the compiler (dc_const): its values, baked into the program */
    int output;       /* a graph output */
    int node;         /* COMPUTED: the node writing it */
    int dead;         /* its node was removed by dce */
    int internal;     /* lastuse: written and read only inside one kernel */
    int last_use;     /* lastuse: position of the last kernel reading it, -1 */
    int whole_value;  /* COMPUTED: holds the graph value of its name whole (ISA_TF_VALUE) */
    int *parts, nparts; /* made by fuse_siblings: these buffers concatenated along dim cat_dim (a
                           PARAM's parameters along 0, an output's outputs [M, N] along 1); it has
                           no tensor of its own, the layout lays its parts one after another */
    int cat_dim;
    int ranged;       /* INPUT: declared with range=[lo, hi] (the runtime checks it before a run) */
    int64_t lo, hi;
    int nan_axis;     /* INPUT: ir_mask_axis's, IR_MASK_NONE: its -inf uploaded as the stand-in (ISA_TF_NANROW) */
    int64_t wrap_rows; /* PARAM only row gathers read (ir_only_row_gathers): their tables' rows, a
                          negative position counted from the end (ISA_TF_WRAP); 0: none */
} ir_buf;

int64_t ir_dtype_size(gr_dtype dt);
int64_t ir_buf_bytes(const ir_buf *b);

/* The marks of a source op (ir_prog.host), which the host fallback's
 * attempts set one at a time (docs/compiler.md, "Host ops"). */
enum {
    IR_SRC_HOST = 1,  /* it runs on the host */
    IR_SRC_APART = 2, /* its pointwise nodes stay out of matmul epilogues (own row kernels) */
    IR_SRC_CUT = 4,   /* no row fusion joins ops before it with it or after (a refused kernel cut) */
    IR_SRC_AHEAD = 8, /* on the host ahead of a product its refused kernel held (back if the product goes) */
    IR_SRC_ALONE = 16, /* no horizontal fusion joins a kernel holding its nodes (a refused one undone) */
};

/* ---- Nodes ---- */

/* HOST: a source op that runs on the host (the host fallback, docs/compiler.md):
 * no loops; it reads its input buffers whole and writes `out`. */
typedef enum { IR_POINTWISE, IR_REDUCTION, IR_MATMUL, IR_HOST } ir_node_kind;
extern const char *const ir_node_kind_names[]; /* "pointwise", ... */
typedef enum { IR_RSUM, IR_RMAX, IR_RMIN } ir_reduce_op;
extern const char *const ir_reduce_names[];    /* "sum", "max", "min" */

/* A read of a buffer at an index; star: at an index known only at run
 * time (a gather), i.e. possibly anywhere in the buffer. */
typedef struct {
    int buf;
    int star;
    ir_index idx;
} ir_dep;

/* One loop nest writing the buffer `out` at the flat offset `store`.
 *   POINTWISE  loops i0.. over the output's elements; out[store] = body.
 *   REDUCTION  loops i0.. over the output's elements (whether the op kept
 *              the reduced dims as extent 1 or dropped them, the buffer's
 *              shape says), then r0.. over the reduced elements (the last
 *              nred loops); out[store] = rop over the r loops of body.
 *   MATMUL     loops b0.. (batch), m, n, k (all kept, even of extent 1);
 *              out[store] = sum over k of load(a, aidx) * load(b, bidx);
 *              body is -1.  Pointwise nodes fused after it form its
 *              epilogue (`epi`). */
typedef struct {
    ir_node_kind kind;
    int out;
    int nvars;
    int64_t ranges[IR_MAX_VARS];
    int nred;          /* REDUCTION */
    ir_reduce_op rop;  /* REDUCTION */
    int nbatch;        /* MATMUL: nvars = nbatch + 3 */
    int body;
    ir_index store;
    int a, b;          /* MATMUL operands (buffers) and their indices */
    ir_index aidx, bidx;
    int *ops, nops;    /* the source ATen ops lowered into it (prog->src), by line */
    int *hin, nhin;    /* HOST: the buffers it reads, one per tensor argument of its source op (ops[0]) */
    int *hout, nhout;  /* HOST: its other results (a tuple's elements after the first, `out`) */
    ir_dep *reads;     /* deps */
    int nreads;
    int dead;          /* dce */
    int kernel;        /* deps: the kernel holding it */
    int epi;           /* POINTWISE node in a MATMUL kernel (an epilogue):
                          its value as an expression of the template's
                          variables and acc, stored at epi_store; else -1 */
    ir_index epi_store;
} ir_node;

/* The source op node n computes (its last by line; the others are folded
 * into it), or -1 when it has none. */
static inline int ir_node_op(const ir_node *n) { return n->nops ? n->ops[n->nops - 1] : -1; }

/* Names of node n's variables ("i0", "r0", "m", ...). */
const char *const *ir_node_var_names(const ir_node *n);

/* The loop structure of a kernel (or a node): extents, none of them 1.
 *   POINTWISE  outer = the loop dims
 *   REDUCTION  outer = the kept dims, red = the reduced dims
 *   MATMUL     outer = b.., m, n; red = k (the template's own loops)
 * A kernel's structure is the common refinement of its nodes' (a loop of
 * 4096 and loops of 32 x 128 run as 32 x 128: splitting a loop keeps every
 * index affine).  A pointwise node joins a REDUCTION kernel as a row op
 * (its loops cover outer and red: one value per element) or a per-row op
 * (its loops cover outer), and a MATMUL kernel when its loops coarsen the
 * template's b.., m, n (then it can be written in the template's variables). */
typedef struct {
    ir_node_kind kind;
    int nouter, nred;
    int64_t outer[IR_MAX_VARS], red[IR_MAX_VARS];
} ir_sig;

void ir_node_sig(const ir_prog *p, int n, ir_sig *s);
/* The structure of a kernel holding what a and b hold; -1 if none. */
int ir_sig_join(const ir_sig *a, const ir_sig *b, ir_sig *out);
/* Node n's variables in the kernel structure s: vars[v] is an index over
 * s's positions (outer then red).  -1 if n does not fit s. */
int ir_node_vars(const ir_prog *p, int n, const ir_sig *s, ir_index *vars);
void ir_sig_print(const ir_sig *s, FILE *f);

/* ---- Kernels ---- */

/* The most nodes one kernel holds, and the most loads (reads of buffers
 * it does not write, one per buffer and index) a row kernel makes: the
 * back half keeps a kernel's node values and loads in arrays of this many
 * (be_rows.c, be_matmul.c, be_mmblock.c, be_ring.c, be_sfp.c), and fusion
 * builds no larger kernel. */
#define IR_KERNEL_NODES 64
#define IR_KERNEL_LOADS 256

/* The front half plans convolutions for a 128-byte stick of DL16 (the
 * back half reads the target's lanes): its lanes, and the most K an
 * im2col product (lower_conv.c conv_shape) or a Conv3d's stacked depth taps
 * (dec_convt.c) take. */
#define IR_STICK_LANES 64
#define IR_IM2COL_MAX_K 256

typedef struct {
    ir_node_kind kind; /* MATMUL if it holds one, else REDUCTION if it holds one, else POINTWISE */
    int *nodes, nnodes; /* in execution order */
    int dead;          /* merged into another kernel */
    char *name;        /* order: "k3_softmax" */
    int pos;           /* order: position in the execution order */
    int *ops, nops;    /* order: the source ops of its nodes, by line */
    ir_sig sig;        /* its loop structure */
    int joined;        /* fuse_horizontal joined independent kernels into it */
} ir_kernel;


/* ---- The program ---- */

typedef struct {
    char *name;        /* the graph value */
    int buf;
    gr_ttype type;     /* may differ from the buffer's shape (a reshaped output) */
} ir_output;

/* A state update of the source graph (docs/graph-format.md, "State"):
 * the positions `index` (an input) along `dim` of state `state` (a
 * parameter) get the rows of `src` (an output); codegen writes them by
 * dma.scatter (be_update.c).  Graph value names. */
typedef struct {
    char *state, *index, *src;
    int dim, line;
} ir_update;

typedef struct {
    char *op;          /* "aten.native_layer_norm.default" */
    int line;
} ir_srcop;

/* The compiler's state, passed from pass to pass; also the result
 * returned to the user (struct cc_result in cc.h). */
/* A constant a decomposition made: value `value` of dg holds `data`. */
typedef struct {
    int value;
    float *data;
} ir_dconst;

struct cc_result {
    cc_compile_opts opts;
    char *path;        /* of the source graph, for messages */
    char *gname;
    char *err;
    size_t errlen;
    const char *stage; /* the last pass run */
    const gr_graph *graph;     /* the source graph, while the front half runs (decompose reads it) */
    const chip_config *chip;   /* the target, while the back half runs (layout reads it) */

    ir_srcop *src;     /* the source graph's nodes */
    int nsrc;
    char *host;        /* per source node: its IR_SRC_* marks (the host fallback, docs/compiler.md) */
    int fail_src;      /* the source node a pass failed on (the fallback's candidate), -1 none */
    int fail_kernel;   /* the kernel the back half refused (its source ops are the candidates), -1 none */
    int fail_epilogue; /* the source op of an epilogue node whose operand a matmul kernel could not
                          load (kept apart and compiled again, before any host op), -1 none */

    gr_graph *dg;      /* decompose: the graph in core ops (lower frees it, with dfrom and dconsts) */
    int *dfrom;        /* per node of dg: the source node it comes from */
    ir_dconst *dconsts; /* dg's constants (dc_const): their values, until lower moves them to buffers */
    int ndconsts;
    int *dnan;         /* per value of dg: an input's ir_mask_axis (decompose asks it, lower keeps it) */

    ir_arena A;
    ir_buf *bufs;
    int nbufs, capbufs;
    const char **bnames; /* bufs[i].name, as the expression printer wants them */
    int capbnames;
    ir_node *nodes;
    int nnodes, capnodes;
    ir_output *outputs;
    int noutputs;
    ir_update *updates;  /* decompose: the graph's state updates */
    int nupdates;

    int nsiblings;     /* fuse_siblings: groups of products it fused */
    int deps_done;
    ir_kernel *kernels;
    int nkernels;
    int *order;        /* order: kernel ids in execution order */
    int norder;
    int lastuse_done;
    int64_t peak_bytes; /* lastuse: most bytes of buffers between kernels alive at once */

    char *graph_text;  /* the source graph as gr_graph_print writes it (the program's graph) */
    struct be_ctx *be; /* the back half's state (backend.h), after layout */
    isa_program *program; /* codegen: the program (cc_compile with a target) */
    /* the row kernels' span cache that cc_compile's attempts share (their
     * plans walk the same loads: be_rows.c), or NULL: the be_ctx's own */
    struct be_spancache **spans;
    double floor; /* cc_compile: be_estimate_floor of the plan, once asked (0: not yet) */
};

/* ---- Passes (each returns 0, or -1 with a message in p->err) ---- */

/* The pass table (passes.c): run its front half (back 0) or back half
 * (back 1) in order, from the pass named `from` (NULL: the first) up to
 * the one named `until`, which does not run (NULL: to the end), dumping
 * after opts.dump_after; -1 when a pass failed.  ir_pass_check: 0 when
 * `name` is a pass (of the back half too with a target), else -1 with
 * "unknown pass ..." in err. */
int ir_run_passes(ir_prog *p, int back, const char *from, const char *until);
/* The back half in two parts (cc_codegen runs both): ir_back_plan the
 * passes before codegen, after which the plan's estimates can be read
 * (be_estimate_floor), -1 when one failed (the plan freed); then
 * ir_back_finish codegen and the rest: the program, or NULL (the plan
 * freed).  Errors into err. */
int ir_back_plan(ir_prog *p, const chip_config *cfg, char *err, size_t errlen);
isa_program *ir_back_finish(ir_prog *p, const chip_config *cfg, char *err, size_t errlen);
int ir_pass_check(const char *name, int target, char *err, size_t errlen);

int ir_decompose(ir_prog *p, const gr_graph *g); /* decompose.c */
/* Is input x of g used only as an additive term of softmaxes (through
 * views, a positive scale), so that a row of its -inf along the softmax's
 * axis may be uploaded as NaN (ISA_TF_NANROW)?  That axis of x, -1 when x
 * broadcasts along it (each element a row), else IR_MASK_NONE.  maskrows.c */
#define IR_MASK_NONE (-2)
int ir_mask_axis(const gr_graph *g, int x);
int ir_lower(ir_prog *p);                        /* lower.c */
/* What decompose left for lower (dg, dfrom, dnan, dconsts), freed (lower.c). */
void ir_free_dgraph(ir_prog *p);
int ir_check_int_exact(ir_prog *p);              /* intexact.c: run by ir_lower */
/* Does buffer b hold the row numbers of a gather (an ILOAD's index is a
 * load of b, through integer casts)?  intexact.c */
int ir_gather_rows(const ir_prog *p, int b);
/* The row numbers gather (ILOAD) x reads: its index expression past any
 * integer casts (an expression of A, or -1). */
int ir_gather_ids(const ir_arena *A, const ir_expr *x);
int ir_deps(ir_prog *p);                         /* schedule.c */
int ir_dce(ir_prog *p);
int ir_fuse_siblings(ir_prog *p);               /* siblings.c */
/* Would ir_fuse_siblings fuse some products of p (p unchanged)? */
int ir_siblings_fuse_some(ir_prog *p);
/* After a pass rewrote node n: its reads again, and its kernel's loops. */
void ir_node_redeps(ir_prog *p, int n);
int ir_fuse_vertical(ir_prog *p);
int ir_fuse_reduction(ir_prog *p);
int ir_fuse_epilogue(ir_prog *p);
int ir_fuse_horizontal(ir_prog *p);
int ir_order(ir_prog *p);
int ir_lastuse(ir_prog *p);
/* The back half (backend.c): each needs the one before. */
int be_layout_pass(ir_prog *p, const chip_config *cfg);
int be_workdiv_pass(ir_prog *p);
int be_lxplan_pass(ir_prog *p); /* be_lxplan.c */
int be_codegen_pass(ir_prog *p);
int be_reroll_pass(ir_prog *p); /* be_reroll.c */
void be_free(ir_prog *p);
/* A span cache cc_compile's attempts shared (ir_prog.spans). */
void be_spancache_free(struct be_spancache *sc);
void be_print(const ir_prog *p, const char *pass, FILE *f);
/* The back half's estimate for the program's kernel `name` (a kernel, or
 * a ring exchange NAME.xchg), in cycles; -1 when there is none. */
double be_estimate(const ir_prog *p, const char *name);
/* The sum of the estimates of every kernel and ring exchange (cycles). */
double be_estimate_total(const ir_prog *p);
/* After ir_back_plan, before codegen: a lower bound of what
 * be_estimate_total will be after codegen (each kernel's estimate is its
 * kind's cost model's or, when more, its DMA units' time in the code
 * generated: kernel_boundary). */
double be_estimate_floor(ir_prog *p);
/* The reroll pass's dump (what "reroll") or its section of the report
 * ("report"): instructions per kernel before and after, loops. */
void be_reroll_print(const ir_prog *p, const char *what, FILE *f);
/* The lxplan pass's dump: each kernel's working LX, the tensors kept in
 * LX (where, how long), the spills and the ring exchanges (be_lxplan.c). */
void be_lxplan_print(const ir_prog *p, const char *pass, FILE *f);

/* ---- Helpers (ir.c) ---- */

void *ir_xalloc(size_t n);           /* calloc that aborts when out of memory */
void *ir_xmalloc(size_t n);          /* the same, not zeroed: for large buffers written before read */
void *ir_xlines(size_t n);           /* ir_xalloc in whole 64-byte cache lines (free it with free): rows
                                        that two threads write each their own of */
void *ir_xgrow(void *p, int *cap, int need, size_t elem);
char *ir_xstrdup(const char *s);
void *ir_xmemdup(const void *p, size_t n); /* a copy of p's n bytes (ir_xmalloc); NULL for p NULL */
/* Are names a and b equal?  Their first letters compared before the call:
 * the op and value tables are searched name by name, and most names
 * differ there (187 strcmp calls a node of an op without a decomposition
 * rule were 0.5% of the Llama-8B decode step's compile). */
static inline int ir_name_eq(const char *a, const char *b) { return a[0] == b[0] && !strcmp(a, b); }
/* qsort's order of ints, ascending (for values far from INT_MIN/INT_MAX:
 * op, node and kernel numbers). */
static inline int ir_cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* The greatest common divisor of a and b (a transposed conv's phases, a
 * staged kernel's row unit). */
static inline int64_t ir_gcd(int64_t a, int64_t b)
{
    while (b) {
        const int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}
char *ir_xsprintf(const char *fmt, ...); /* a new string of any length */
/* A new string a.b (ir_xsprintf("%s.%s") without the format's two passes:
 * the decomposition names every node it adds so, 1,000 host instructions
 * a name). */
char *ir_xdotted(const char *a, const char *b);
void ir_arena_free(ir_arena *A);

/* A new buffer (its name made unique); returns its id. */
int ir_buf_new(ir_prog *p, const char *name, const gr_ttype *t, ir_buf_kind kind);
/* A new node writing buffer out; returns its id (fields to be filled). */
int ir_node_new(ir_prog *p, ir_node_kind kind, int out);
/* Simplify a new node's loops: drop extent-1 loops and merge neighbouring
 * loops that every index walks contiguously (i0 of 2 and i1 of 16 become
 * one loop of 32 when each index has coef(i0) = 16 coef(i1)), as
 * Inductor's simplify_loops; reduced loops merge only with reduced ones.
 * A MATMUL keeps its loops (its indices only lose extent-1 terms). */
void ir_node_simplify(ir_prog *p, int n);
/* Rewrite node n onto new loops (nvars, ranges, nred): its old variable v
 * becomes map[v], an index over the new ones. */
void ir_node_remap(ir_prog *p, int n, int nvars, const int64_t *ranges, int nred, const ir_index *map);

/* Type promotion as PyTorch does it: operand i has dtype dt[i] and kind
 * cls[i]: 0 a tensor with dimensions, 1 a 0-d tensor, 2 a Python scalar
 * (dt: GR_BOOL, GR_I64 or GR_F64 for bool, int, float). */
gr_dtype ir_promote(int n, const gr_dtype *dt, const int *cls);
int ir_dtype_is_float(gr_dtype dt);
/* Broadcast shapes a and b into out; -1 if they do not broadcast. */
int ir_broadcast(const gr_ttype *a, const gr_ttype *b, gr_ttype *out);

/* A user error at a line of the source graph (-1: none): "FILE:LINE:
 * message" into p->err.  Returns -1.  ir_refuse: the same for an op the
 * compiler cannot do, at source node src, which the host fallback then
 * runs on the host (cc_compile marks it and compiles again). */
int ir_refuse(ir_prog *p, int src, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int ir_error(ir_prog *p, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Dumps: the state after the last pass, in text (docs/compiler.md). */
void ir_print(const ir_prog *p, FILE *f);
void ir_print_dgraph(const ir_prog *p, FILE *f);
void ir_print_node(const ir_prog *p, int n, FILE *f); /* one line */
void ir_print_kernel(const ir_prog *p, int k, FILE *f);
/* The buffers kernel k reads from / writes to memory (not counting what
 * its own nodes produce and consume), as buffer id lists; returns counts. */
void ir_kernel_io(const ir_prog *p, int k, int *reads, int *nreads, int *writes, int *nwrites);
/* A buffer is internal to kernel k: written by a node of k, read only by
 * nodes of k, not a graph output. */
int ir_buf_is_internal(const ir_prog *p, int b);

#endif
