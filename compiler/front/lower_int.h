/* lower_int.h: the `lower` pass's private interface between lower.c and
 * lower_conv.c (its convolutions).  Module-private: included only by
 * compiler/front/lower.c and compiler/front/lower_conv.c; the pass's public
 * entry is ir_lower in ir.h. */
#ifndef LOWER_INT_H
#define LOWER_INT_H

#include "ir.h"

#include <setjmp.h>
#include <stdint.h>

typedef struct {
    gr_ttype type;     /* shape and dtype of its coordinates */
    int body;          /* expression over variables 0..rank-1 */
    int buf;           /* realized: the buffer, else -1 */
    uint64_t *ops;     /* source ops the (unrealized) expression computes */
    char *name;
    int cl;            /* (n, c, h, w) realized channels-last: next to a conv's y */
} lbase;

typedef struct {
    int base;          /* -1: not lowered */
    gr_ttype type;
    ir_index map[GR_MAX_RANK]; /* base coordinates over the value's */
    uint64_t *ops;     /* source ops of the views since the base */
} lval;

typedef struct {
    ir_prog *p;
    const gr_graph *d;
    lbase *bases;
    int nbases, capbases;
    lval **vals;       /* per value of d, in blocks of LVAL_BLOCK (val) */
    int *consumers;    /* per value of d: nodes (and outputs) reading it */
    int *flat;         /* per buffer: its flat base, or -1 */
    int capflat;
    int nwords;        /* of an ops bitset */
    int cur;           /* the node of d being lowered */
    int max_reads, max_body;
    jmp_buf fail;
} lctx;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
_Noreturn void fail(lctx *c, const char *fmt, ...);

/* Values' records a block: 1,176 bytes each (room for a map of
 * GR_MAX_RANK coordinates), one array of them over malloc's 128 KB mmap
 * threshold (the Llama-8B decode step's 121 values) was mapped, faulted
 * in page by page (35 faults) and unmapped every compile; blocks of 75 KB
 * come from the heap and go back to it for the passes after. */
enum { LVAL_BLOCK = 64 };

static inline lval *val(const lctx *c, int v)
{
    return &c->vals[v / LVAL_BLOCK][v % LVAL_BLOCK];
}

/* lower.c: source-op sets, bases and values, arguments */
uint64_t *ops_new(lctx *c);
void ops_or(lctx *c, uint64_t *dst, const uint64_t *src);
void ops_add_cur(lctx *c, uint64_t *dst);
void ops_of(lctx *c, uint64_t *dst, int v);
gr_ttype ttype(gr_dtype dt, int rank, const int64_t *shape);
ir_index contiguous(const gr_ttype *t);
int new_base(lctx *c, const gr_ttype *t, int body, const char *name);
void set_whole(lctx *c, int v, int b);
int buffer_base(lctx *c, int buf, int flat);
int read_at(lctx *c, int v, const ir_index *coords);
int new_node(lctx *c, ir_node_kind kind, const gr_ttype *t, const char *name, const uint64_t *ops);
void realize_base(lctx *c, int b);
void as_buffer_view(lctx *c, int v);
const gr_arg *arg(lctx *c, int pos, const char *key);
int tensor(lctx *c, int pos, const char *key);
double num(lctx *c, int pos, const char *key, double dflt);
int ints(lctx *c, int pos, const char *key, int64_t *out);
const gr_ttype *vtype(lctx *c, int v);
int is_graph_output(lctx *c, int v);

/* lower_conv.c */
void l_convolution(lctx *c, int out, int opi);

#endif
