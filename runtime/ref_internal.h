/* ref_internal.h: the reference executor's private structures, shared by its
 * files runtime/ref_*.c only (the public interface is rt.h, "Reference executor").
 *
 * A graph runs as written, one node at a time, in the topological order
 * the parser gives.  Each value holds one tensor, or a tuple of them
 * (multi-output ops).  A tensor is row-major and contiguous; its kind is
 * float (fp32 data), integer (int64 data) or bool (int64 0 / 1), whatever
 * the float or integer dtype it stands for.  Views (transpose, slice,
 * expand, ...) are copies made by one strided gather.
 *
 * An op is a row of its family's table (ref_op below): its base name
 * ("add" for aten.add.Tensor), the function that runs it and a code the
 * function switches on.  A function reads its arguments as the schema
 * says (positional or keyword), computes the result's shape and kind, and
 * asks ref_new_result for the tensor: ref_new_result compares shape and
 * kind with the declared type before anything is allocated, so a wrong
 * declaration is reported as such and never sizes a buffer.
 *
 * The files, calls running downward only:
 *   ref_exec.c          the public rt_ref_* functions: leaves, the run loop, the list of families
 *   ref_binary.c, ref_unary.c, ref_select.c, ref_copy.c, ref_views.c, ref_gather.c,
 *   ref_create.c, ref_reductions.c, ref_norm.c, ref_matmul.c, ref_act.c, ref_sort.c, ref_index.c,
 *   ref_spatial.c, ref_conv.c, ref_vecnorm.c, ref_linalg.c (LAPACKE), ref_data.c, ref_special.c,
 *   ref_fpbits.c, ref_poly.c, ref_nll.c, ref_spatial2.c, ref_pool3d.c, ref_loss.c, ref_space.c, ref_dist.c,
 *   ref_mode.c, ref_segment.c, ref_histogram.c, ref_embag.c, ref_grid.c, ref_trilinear.c, ref_matexp.c,
 *   ref_ctc.c, ref_lstsq.c (LAPACKE)
 *   ref_random.c
 *                       the op families, each with its table; none calls another
 *   ref_math.c          the unary functions and their bound rules
 *   ref_args.c          reading arguments
 *   ref_core.c          tensors, results, errors, broadcasting, strided copies
 *   ref_bounds.c        the error-bound rules
 *
 * Broadcasting and type promotion follow PyTorch for these ops, at the
 * level of kinds: bool < integer < float, the result of arithmetic is the
 * highest kind of its operands (a Python float scalar makes an integer
 * tensor float), true division and the transcendental functions make
 * floats, comparisons make bools.
 *
 * Error bounds (rt_ref_track_errors): every tensor then also carries eb[2],
 * per element two bounds on |device value - reference value| (the worst
 * case, and the probabilistic scale) for a device that stores every value
 * of the decomposed graph in DL16.  Each op computes its result's bounds
 * from its arguments' values and bounds (the rules are in ref_bounds.c and
 * ref_math.c, derived in docs/validation.md); views and copies
 * move the bounds with the values.  The bounds never change a value. */
#ifndef REF_INTERNAL_H
#define REF_INTERNAL_H

#include "rt_internal.h"

#include <stdint.h>

#define MAXR GR_MAX_RANK

typedef enum { K_B, K_I, K_F } kind; /* ordered for promotion */

static inline kind kind_of(gr_dtype d)
{
    return d == GR_BOOL ? K_B : d == GR_I64 || d == GR_I32 ? K_I : K_F;
}
static inline gr_dtype dtype_of(kind k) { return k == K_B ? GR_BOOL : k == K_I ? GR_I64 : GR_F32; }

typedef struct {
    gr_dtype dtype;
    int rank;
    int64_t shape[MAXR];
    int64_t n;
    float *f;     /* K_F */
    int64_t *i;   /* K_I, K_B */
    float *fview; /* fp32 copy of i, made on request */
    float *eb[2]; /* error bounds per element (tracking on), else NULL: worst case, probabilistic scale */
} tens;

typedef struct {
    tens *t; /* nt tensors: 1 for a tensor value, the tuple's size otherwise */
    int nt;
} slot;

struct rt_ref {
    const gr_graph *g;
    slot *vals;    /* per value */
    char *keep;    /* per value: survives the run */
    int *last_use; /* per value: last node that reads it, -1 */
    /* the node being run, and its results */
    const gr_node *node;
    tens *res;
    int nres, capres;
    char *err;
    size_t errlen;
    int bounds; /* propagate error bounds (rt_ref_track_errors) */
    uint64_t seed; /* the host's generator (rt_ref_seed; ref_random.c) */
    char *drawn;   /* per value: depends on a random draw (rt_ref_drawn) */
    int draws;     /* the node being run draws (set by its op) */
    int wrote;     /* the value the node being run wrote in place, or -1 (rt_ref_written) */
    rt_ref_hook on_value; /* called after each node of rt_ref_run (rt_ref_on_value) */
    void *hook_ctx;
};

typedef rt_ref ex;

