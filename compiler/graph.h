/* graph.h: ATen-level graphs as text (docs/graph-format.md): the parsed
 * form shared by the compiler (which lowers it) and the runtime's
 * reference executor (which runs it as written).  Parsing builds the
 * graph and checks what the text alone can tell: syntax, names defined
 * once, every use defined, no cycle.  Shapes are checked by whoever
 * interprets the ops. */
#ifndef CC_GRAPH_H
#define CC_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CC_MAX_RANK 8

typedef enum { CC_F32, CC_F16, CC_BF16, CC_F64, CC_I64, CC_I32, CC_BOOL, CC_NDTYPES } cc_dtype;
extern const char *const cc_dtype_names[]; /* "f32", "f16", "bf16", "f64", "i64", "i32", "bool" */

typedef struct {
    cc_dtype dtype;
    int rank;
    int64_t shape[CC_MAX_RANK];
} cc_ttype;

typedef enum {
    CC_ARG_VALUE, /* a graph value: %name */
    CC_ARG_INT,
    CC_ARG_FLOAT,
    CC_ARG_BOOL,
    CC_ARG_NONE,
    CC_ARG_STR,   /* "text" */
    CC_ARG_DTYPE, /* a dtype name used as an argument, e.g. dtype=f16 */
    CC_ARG_LIST,  /* [a, b, ...] of any of the above */
} cc_arg_kind;

typedef struct cc_arg {
    cc_arg_kind kind;
    char *key;       /* keyword name, or NULL for a positional argument */
    int value;       /* CC_ARG_VALUE: index into graph->values */
    int64_t i;       /* CC_ARG_INT, CC_ARG_BOOL (0/1), CC_ARG_DTYPE (cc_dtype) */
    double f;        /* CC_ARG_FLOAT */
    char *s;         /* CC_ARG_STR */
    struct cc_arg *items; /* CC_ARG_LIST */
    int nitems;
} cc_arg;

typedef enum { CC_VAL_INPUT, CC_VAL_PARAM, CC_VAL_NODE } cc_value_kind;

/* A named value.  A node result is a tensor, or a tuple of tensors (a
 * multi-output op); `getitem(%t, i)` picks one. */
typedef struct {
    char *name;      /* without the % */
    cc_value_kind kind;
    cc_ttype type;   /* the tensor type (for a tuple: unused) */
    int ntuple;      /* > 0: a tuple of ntuple tensors with types tuple[] */
    cc_ttype *tuple;
    int node;        /* defining node for CC_VAL_NODE, else -1 */
    char *param_key; /* CC_VAL_PARAM: its key in the weights file */
    int line;        /* where it is defined */
} cc_value;

typedef struct {
    char *op;        /* as written: "aten.add.Tensor", "getitem" */
    char *base;      /* without namespace and overload: "add", "getitem" */
    cc_arg *args;
    int nargs;
    int out;         /* index of the value it defines */
    int line, col;   /* of the op name */
} cc_node;

typedef struct {
    char *name;          /* `graph NAME`, or the file's base name */
    char *path;          /* file it was read from (for messages) */
    char *weights;       /* `weights "FILE"`, relative to the graph file's directory, or NULL */
    cc_value *values;
    int nvalues;
    cc_node *nodes;      /* in a topological order (the parser sorts them) */
    int nnodes;
    int *inputs, ninputs;   /* value indices, in declaration order */
    int *params, nparams;
    int *outputs, noutputs; /* `output %a, %b` */
    char **hints;           /* `hint ...` lines, verbatim, for later passes */
    int nhints;
} cc_graph;

/* Parse graph text.  Errors: "FILE:LINE:COL: message" (what was expected
 * and what was found), NULL returned. */
cc_graph *cc_graph_parse(const char *text, const char *path, char *err, size_t errlen);
/* Read and parse a file; a directory is taken as an export directory
 * holding graph.txt. */
cc_graph *cc_graph_load(const char *path, char *err, size_t errlen);
void cc_graph_free(cc_graph *g);
/* Print in the text format (parses back to the same graph). */
void cc_graph_print(const cc_graph *g, FILE *f);
/* Print one argument as the text format writes it. */
void cc_arg_print(const cc_graph *g, const cc_arg *a, FILE *f);

/* Helpers for interpreters of the graph. */
int cc_graph_find(const cc_graph *g, const char *name); /* value index or -1 */
int64_t cc_ttype_numel(const cc_ttype *t);
/* An int or a list of at most CC_MAX_RANK ints into out: the count; -1
 * when a is NULL or None; -2 when it is anything else. */
int cc_arg_ints(const cc_arg *a, int64_t *out);
/* Argument by position (counting positional ones only) or keyword; NULL if absent. */
const cc_arg *cc_node_arg(const cc_node *n, int pos, const char *key);

/* ---- Additions (helpers shared by the compiler and the runtime) ---- */

/* A type as the text writes it: "f32[8, 64]", "f32[]"; the tuple of a
 * multi-output value is written by cc_value_type_str. */
void cc_ttype_str(const cc_ttype *t, char *buf, size_t len);
/* The type of a value: its tensor type, or "(f32[8, 64], f32[8, 1])". */
void cc_value_type_str(const cc_value *v, char *buf, size_t len);
/* FILE (e.g. g->weights) taken relative to the directory of the graph
 * file g->path; FILE itself when absolute or when the graph has no
 * directory.  A new string (free() it). */
char *cc_graph_relpath(const cc_graph *g, const char *file);
/* The dtype named by "f32", "i64", ...; -1 if none. */
int cc_dtype_parse(const char *name);
/* Device tensor names are at most CC_TENSOR_NAME_MAX - 1 bytes (the ELF's
 * ISA_NAME_MAX); value names have any length.  The tensor of value (or
 * weight key) `name` is named `name` when it fits, else its first 46
 * bytes, '~' (which no value name contains) and 16 hex digits of a hash
 * of the whole name. */
#define CC_TENSOR_NAME_MAX 64
void cc_tensor_name(const char *name, char buf[CC_TENSOR_NAME_MAX]);
/* The value whose tensor cc_tensor_name names `tensor`, or -1. */
int cc_graph_find_tensor(const cc_graph *g, const char *tensor);

#endif
