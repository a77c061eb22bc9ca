/* graph.h: ATen-level graphs as text (docs/graph-format.md): the parsed
 * form shared by the compiler (which lowers it) and the runtime's
 * reference executor (which runs it as written).  Parsing builds the
 * graph and checks what the text alone can tell: syntax, names defined
 * once, every use defined, no cycle.  Shapes are checked by whoever
 * interprets the ops. */
#ifndef GR_GRAPH_H
#define GR_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GR_MAX_RANK 8
#define GR_RANGE_MAX (1LL << 24) /* an input's range=[lo, hi] stays within +-this */

typedef enum { GR_F32, GR_F16, GR_BF16, GR_F64, GR_I64, GR_I32, GR_BOOL, GR_NDTYPES } gr_dtype;
extern const char *const gr_dtype_names[]; /* "f32", "f16", "bf16", "f64", "i64", "i32", "bool" */

typedef struct {
    gr_dtype dtype;
    int rank;
    int64_t shape[GR_MAX_RANK];
} gr_ttype;

typedef enum {
    GR_ARG_VALUE, /* a graph value: %name */
    GR_ARG_INT,
    GR_ARG_FLOAT,
    GR_ARG_BOOL,
    GR_ARG_NONE,
    GR_ARG_STR,   /* "text" */
    GR_ARG_DTYPE, /* a dtype name used as an argument, e.g. dtype=f16 */
    GR_ARG_LIST,  /* [a, b, ...] of any of the above */
} gr_arg_kind;

typedef struct gr_arg {
    gr_arg_kind kind;
    char *key;       /* keyword name, or NULL for a positional argument */
    int value;       /* GR_ARG_VALUE: index into graph->values */
    int64_t i;       /* GR_ARG_INT, GR_ARG_BOOL (0/1), GR_ARG_DTYPE (gr_dtype) */
    double f;        /* GR_ARG_FLOAT */
    char *s;         /* GR_ARG_STR */
    struct gr_arg *items; /* GR_ARG_LIST */
    int nitems;
} gr_arg;

typedef enum { GR_VAL_INPUT, GR_VAL_PARAM, GR_VAL_NODE } gr_value_kind;

/* A named value.  A node result is a tensor, or a tuple of tensors (a
 * multi-output op); `getitem(%t, i)` picks one. */
typedef struct {
    char *name;      /* without the % */
    gr_value_kind kind;
    gr_ttype type;   /* the tensor type (for a tuple: unused) */
    int ntuple;      /* > 0: a tuple of ntuple tensors with types tuple[] */
    gr_ttype *tuple;
    int node;        /* defining node for GR_VAL_NODE, else -1 */
    char *param_key; /* GR_VAL_PARAM: its key in the weights file */
    int state;       /* a GR_VAL_PARAM declared by a `state` line: it persists across runs */
    int ranged;      /* an integer input declared with `range=[lo, hi]`: every value is in it */
    int64_t lo, hi;  /* (the compiler relies on it; the runtime checks it before a run), within +-GR_RANGE_MAX */
    int line;        /* where it is defined */
} gr_value;

/* `update %STATE = %VALUE`: after a run, the state holds the value.  The
 * value must be aten.index_copy.default(%STATE, DIM, %INDEX, %SRC) with
 * INDEX a graph input (the positions written) and SRC computed by the
 * graph: the compiled program writes SRC's slices into the state where it
 * lives, by dma.scatter (docs/graph-format.md, "State"). */
typedef struct {
    int state, value; /* value indices */
    int dim, index, src; /* of the index_copy: its dimension, index input and source value */
    int line;
} gr_update;

typedef struct {
    char *op;        /* as written: "aten.add.Tensor", "getitem" */
    char *base;      /* without namespace and overload: "add", "getitem" */
    gr_arg *args;
    int nargs;
    int out;         /* index of the value it defines */
    int line, col;   /* of the op name */
} gr_node;

typedef struct {
    char *name;          /* `graph NAME`, or the file's base name */
    char *path;          /* file it was read from (for messages) */
    char *weights;       /* `weights "FILE"`, relative to the graph file's directory, or NULL */
    gr_value *values;
    int nvalues;
    gr_node *nodes;      /* in a topological order (the parser sorts them) */
    int nnodes;
    int *inputs, ninputs;   /* value indices, in declaration order */
    int *params, nparams;
    int *outputs, noutputs; /* `output %a, %b` */
    gr_update *updates;     /* `update` lines, in order */
    int nupdates;
    char **hints;           /* `hint ...` lines, verbatim, for later passes */
    int nhints;
} gr_graph;

