/* mlir: a dialect-agnostic parser of MLIR text (ops in generic and custom
 * form, regions and blocks, attributes, types), for the front ends that
 * read torch-spyre's output (KTIR programs, SDSC bundles).
 *
 * Custom op syntax differs per dialect, so an op is kept as what the text
 * says: its results, its name, and its tail: a flat list of items (SSA
 * values, words, punctuation, attributes, types, bracketed groups, regions)
 * that the dialect's reader interprets with the helpers below.  An op's tail
 * ends at the `}` closing its region, or at a line whose first token starts
 * a new op (`%res`, `"generic.op"`, a dotted op name, `return`, `^label`).
 *
 * Errors are one line, "FILE:LINE:COL: message"; nothing here exits.  All
 * memory of a module lives in one arena freed by ml_free.
 */
#ifndef ML_MLIR_H
#define ML_MLIR_H

#include <stddef.h>
#include <stdint.h>

#define ML_MAX_RANK 8
#define ML_DYN INT64_MIN /* a dynamic dimension ('?') */

typedef struct ml_arena ml_arena;

/* ---- Types ---- */
typedef enum {
    ML_T_INDEX, ML_T_INT, ML_T_FLOAT, ML_T_NONE,
    ML_T_TENSOR, ML_T_MEMREF, ML_T_VECTOR, /* shaped builtin types */
    ML_T_DIALECT                          /* !ns.name<body> */
} ml_type_kind;

typedef struct ml_type {
    ml_type_kind kind;
    int bits;                 /* INT and FLOAT: width */
    char name[16];            /* INT, FLOAT: "i32", "f16", "bf16", ... */
    int rank;                 /* shaped (and a dialect type whose body is a shape): dims */
    int64_t shape[ML_MAX_RANK];
    struct ml_type *elem;     /* shaped: element type (NULL for a dialect type without one) */
    const char *dialect;      /* DIALECT: "ktdp.access_tile" */
    const char *body;         /* DIALECT: the raw text between < and > ("" without) */
} ml_type;

/* ---- Affine expressions, maps and sets ---- */
typedef enum { ML_AE_CONST, ML_AE_DIM, ML_AE_SYM, ML_AE_ADD, ML_AE_MUL, ML_AE_MOD, ML_AE_FLOORDIV, ML_AE_CEILDIV } ml_aexpr_kind;
typedef struct ml_aexpr {
    ml_aexpr_kind kind;
    int64_t v;                /* CONST: value; DIM, SYM: position */
    struct ml_aexpr *l, *r;
} ml_aexpr;
typedef struct {
    int ndims, nsyms, n;      /* n: results (map) or constraints (set) */
    ml_aexpr **e;             /* map: results; set: constraint expressions e >= 0 or e == 0 */
    int *eq;                  /* set: 1 for e == 0 */
} ml_affine;

/* ---- Attributes ---- */
typedef enum {
    ML_A_INT, ML_A_FLOAT, ML_A_BOOL, ML_A_STRING, ML_A_UNIT, ML_A_ARRAY, ML_A_DICT,
    ML_A_TYPE, ML_A_MAP, ML_A_SET, ML_A_DENSE, ML_A_DIALECT, ML_A_SYMBOL, ML_A_ALIAS
} ml_attr_kind;

typedef struct ml_attr {
    ml_attr_kind kind;
    int64_t i;                /* INT, BOOL */
    double f;                 /* FLOAT */
    const char *s;            /* STRING, SYMBOL, ALIAS: name; DIALECT: "ns.name" */
    const char *body;         /* DIALECT: raw text between < > ("" without) */
    int n;                    /* ARRAY, DICT: entries */
    struct ml_attr **items;   /* ARRAY: elements; DICT: values */
    const char **keys;        /* DICT: names */
    ml_type *type;            /* TYPE; INT/FLOAT/DENSE with a `: type` suffix (else NULL) */
    ml_affine *aff;           /* MAP, SET */
    struct ml_attr *dense;    /* DENSE: a scalar (splat) or nested ARRAY */
} ml_attr;

