/* decompose.h: the decompose pass's rule-building kit, shared by the files
 * that hold its rules (decompose.c, dec_*.c).  A rule reads the source
 * node's arguments (dc_val, dc_num, dc_ints ...) and emits core ops with
 * their result types (dc_bin, dc_red, dc_where ...); da_* build the
 * arguments of a node emitted by hand (DC_EMIT). */
#ifndef CC_DECOMPOSE_H
#define CC_DECOMPOSE_H

#include "ir.h"

#include <setjmp.h>

typedef struct {
    ir_prog *p;
    const gr_graph *g; /* source */
    gr_graph *d;       /* being built */
    int capvalues, capnodes;
    int *vmap;         /* source value -> d value (-1: a tuple) */
    int **tmap;        /* source tuple value -> its elements' d values */
    int *res;          /* the results of a rule (capacity nres) */
    int nres;
    int cur;           /* the source node being decomposed */
    int fresh;         /* d values from here on were made by the current rule */
    char *mask;        /* source value -> 1: an input that is a softmax mask (ir_mask_axis) */
    jmp_buf fail;
} dctx;

/* A user error at the source node being decomposed: "FILE:LINE: op: ..." */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
_Noreturn void dc_fail(dctx *c, const char *fmt, ...);

int dc_emit(dctx *c, const char *op, gr_ttype t, int nargs, const gr_arg *args);
gr_arg da_val(int v);
gr_arg da_int(int64_t i);
gr_arg da_num(double f);
gr_arg da_bool(int b);
gr_arg da_ints(int n, const int64_t *x);
gr_arg da_vals(int n, const int *x);
gr_arg da_kw(const char *key, gr_arg a);
gr_arg da_dtype(gr_dtype dt);
gr_ttype dc_T(dctx *c, int v);
int dc_val(dctx *c, const gr_node *n, int pos, const char *key);
int dc_opt_val(dctx *c, const gr_node *n, int pos, const char *key);
int dc_is_number(const gr_arg *a);
double dc_num(dctx *c, const gr_node *n, int pos, const char *key, double dflt);
/* out: room for GR_MAX_RANK ints (gr_arg_ints) */
int dc_ints(dctx *c, const gr_node *n, int pos, const char *key, int64_t *out);
int dc_dtype_arg(dctx *c, const gr_node *n, int pos, const char *key);
int dc_normdim(dctx *c, int64_t d, int rank);
/* Whether the source graph reads result k of node n (a getitem of it). */
int dc_result_read(dctx *c, const gr_node *n, int k);
int64_t dc_numel(const gr_ttype *t);
int dc_is_float(gr_dtype dt);
int dc_bin(dctx *c, const char *op, int a, int b);
int dc_bins(dctx *c, const char *op, int a, double s);
int dc_un(dctx *c, const char *op, int a);
int dc_red(dctx *c, const char *op, int a, int nd, const int64_t *dims, int keepdim);
int dc_reshape(dctx *c, int a, int rank, const int64_t *shape);
int dc_transpose(dctx *c, int a, int64_t d0, int64_t d1);
int dc_unsqueeze(dctx *c, int a, int64_t dim);
int dc_permute(dctx *c, int x, const int64_t *perm);
int dc_flip(dctx *c, int x, int nd, const int64_t *dims);
/* x padded with v as constant_pad_nd pads: pads[2k], pads[2k + 1] before
 * and after dim rank-1-k, for n dims; emitted even when all are 0 */
int dc_pad(dctx *c, int x, int n, const int64_t *pads, double v);
int dc_expand(dctx *c, int a, int rank, const int64_t *shape);
int dc_slice(dctx *c, int a, int dim, int64_t start, int64_t end, int64_t step);
int dc_select(dctx *c, int a, int dim, int64_t i);
int dc_full(dctx *c, int rank, const int64_t *shape, double v, gr_dtype dt);
int dc_cast(dctx *c, int a, gr_dtype dt);
/* A constant tensor of type t holding data (malloc'd, numel floats; taken
 * over): a parameter of the core graph whose values the program carries
 * (baked in at codegen, resident with the weights). */
int dc_const(dctx *c, gr_ttype t, float *data);
int dc_matmul(dctx *c, const char *op, int a, int b);
int dc_where(dctx *c, int cond, int a, int b);
int dc_where_s(dctx *c, int cond, int a, double s, int scalar_first);
int dc_cmps(dctx *c, const char *op, int a, double s);
/* Whether value v of g depends on a graph input or parameter (else it is
 * made from positions and constants alone). */
int dc_reads_data(const gr_graph *g, int v);
int dc_cmpv(dctx *c, const char *op, int a, int b);
int dc_neg(dctx *c, int a);
int dc_scale(dctx *c, int x, double s);
int dc_fx(dctx *c, int x);
/* bias*beta + prod*alpha with the source node's beta and alpha (beta 0:
 * bias ignored, NaN and all, as PyTorch) */