static inline float ldf(const tens *t, int64_t k) { return t->f ? t->f[k] : (float)t->i[k]; }
static inline int64_t ldi(const tens *t, int64_t k) { return t->i ? t->i[k] : (int64_t)t->f[k]; }
static inline double ldd(const tens *t, int64_t k) { return t->f ? (double)t->f[k] : (double)t->i[k]; }
/* Error bound track w of element k (0 without bounds). */
static inline double ldb(const tens *t, int w, int64_t k) { return t->eb[w] ? (double)t->eb[w][k] : 0; }
/* x y for a factor x and a bound y (or two bounds) where a zero factor
 * is exact: 0 times an infinite bound is 0, not NaN (an exact zero times
 * anything the device holds is exactly zero). */
static inline double eb_mul0(double x, double y) { return x == 0 || y == 0 ? 0 : x * y; }

/* Error bounds (ref_bounds.c). */
#define EB_U 0x1p-10            /* DL16 unit roundoff */
#define EB_RHO (EB_U + 0x1p-21) /* one SFP result: fp32 evaluation (4 fp32 ulps), then DL16 */
#define EB_FLUSH 0x1p-31        /* DL16 flushes smaller magnitudes to zero */
#define EB_ACC 0x1p-23          /* an fp32 sum, per term: twice the first-order 2^-24 */
#define EB_LAMBDA RT_REF_LAMBDA /* track 1: the bound is EB_LAMBDA S */
#define EB_JUMP_MARGIN 0x1p-20  /* a flip's jump, widened to survive fp32 storage of bounds */

/* A value, its bound and the bound's track, for rules written as the
 * device's sequence of operations (composite ops: GELU, layer norm, ...). */
typedef struct {
    double v, e;
    int w;
} bv;

/* A sum over elements accumulated in fp32 and stored (sfp.rsum): the
 * terms' bounds add (track 0) or add in quadrature (track 1), and the fp32
 * accumulation adds n 2^-23 sum (|term| + bound) (track 1: sqrt(n)). */
typedef struct {
    double s, p, mag;
    int64_t n;
    int w;
} eb_acc;

/* A tensor or a number; a number becomes a rank-0 tensor held in *box. */
typedef struct {
    tens t;
    float f;
    int64_t i;
    float eb; /* the device's rounding of the number (error bounds) */
} scalar_box;

/* An iteration over broadcast operands (ref_iter_init, iter_next). */
typedef struct {
    int rank, nop;
    int64_t shape[MAXR], idx[MAXR];
    int64_t st[4][MAXR];
    int64_t off[4];
} iter;

static inline void iter_next(iter *it)
{
    for (int d = it->rank - 1; d >= 0; d--) {
        it->idx[d]++;
        for (int j = 0; j < it->nop; j++)
            it->off[j] += it->st[j][d];
        if (it->idx[d] < it->shape[d])
            return;
        for (int j = 0; j < it->nop; j++)
            it->off[j] -= it->st[j][d] * it->shape[d];
        it->idx[d] = 0;
    }
}

/* The unary functions (ref_math.c, ref_unary.c). */
enum {
    U_NEG, U_EXP, U_LOG, U_SQRT, U_RSQRT, U_TANH, U_SIGMOID, U_RELU, U_SILU, U_SIN, U_COS, U_ABS,
    U_RECIP, U_ERF, U_LOG1P, U_EXPM1, U_FLOOR, U_CEIL, U_ROUND, U_TRUNC, U_SIGN, U_LNOT, U_BNOT,
    U_GELU, U_GELU_TANH, U_SQUARE,
};

/* An op: a row of its family's table, the base name ("add" for
 * aten.add.Tensor), the function that runs it and a code the function
 * switches on.  Each family file (ref_binary.c, ...) defines one table;
 * ref_exec.c lists the families. */
typedef struct {
    const char *base;
    int (*fn)(ex *E, int code);
    int code;
} ref_op;

typedef struct {
    const ref_op *ops;
    size_t n;
} ref_ops;

#define REF_OPS(table) {table, sizeof table / sizeof table[0]}

extern const ref_ops ref_matmul_ops, ref_binary_ops, ref_unary_ops, ref_select_ops, ref_copy_ops, ref_views_ops,
    ref_gather_ops, ref_create_ops, ref_reductions_ops, ref_norm_ops, ref_act_ops, ref_sort_ops, ref_index_ops,
    ref_spatial_ops, ref_conv_ops, ref_vecnorm_ops, ref_linalg_ops, ref_data_ops, ref_special_ops, ref_fpbits_ops,
    ref_poly_ops, ref_nll_ops, ref_spatial2_ops, ref_pool3d_ops, ref_loss_ops, ref_space_ops, ref_dist_ops, ref_mode_ops, ref_segment_ops, ref_histogram_ops, ref_embag_ops, ref_grid_ops, ref_trilinear_ops, ref_matexp_ops,
    ref_ctc_ops, ref_lstsq_ops, ref_random_ops;

/* ref_core.c: tensors, results, errors, broadcast iteration, strided copies. */
void ref_tfree(tens *t);
void ref_slot_free(slot *s);
int64_t ref_sat_mul(int64_t a, int64_t b);
int64_t ref_numel(int rank, const int64_t *shape);
void ref_shape_str(const char *dtype, int rank, const int64_t *shape, char *buf, size_t len);
void ref_contiguous_strides(int rank, const int64_t *shape, int64_t *st);
/* x (contiguous) seen without dim d: its strides in st, the other dims'
 * extents and strides in shape and nst; returns their count. */