/* ---- Ops, regions, blocks ---- */
typedef struct ml_region ml_region;

typedef enum {
    ML_I_VALUE,  /* %name (s; idx for %name#idx, else -1) */
    ML_I_WORD,   /* bare identifier or ^label (s) */
    ML_I_PUNCT,  /* one of , : = -> * + - / % < > ? ... (s) */
    ML_I_ATTR,   /* attr */
    ML_I_TYPE,   /* type */
    ML_I_GROUP,  /* ( items ) */
    ML_I_LIST,   /* [ items ] */
    ML_I_REGION  /* { ops } */
} ml_item_kind;

typedef struct ml_item {
    ml_item_kind kind;
    int line, col;
    const char *s;
    int idx;
    ml_attr *attr;
    ml_type *type;
    int n;                    /* GROUP, LIST */
    struct ml_item *items;
    ml_region *region;        /* REGION */
} ml_item;

typedef struct ml_op {
    const char *name;         /* "arith.addf", "func.func", "module" */
    int line, col;
    int nres;
    const char **res;         /* result names without '%' (a %x:2 result gives "x#0", "x#1") */
    int n;                    /* tail items */
    ml_item *items;
} ml_op;

typedef struct {
    const char *name;         /* without '%' */
    ml_type *type;
} ml_arg;

typedef struct {
    const char *label;        /* without '^'; NULL for an unlabelled entry block */
    int nargs;
    ml_arg *args;
    int nops;
    ml_op *ops;
} ml_block;

struct ml_region {
    int nblocks;
    ml_block *blocks;
};

typedef struct {
    ml_arena *arena;
    const char *file;
    ml_region top;            /* the ops at file level (usually one `module`) */
    int naliases;             /* #name = attr definitions at file level */
    const char **alias_names;
    ml_attr **alias_values;
} ml_module;

/* Parse text (NUL-terminated, len bytes) named file in messages.  NULL and
 * "FILE:LINE:COL: message" in err on a syntax error. */
ml_module *ml_parse(const char *text, size_t len, const char *file, char *err, size_t errlen);
/* Read and parse a file (a regular file of at most 256 MB). */
ml_module *ml_parse_file(const char *path, char *err, size_t errlen);
void ml_free(ml_module *m);

/* ---- Helpers for dialect readers ---- */
/* An alias attribute resolved to what it names (others returned as is; NULL stays NULL). */
const ml_attr *ml_resolve(const ml_module *m, const ml_attr *a);
/* The value of key in the first `{...}` attribute dictionary among the op's
 * top-level items, or of a `key = attr` / `key : attr` pair in its tail; NULL if absent. */
const ml_attr *ml_op_attr(const ml_module *m, const ml_op *op, const char *key);
/* The item after `key` and an optional `:` or `=` in the op's tail (a LIST,
 * GROUP, ...); NULL if absent. */
const ml_item *ml_op_keyword(const ml_op *op, const char *key);
/* The first REGION item of an op at or after item index *from (moved past
 * it); NULL if none. */
const ml_region *ml_op_region(const ml_op *op, int *from);
/* The last TYPE item of the op's tail at depth 0 (its result type in most
 * custom forms); NULL if none. */
const ml_type *ml_op_last_type(const ml_op *op);
/* Make a message one line: control characters (a string's escaped
 * newline, quoted back in an error) become '?'. */
void ml_one_line(char *s);
/* Evaluate an affine expression with dims d[] and symbols s[]; -1 on a
 * division by zero or overflow. */
int ml_aexpr_eval(const ml_aexpr *e, const int64_t *d, const int64_t *s, int64_t *out);
/* Number of elements of a shaped type (1 for rank 0); -1 if dynamic or overflowing. */
int64_t ml_type_elems(const ml_type *t);

#endif