int dc_add_scaled(dctx *c, const gr_node *n, int bias, int prod);

#define DC_EMIT(c, op, t, ...) \
    dc_emit(c, op, t, (int)(sizeof((gr_arg[]){__VA_ARGS__}) / sizeof(gr_arg)), (gr_arg[]){__VA_ARGS__})

/* A rule: the results of source node n into out (its count returned). */
typedef int (*dc_rule_fn)(dctx *c, const gr_node *n, int *out);


/* Rules in files beside decompose.c (their rows are in its table). */
int dc_r_argmax(dctx *c, const gr_node *n, int *out);      /* dec_index.c */
int dc_r_max_dim(dctx *c, const gr_node *n, int *out);
int dc_r_aminmax(dctx *c, const gr_node *n, int *out);
int dc_r_count_nonzero(dctx *c, const gr_node *n, int *out);
int dc_r_sort(dctx *c, const gr_node *n, int *out);
int dc_r_topk(dctx *c, const gr_node *n, int *out);
int dc_r_gather(dctx *c, const gr_node *n, int *out);
int dc_r_scatter_add(dctx *c, const gr_node *n, int *out);
int dc_r_scatter_reduce(dctx *c, const gr_node *n, int *out);
int dc_r_index_fill(dctx *c, const gr_node *n, int *out);
int dc_r_nll_loss(dctx *c, const gr_node *n, int *out);
int dc_r_index_select(dctx *c, const gr_node *n, int *out);
int dc_r_embedding(dctx *c, const gr_node *n, int *out);
int dc_r_index(dctx *c, const gr_node *n, int *out);
int dc_r_take(dctx *c, const gr_node *n, int *out);
int dc_r_index_add(dctx *c, const gr_node *n, int *out);
int dc_r_repeat_positions(dctx *c, const gr_node *n, int *out);
int dc_affine_index(dctx *c, const gr_node *n, int x, int *out); /* dec_affine.c */
int dc_affine_index_select(dctx *c, const gr_node *n, int x, int d, int *out);
int dc_affine_gather(dctx *c, const gr_node *n, int x, int d, int *out);
int dc_r_index_put(dctx *c, const gr_node *n, int *out);
int dc_r_scatter(dctx *c, const gr_node *n, int *out);
int dc_r_index_copy(dctx *c, const gr_node *n, int *out);
int dc_r_embedding_bag(dctx *c, const gr_node *n, int *out);
int dc_r_median(dctx *c, const gr_node *n, int *out);
int dc_r_any(dctx *c, const gr_node *n, int *out);
int dc_r_bucketize(dctx *c, const gr_node *n, int *out);
int dc_r_bincount(dctx *c, const gr_node *n, int *out);
int dc_r_prod(dctx *c, const gr_node *n, int *out);
int dc_r_cumsum(dctx *c, const gr_node *n, int *out);      /* dec_views.c */
int dc_r_roll(dctx *c, const gr_node *n, int *out);
int dc_r_rot90(dctx *c, const gr_node *n, int *out);
int dc_r_diag(dctx *c, const gr_node *n, int *out);
int dc_r_trace(dctx *c, const gr_node *n, int *out);
int dc_r_slice_scatter(dctx *c, const gr_node *n, int *out);
int dc_r_narrow_copy(dctx *c, const gr_node *n, int *out);
int dc_r_addmv(dctx *c, const gr_node *n, int *out);
int dc_r_norm(dctx *c, const gr_node *n, int *out);
int dc_r_cdist(dctx *c, const gr_node *n, int *out);
int dc_r_euclidean_dist(dctx *c, const gr_node *n, int *out);
int dc_r_mv(dctx *c, const gr_node *n, int *out);
int dc_r_cumprod(dctx *c, const gr_node *n, int *out);
int dc_r_dist(dctx *c, const gr_node *n, int *out);
int dc_r_trilinear(dctx *c, const gr_node *n, int *out);
int dc_r_as_strided(dctx *c, const gr_node *n, int *out);
int dc_r_upsample_interp(dctx *c, const gr_node *n, int *out); /* dec_interp.c */
int dc_r_convolution(dctx *c, const gr_node *n, int *out);     /* dec_convt.c */
/* x's last axis (in elements) times the constant (in x out) matrix m: rows
 * as one matrix, a product, the shape back with out elements (dec_interp.c). */
int dc_last_axis_times(dctx *c, int x, int m);

int dc_r_space(dctx *c, const gr_node *n, int *out); /* dec_space.c */
int dc_r_tri_indices(dctx *c, const gr_node *n, int *out);

#endif