int ref_drop_dim(const tens *x, int d, int64_t *st, int64_t *shape, int64_t *nst);
/* Format "FILE:LINE: OP: message" (the current node) into the run's error; -1. */
int ref_fail(ex *E, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
tens *ref_new_result(ex *E, kind k, int rank, const int64_t *shape);
int ref_temp_tensor(ex *E, tens *t, kind k, int rank, const int64_t *shape);
void ref_iter_init(iter *it, int rank, const int64_t *shape, int nop, const int *ranks, const int64_t *const *shapes);
void ref_iter_tensors(iter *it, int rank, const int64_t *shape, int nop, const tens *const *ts);
int ref_bcast(ex *E, int k, const tens *const *ts, int *rank, int64_t *shape);
void ref_strided_copy(const tens *x, int rank, const int64_t *shape, const int64_t *strides, int64_t offset, tens *out);
int ref_result_reshaped(ex *E, const tens *x, int rank, const int64_t *shape);
double ref_convert_bound(const tens *x, int64_t j, kind k, int w);
int ref_result_as(ex *E, const tens *x, kind k, int rank, const int64_t *shape);
/* The batch count and the last two dims of x (rank >= 2, each dim within the reference's 4096). */
int ref_mats_of(ex *E, const tens *x, int64_t *batch, int64_t *r, int64_t *c);

/* ref_bounds.c: the error-bound rules. */
double ref_eb_lam(int w);
double ref_eb_store(double v, double prop, int w);
/* How many terms' worth of fp32 rounding an fp32 sum of n terms adds: n (track 0), sqrt(n) (track 1). */
double ref_eb_acc_n(double n, int w);
double ref_eb_leaf(double x);
double ref_eb_const(double c);
double ref_eb_prod(double a, double ea, double b, double eb, int w);
double ref_eb_quot(double a, double ea, double b, double eb, int w);
int ref_eb_flips(double d, double e, int w);
double ref_eb_jump(double j, int w);
bv ref_bv_k(double c);
bv ref_bv_add(bv a, bv b);
bv ref_bv_sub(bv a, bv b);
bv ref_bv_mul(bv a, bv b);
bv ref_bv_div(bv a, bv b);
void ref_acc_add(eb_acc *a, double v, double e);
bv ref_acc_sum(const eb_acc *a);
double ref_select_bound(int flips, double a, double ea, double b, double eb, int pick, int w);
void ref_softmax_bound(const float *x, const float *ex, int64_t D, int64_t st, float *ey, int w);
/* X = A^-1 B (n x m): |A^-1| (ai), P = lambda E_A + backward error, lambda E_B (eb, NULL: exact), over L, into out. */
void ref_solve_bound(int64_t n, int64_t m, const double *ai, const double *P, const float *X, const double *eb,
                     double L, double *out);
/* Weyl: ||lambda E||_F of matrix off (r x c) of x (sym: the triangle read, mirrored) + n 2^-23 ||A||_F, over lambda. */
double ref_weyl_bound(const tens *x, int64_t off, int64_t r, int64_t c, int sym, int lower, int w);

/* ref_args.c: an op's arguments (positional or keyword). */
const char *ref_overload(const gr_node *n);
const gr_arg *ref_arg(ex *E, int pos, const char *key);
int ref_present(const gr_arg *a);
const tens *ref_tensor_of(ex *E, const gr_arg *a, const char *what);
const tens *ref_arg_tensor(ex *E, int pos, const char *key);
int ref_arg_int(ex *E, int pos, const char *key, int64_t def, int64_t *v);
int ref_arg_req_int(ex *E, int pos, const char *key, int64_t *v);
int ref_arg_bool(ex *E, int pos, const char *key, int def, int *v);
int ref_num_of(ex *E, const gr_arg *a, const char *what, double *v, kind *k);
int ref_arg_num(ex *E, int pos, const char *key, double def, double *v);
int ref_arg_ints(ex *E, int pos, const char *key, int64_t *out, int *cnt, int max);
int ref_arg_dtype(ex *E, int pos, const char *key, int *dt);
const tens *ref_operand(ex *E, const gr_arg *a, const char *what, scalar_box *box);
/* The float result of an op on arguments 0 and 1, named k0 and k1 (tensors
 * or numbers, boxed in b0, b1), broadcast together: the operands in *a,
 * *b, the iteration over the three in *it; NULL on an error. */
tens *ref_binary_float(ex *E, const char *k0, const char *k1, scalar_box *b0, scalar_box *b1, const tens **a,
                       const tens **b, iter *it);
int ref_norm_dim(ex *E, int64_t d, int rank, int *out);

/* ref_math.c: the unary functions (U_*) and their bound rules. */
double ref_gelu(double x);
double ref_gelu_tanh(double x);
bv ref_bv_fn(int op, bv x);
double ref_unary_bound(int op, double x, double e, int w);

#endif