/* Parse graph text.  Errors: "FILE:LINE:COL: message" (what was expected
 * and what was found), NULL returned. */
gr_graph *gr_graph_parse(const char *text, const char *path, char *err, size_t errlen);
/* Read and parse a file; a directory is taken as an export directory
 * holding graph.txt. */
gr_graph *gr_graph_load(const char *path, char *err, size_t errlen);
void gr_graph_free(gr_graph *g);
/* Print in the text format (parses back to the same graph). */
void gr_graph_print(const gr_graph *g, FILE *f);
/* The same text, malloc'ed (the caller frees it). */
char *gr_graph_text(const gr_graph *g);
/* Print one argument as the text format writes it. */
void gr_arg_print(const gr_graph *g, const gr_arg *a, FILE *f);

/* Helpers for interpreters of the graph. */
int gr_graph_find(const gr_graph *g, const char *name); /* value index or -1 */
int64_t gr_ttype_numel(const gr_ttype *t);
/* An int or a list of at most GR_MAX_RANK ints into out (room for
 * GR_MAX_RANK): the count; -1 when a is NULL or None; -2 when it is
 * anything else. */
int gr_arg_ints(const gr_arg *a, int64_t *out);
/* Does argument a (a list: any of its items) use value v? */
int gr_arg_uses(const gr_arg *a, int v);
/* Mark value v and every value it is computed from (the nodes' arguments,
 * list items too, down to inputs and parameters): mark has a byte per
 * value; a marked value's inputs are taken as marked already. */
void gr_mark_upstream(const gr_graph *g, int v, char *mark);
/* Argument by position (counting positional ones only) or keyword; NULL if absent. */
const gr_arg *gr_node_arg(const gr_node *n, int pos, const char *key);
/* The scale of spatial axis a (of nd, 1 to 3) of an upsampling node whose
 * scale arguments start at position pos (after output_size, and
 * align_corners where the op has one): of the .vec overload, item a of
 * scale_factors (NULL unless a list of nd), else the positional scales,
 * scales_h, ... argument (NULL if absent). */
const gr_arg *gr_upsample_scale(const gr_node *n, int pos, int nd, int a);

/* ---- Additions (helpers shared by the compiler and the runtime) ---- */

/* v in decimal into out, NUL-ended, as %lld prints it (without printf:
 * graph.c's "Printing" says why); its length. */
size_t gr_int_text(long long v, char out[24]);
/* A type as the text writes it: "f32[8, 64]", "f32[]"; the tuple of a
 * multi-output value is written by gr_value_type_str. */
void gr_ttype_str(const gr_ttype *t, char *buf, size_t len);
/* The type of a value: its tensor type, or "(f32[8, 64], f32[8, 1])";
 * both cut to len as snprintf cuts. */
void gr_value_type_str(const gr_value *v, char *buf, size_t len);
/* FILE (e.g. g->weights) taken relative to the directory of the graph
 * file g->path; FILE itself when absolute or when the graph has no
 * directory.  A new string (free() it). */
char *gr_graph_relpath(const gr_graph *g, const char *file);
/* The dtype named by "f32", "i64", ...; -1 if none. */
int gr_dtype_parse(const char *name);
/* Device tensor names are at most GR_TENSOR_NAME_MAX - 1 bytes (the ELF's
 * ISA_NAME_MAX); value names have any length.  The tensor of value (or
 * weight key) `name` is named `name` when it fits, else its first 46
 * bytes, '~' (which no value name contains) and 16 hex digits of a hash
 * of the whole name. */
#define GR_TENSOR_NAME_MAX 64
void gr_tensor_name(const char *name, char buf[GR_TENSOR_NAME_MAX]);
/* The value whose tensor gr_tensor_name names `tensor`, or -1. */
int gr_graph_find_tensor(const gr_graph *g, const char *tensor);
/* The collectives between cards (docs/multicard.md), by the base name of
 * their _c10d_functional op; the runtime's rt_coll_kind follows this order. */
#define GR_NCOLL 3
extern const char *const gr_coll_names[GR_NCOLL];
/* The collective op (as written: "_c10d_functional.all_reduce.default") is, or -1. */
int gr_coll_of(const char *op);

#endif
