/* sd_internal.h: the parsed form of SDSC kernels, shared by the reader
 * (sd_parse.c), the checks (sd_check.c) and the translation (sd_build.c). */
#ifndef SD_INTERNAL_H
#define SD_INTERNAL_H

#include "sd.h"

#include <stdarg.h>

#define SD_MAX_DIMS 8
#define SD_MAX_CORES 256
#define SD_MAX_TENSORS 16  /* read; the chip's cap (SD_TENSOR_CAP) is a check */
#define SD_MAX_OPS 8
#define SD_MAX_ELEM 6
#define SD_MAX_KERNELS 64
#define SD_MAX_ARGS 64
#define SD_NAME 64
/* RFC 0552: "Total tensors must not exceed 8 LDS segments". */
#define SD_TENSOR_CAP 8
/* The bytes of DRAM one core's slice of a tensor may span: a hardware
 * limit of the backend's addressing that torch-spyre's work division
 * enforces (docs/source/compiler/scratchpad_planning.md: "Per-core HBM
 * span limit (256 MB)"). */
#define SD_CORE_SPAN_BYTES (256ull << 20)

typedef struct {
    int64_t factor, alpha;
} sd_fold;

/* How one dimension of a tensor's allocation maps to coordinates:
 * coordinate = core.alpha * slice + sum over k of elem[k].alpha * i_k,
 * i_k < elem[k].factor (elem[] as listed: elem_arr_{n-1} .. elem_arr_0). */
typedef struct {
    int dim; /* index into sd_kernel.dims, -1 when unknown */
    sd_fold core;
    int nelem;
    sd_fold elem[SD_MAX_ELEM];
} sd_coord;

typedef struct {
    char name[SD_NAME]; /* dsName_: Tensor0 */
    int lds;            /* ldsIdx_ */
    char type[16];      /* dsType_ */
    int f32;            /* IEEE_FP32 (else SEN169_FP16: DL16) */
    int lx;             /* allocated in LX (else DRAM) */
    int has_alloc;
    int alloc_index;    /* its allocate node in scheduleTree_ */
    int64_t start[SD_MAX_CORES]; /* per core: LX offset, or the DRAM symbol (< 0) */
    int nlayout;
    int layout[SD_MAX_DIMS]; /* layoutDimOrder_, innermost first */
    int stick;               /* dim of the stick (elemArr 2), -1 none */
    int ncoord;
    sd_coord coord[SD_MAX_DIMS];
    int arg;                 /* kernel argument, -1 for an LX tensor */
    /* What bundle.mlir binds the DRAM symbols to: the function argument
     * (-1 without bundle.mlir) and, per core, the byte offset of the
     * core's slice from that argument's base (bundle.mlir's operand). */
    int bound_arg;
    int64_t bound_off[SD_MAX_CORES]; /* plus 1: 0 when not bound */
    int bound_line[SD_MAX_CORES];    /* where that address is computed */
} sd_tensor;

typedef struct {
    char unit[16];  /* exUnit: sfp, pt */
    char func[SD_NAME];
    int f32;
    int nin, nout;
    int in[4], out[2]; /* tensor indices */
} sd_op;

typedef struct {
    char name[16];
    int64_t n, slices, stage;
} sd_dim;

typedef struct {
    char file[256];   /* sdsc_N.json */
    int seq;          /* N */
    char top[SD_NAME];
    char dsc[SD_NAME];
    char aten[SD_NAME];
    int ncores;
    int core_used[SD_MAX_CORES];
    int slice[SD_MAX_CORES][SD_MAX_DIMS];
    int ndims;
    sd_dim dims[SD_MAX_DIMS];
    int nt;
    sd_tensor t[SD_MAX_TENSORS];
    int nops;
    sd_op ops[SD_MAX_OPS];
    int nconsts;
    float consts[4];  /* constantInfo_ values (mean's scaling factor) */
    int run_line;     /* the line of bundle.mlir's sdsc_execute of it, 0 without one */
    int parsed;       /* the model is complete enough to check and build */
    char unsupported[1536]; /* what the translation cannot do, "" when none */
} sd_kernel;

typedef struct {
    int kernel, tensor; /* the first DRAM tensor bound to it */
    int bound;          /* bundle.mlir's function argument, -1 without one */
    int input;
    sd_spec spec;
    char name[16];
} sd_arg;

struct sd_bundle {
    char dir[1024];
    int nk;
    sd_kernel *k;
    int nargs, nin;
    sd_arg args[SD_MAX_ARGS];
    char *problems;
    size_t plen, pcap;
    int nproblems;
    char unsupported[512]; /* what of bundle.mlir the translation cannot run, "" when none */
};

/* One problem line "FILE: PATH: rule" (path and rule printf-style). */
void sd_problem(sd_bundle *b, const sd_kernel *k, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* One problem line "FILE:LINE: rule" (bundle.mlir's; file NULL: the
 * rule alone, a message that names its place itself). */
void sd_problem_at(sd_bundle *b, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Parse one file into k (problems of its form go to b). */
void sd_parse_file(sd_bundle *b, sd_kernel *k, const char *text);
/* The semantic and chip rules over every parsed kernel. */
void sd_check_all(sd_bundle *b, const chip_config *cfg);
/* bundle.mlir of the directory, when there is one (sd_mlir.c): the
 * kernels put in the order it executes them, each DRAM symbol bound to
 * its argument and offset, and both cross-checked against the JSON
 * (stick_bytes: the chip's, for the layout's offsets). */
void sd_read_mlir(sd_bundle *b, int64_t stick_bytes);
/* The kernel arguments (b->args) from the DRAM tensors. */
void sd_find_args(sd_bundle *b);

/* Bounds the reader holds sizes to, so that products of them stay exact
 * or saturate (sd_mul) instead of overflowing. */
#define SD_SIZE_MAX (1ll << 40)
#define SD_BIG (1ll << 62)
static inline int64_t sd_mul(int64_t a, int64_t b)
{
    return a <= 0 || b <= 0 ? 0 : a > SD_BIG / b ? SD_BIG : a * b;
}

static inline int64_t sd_add(int64_t a, int64_t b)
{
    return a > SD_BIG - b ? SD_BIG : a + b;
}

/* Bytes per element of a tensor. */
static inline int sd_word(const sd_tensor *t) { return t->f32 ? 4 : 2; }
/* Per-core extent of a tensor's dimension (the product of its elem
 * factors, positions) and the coordinates it spans (1 when reduced). */
int64_t sd_coord_positions(const sd_coord *c);
int64_t sd_coord_extent(const sd_coord *c);
/* Is tensor i of k written by one of k's ops (an output, not an input)? */
int sd_written(const sd_kernel *k, int i);
/* A tensor's coordinate of dim d, or NULL. */
const sd_coord *sd_tensor_coord(const sd_tensor *t, int d);



/* sd_args.c: the host dims of a DRAM tensor in the generic stick layout
 * (host[i] = kernel dim; the rank, or -1 when its layout is another), and
 * the host extent of kernel dim d (1 for a reduced dim). */
int sd_host_dims(const sd_tensor *t, int host[SD_MAX_DIMS]);
int64_t sd_host_extent(const sd_kernel *k, const sd_tensor *t, int d);
/* The device order of a DRAM tensor's dims: its layoutDimOrder_ as
 * isa_tensor.order (0: the runtime's default, every rank-2 tensor). */
uint32_t sd_device_order(const sd_tensor *t);
/* The byte offset, in the layout the program gives the tensor (host dims
 * in the generic stick layout, sd_device_order), of the element at kernel
 * coordinates idx[] (per kernel dim; a reduced dim's is 0); -1 when the
 * tensor is not in that layout or idx lies outside it. */
int64_t sd_layout_offset(const sd_kernel *k, const sd_tensor *t, const int64_t *idx, int64_t stick_bytes);

/* ---- the translation (sd_build.c, sd_emit.c, sd_graph.c) ---- */

#include "codegen.h"

typedef struct {
    const sd_bundle *b;
    const chip_config *cfg;
    isa_program *p;
    const sd_spec *specs;  /* per argument */
    char *graph;           /* the graph text being written */
    size_t glen, gcap;
    char (*value)[SD_MAX_TENSORS][SD_NAME]; /* the graph value of each kernel's tensors */
    uint64_t lx_base;      /* LX above every tensor the SDSC places there: staging buffers */
    int dram_order;        /* the kernel being emitted stages its operands in DRAM order (sd_emit.c) */
    char *err;
    size_t errlen;
} sd_ctx;

/* Can the translation run kernel k's op (sd_emit.c's table)?  0, or -1
 * with a message. */
int sd_emit_supported(const sd_kernel *k, char *err, size_t errlen);
/* One core's part of kernel k: loads, the op, the store. */
void sd_emit_kernel(sd_ctx *x, cc_emit *e, const sd_kernel *k, int core);
/* Is a tensor's dim d reduced (one coordinate where the kernel has more)? */
int sd_reduced(const sd_kernel *k, const sd_tensor *t, int d);

/* The graph text of the bundle into x->graph (sd_graph.c); whether the
 * reference knows kernel ki's ATen op. */
int sd_graph_write(sd_ctx *x);
int sd_graph_supported(const sd_kernel *k, char *err, size_t errlen);
void sd_gputs(sd_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
