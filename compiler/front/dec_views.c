/* dec_views.c: decompositions of ops that rearrange or place elements, or
 * are small compositions of matrix products and reductions: cumsum (a
 * product with a triangular matrix of ones, on the PT units), roll,
 * rot90, diag, trace, slice_scatter and select_scatter, narrow_copy,
 * addmv, addr, addbmm and the vector norms. */
#include "decompose.h"

#include <math.h>
#include <string.h>

static int cat2(dctx *c, int a, int b, int d)
{
    gr_ttype t = dc_T(c, a);
    t.shape[d] += dc_T(c, b).shape[d];
    int parts[2] = {a, b};
    return DC_EMIT(c, "aten.cat.default", t, da_vals(2, parts), da_int(d));
}

static int zeros_like_dim(dctx *c, int a, int d, int64_t len)
{
    gr_ttype t = dc_T(c, a);
    t.shape[d] = len;
    return dc_full(c, t.rank, t.shape, 0, t.dtype);
}

/* arange(n), int64; one per use, so that lower inlines it as an index
 * instead of reading a buffer across its stick dimension */
static int arange(dctx *c, int64_t n)
{
    gr_ttype t = {.dtype = GR_I64, .rank = 1, .shape = {n}};
    return DC_EMIT(c, "aten.arange.default", t, da_int(n), da_kw("dtype", da_dtype(GR_I64)));
}

/* A scan by doubling along d: for k = 1, 2, 4, ..: y = op(y, cat(k
 * elements of `fill`, y[:n-k])), log2 n ops (cumsum's add of zeros,
 * cumprod's product with ones). */
static int scan(dctx *c, int y, int d, const char *op, double fill)
{
    const int64_t len = dc_T(c, y).shape[d];
    for (int64_t k = 1; k < len; k *= 2) {
        gr_ttype head = dc_T(c, y);
        head.shape[d] = k;
        int shifted_in = dc_full(c, head.rank, head.shape, fill, head.dtype);
        y = dc_bin(c, op, y, cat2(c, shifted_in, dc_slice(c, y, d, 0, len - k, 1), d));
    }
    return y;
}

/* An integer cumsum along d, in the result's dtype.  A short last dim's is
 * y[.., i] = sum_k where(k <= i, x[.., k], 0), one kernel reading n^2
 * elements per row; a long one's, or along another dim, a scan by doubling
 * (as cumprod's): for k = 1, 2, 4, ..: y[i] += y[i - k] where i >= k,
 * zeros shifted in, log2(n) adds.  Measured on spyre (int64, cycles masked /
 * scan), last dim: (64, 256) 15132 / 15188, (256, 128) 16459 / 18032, (4,
 * 512) 4893 / 9683, (32, 384) 16460 / 13948, (64, 512) 54117 / 21360, (1,
 * 600) 38246 / 9843, (64, 1000) 800640 / 45814 (the host's 105694), the one
 * loss (1, 768) 5901 / 11514; dim 0: (16, 3, 32) 6448 / 3458, (128, 64)
 * 50937 / 8612, (6, 3, 4) 1964 / 2074.
 * intexact.c bounds the masked sum by n times x's bound, the scan by
 * 2^ceil(log2 n) times it (a partial sum of 2^step elements at each step):
 * within DL16's exact integers it runs on the device, past them the op is
 * refused to the host, saying so.  A product with a triangular matrix
 * would be float, its bound unproven. */
#define CUMSUM_SCAN_LEN 512                  /* a last dim longer than this is scanned */
#define CUMSUM_SCAN_READS ((int64_t)1 << 22) /* and so is one whose masked sum reads more */
static int int_cumsum(dctx *c, int x, int d, gr_dtype dt)
{
    gr_ttype t = dc_T(c, x);
    int64_t len = t.shape[d], k = d + 1;
    if (d != t.rank - 1 || len > CUMSUM_SCAN_LEN || dc_numel(&t) * len > CUMSUM_SCAN_READS) {
        return scan(c, dc_cast(c, x, dt), d, "aten.add.Tensor", 0);
    }
    if (t.rank + 1 > GR_MAX_RANK)
        return -1;
    /* m[i][k] = k <= i */
    int m = dc_cmpv(c, "aten.le.Tensor", dc_unsqueeze(c, arange(c, len), 0), dc_unsqueeze(c, arange(c, len), 1));
    int y = dc_where_s(c, m, dc_unsqueeze(c, dc_cast(c, x, dt), d), 0, 0);
    return dc_cast(c, dc_red(c, "aten.sum.dim_IntList", y, 1, &k, 0), dt);
}

/* cumsum(self, dim, dtype): along the last dim the rows times U, U[k][i]
 * = (k <= i); along another L, L[i][k] = (k <= i), times x seen as (pre,
 * n, post), so no result is transposed.  Integers: int_cumsum. */
int dc_r_cumsum(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), dt = dc_dtype_arg(c, n, 2, "dtype");
    gr_ttype t = dc_T(c, x);
    if (dt >= 0)
        x = dc_cast(c, x, (gr_dtype)dt);
    t = dc_T(c, x);
    if (!dc_is_float(t.dtype) && t.rank > 0 && dc_numel(&t) > 0) {
        int d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), t.rank);
        out[0] = int_cumsum(c, x, d, c->g->values[n->out].type.dtype);
        return out[0] >= 0;
    }
    if (!dc_is_float(t.dtype))
        return 0;
    if (t.rank == 0 || dc_numel(&t) == 0) {
        out[0] = x;
        return 1;
    }
    int d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), t.rank), r = t.rank;
    int64_t len = t.shape[d];
    if (d != r - 1) { /* L (lower-triangular ones) times x seen as (pre, n, post): no transposes */
        int64_t pre = 1, post = 1;
        for (int i = 0; i < r; i++)
            pre *= i < d ? t.shape[i] : 1, post *= i > d ? t.shape[i] : 1;
        int64_t s3[3] = {pre, len, post};
        int l = dc_cast(c, dc_cmpv(c, "aten.ge.Tensor", dc_unsqueeze(c, arange(c, len), 1), arange(c, len)), t.dtype);
        gr_ttype to = {.dtype = t.dtype, .rank = 3, .shape = {pre, len, post}};
        int y = DC_EMIT(c, "aten.matmul.default", to, da_val(l), da_val(dc_reshape(c, x, 3, s3)));
        out[0] = dc_reshape(c, y, r, t.shape);
        return 1;
    }
    int64_t perm[GR_MAX_RANK], inv[GR_MAX_RANK];
    for (int i = 0, k = 0; i < r; i++)
        if (i != d)
            perm[k++] = i;
    perm[r - 1] = d;
    for (int i = 0; i < r; i++)
        inv[perm[i]] = i;
    gr_ttype tp = t;
    for (int i = 0; i < r; i++)
        tp.shape[i] = t.shape[perm[i]];
    int y = d == r - 1 ? x : DC_EMIT(c, "aten.permute.default", tp, da_val(x), da_ints(r, perm));
    int64_t rows[2] = {dc_numel(&t) / len, len};
    y = dc_reshape(c, y, 2, rows);
    int u = dc_cast(c, dc_cmpv(c, "aten.le.Tensor", dc_unsqueeze(c, arange(c, len), 1), arange(c, len)), t.dtype);
    y = dc_reshape(c, dc_matmul(c, "aten.mm.default", y, u), r, tp.shape);
    out[0] = d == r - 1 ? y : DC_EMIT(c, "aten.permute.default", t, da_val(y), da_ints(r, inv));
    return 1;
}

static int roll1(dctx *c, int x, int d, int64_t shift)
{
    int64_t len = dc_T(c, x).shape[d];
    if (len == 0)
        return x;
    int64_t s = ((shift % len) + len) % len;
    if (s == 0)
        return x;
    return cat2(c, dc_slice(c, x, d, len - s, len, 1), dc_slice(c, x, d, 0, len - s, 1), d);
}

/* roll(self, shifts, dims): the last s elements first, per dim; no dims:
 * over the flattened tensor. */
int dc_r_roll(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    gr_ttype t = dc_T(c, x);
    int64_t shifts[GR_MAX_RANK], dims[GR_MAX_RANK];
    int ns = dc_ints(c, n, 1, "shifts", shifts), nd = dc_ints(c, n, 2, "dims", dims);
    if (nd <= 0) {
        if (ns != 1)
            dc_fail(c, "shifts must be one number when dims is empty");
        int64_t all = dc_numel(&t);
        out[0] = dc_reshape(c, roll1(c, dc_reshape(c, x, 1, &all), 0, shifts[0]), t.rank, t.shape);
        return 1;
    }
    if (ns != nd)
        dc_fail(c, "shifts and dims differ in length");
    for (int i = 0; i < nd; i++)
        x = roll1(c, x, dc_normdim(c, dims[i], t.rank), shifts[i]);
    out[0] = x;
    return 1;
}

/* rot90(self, k, dims): flips and a transpose, as torch.rot90. */
int dc_r_rot90(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    int r = dc_T(c, x).rank;
    int64_t k = (int64_t)dc_num(c, n, 1, "k", 1), dims[GR_MAX_RANK] = {0, 1};
    int nd = dc_ints(c, n, 2, "dims", dims);
    if (nd >= 0 && nd != 2)
        dc_fail(c, "dims must name two dimensions");
    int64_t d0 = dc_normdim(c, dims[0], r), d1 = dc_normdim(c, dims[1], r), both[2] = {d0, d1};
    if (d0 == d1)
        dc_fail(c, "dims must differ");
    k = ((k % 4) + 4) % 4;
    if (k == 1)
        x = dc_transpose(c, dc_flip(c, x, 1, &d1), d0, d1);
    else if (k == 2)
        x = dc_flip(c, x, 2, both);
    else if (k == 3)
        x = dc_flip(c, dc_transpose(c, x, d0, d1), 1, &d1);
    out[0] = x;
    return 1;
}

static int diagonal(dctx *c, int x, int64_t off, int64_t d0, int64_t d1)
{
    gr_ttype t = dc_T(c, x), u;
    int64_t len = off >= 0 ? t.shape[d0] < t.shape[d1] - off ? t.shape[d0] : t.shape[d1] - off
                           : t.shape[d0] + off < t.shape[d1] ? t.shape[d0] + off : t.shape[d1];
    u.dtype = t.dtype;
    u.rank = 0;
    for (int i = 0; i < t.rank; i++)
        if (i != d0 && i != d1)
            u.shape[u.rank++] = t.shape[i];
    u.shape[u.rank++] = len < 0 ? 0 : len;
    return DC_EMIT(c, "aten.diagonal.default", u, da_val(x), da_int(off), da_int(d0), da_int(d1));
}

/* diag(self, diagonal): a vector onto the k-th diagonal of a square
 * matrix (where(j - i == k, ..., 0)), or a matrix's k-th diagonal. */
int dc_r_diag(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    gr_ttype t = dc_T(c, x);
    int64_t k = (int64_t)dc_num(c, n, 1, "diagonal", 0);
    if (t.rank == 2) {
        out[0] = diagonal(c, x, k, 0, 1);
        return 1;
    }
    if (t.rank != 1)
        dc_fail(c, "diag takes a vector or a matrix");
    /* x along the columns (the lanes): out[i][j] = x[j - k] for k >= 0,
     * x[j] for k < 0 */
    int64_t ak = k < 0 ? -k : k, big = t.shape[0] + ak, sq[2] = {big, big};
    int xp = !ak ? x : k > 0 ? cat2(c, zeros_like_dim(c, x, 0, ak), x, 0) : cat2(c, x, zeros_like_dim(c, x, 0, ak), 0);
    xp = dc_expand(c, dc_unsqueeze(c, xp, 0), 2, sq);
    int off = dc_bin(c, "aten.sub.Tensor", arange(c, big), dc_unsqueeze(c, arange(c, big), 1)); /* j - i */
    out[0] = dc_where_s(c, dc_cmps(c, "aten.eq.Scalar", off, (double)k), xp, 0, 0);
    return 1;
}

int dc_r_trace(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    if (dc_T(c, x).rank != 2)
        dc_fail(c, "trace takes a matrix");
    out[0] = dc_red(c, "aten.sum.dim_IntList", diagonal(c, x, 0, 0, 1), 0, NULL, 0);
    return 1;
}

/* v (L along d) spread to len along d: v[i] at start + i*step, zeros
 * elsewhere. */
static int place(dctx *c, int v, int d, int64_t start, int64_t step, int64_t len)
{
    gr_ttype t = dc_T(c, v);
    int64_t L = t.shape[d];
    if (step > 1 && L > 0) {
        int w = dc_unsqueeze(c, v, d + 1);
        w = cat2(c, w, zeros_like_dim(c, w, d + 1, step - 1), d + 1);
        int64_t shape[GR_MAX_RANK];
        memcpy(shape, t.shape, sizeof shape);
        shape[d] = L * step;
        v = dc_slice(c, dc_reshape(c, w, t.rank, shape), d, 0, (L - 1) * step + 1, 1);
    }
    if (start > 0)
        v = cat2(c, zeros_like_dim(c, v, d, start), v, d);
    int64_t have = dc_T(c, v).shape[d];
    return have < len ? cat2(c, v, zeros_like_dim(c, v, d, len - have), d) : v;
}

/* slice_scatter(self, src, dim, start, end, step) and
 * select_scatter(self, src, dim, index): where(placed mask, placed src,
 * self). */
int dc_r_slice_scatter(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), src = dc_val(c, n, 1, "src");
    gr_ttype t = dc_T(c, x);
    if (t.rank == 0)
        dc_fail(c, "self must have a dimension");
    int d = dc_normdim(c, (int64_t)dc_num(c, n, 2, "dim", 0), t.rank);
    int64_t len = t.shape[d], start, step = 1;
    if (!strcmp(n->base, "select_scatter")) {
        start = (int64_t)dc_num(c, n, 3, "index", 0);
        src = dc_unsqueeze(c, src, d);
    } else {
        start = (int64_t)dc_num(c, n, 3, "start", 0);
        step = (int64_t)dc_num(c, n, 5, "step", 1);
    }
    if (start < 0)
        start += len;
    if (start < 0 || step < 1)
        dc_fail(c, "start or step out of range");
    src = dc_cast(c, src, t.dtype);
    if (dc_T(c, src).shape[d] == 0) {
        out[0] = x;
        return 1;
    }
    int ones = dc_full(c, dc_T(c, src).rank, dc_T(c, src).shape, 1, GR_F32);
    int mask = dc_cmps(c, "aten.ne.Scalar", place(c, ones, d, start, step, len), 0);
    out[0] = dc_where(c, mask, place(c, src, d, start, step, len), x);
    return 1;
}

int dc_r_narrow_copy(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    gr_ttype t = dc_T(c, x);
    int d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), t.rank);
    int64_t start = (int64_t)dc_num(c, n, 2, "start", 0), len = (int64_t)dc_num(c, n, 3, "length", 0);
    if (start < 0)
        start += t.shape[d];
    if (start < 0 || len < 0 || start + len > t.shape[d])
        dc_fail(c, "start %lld and length %lld out of range", (long long)start, (long long)len);
    out[0] = dc_slice(c, x, d, start, start + len, 1);
    return 1;
}

/* addmv: mv; addr: the outer product as a product with K = 1; addbmm:
 * bmm summed over the batch; each bias*beta + product*alpha. */
int dc_r_addmv(dctx *c, const gr_node *n, int *out)
{
    int bias = dc_val(c, n, 0, "self"), a = dc_val(c, n, 1, "mat"), p;
    if (!strcmp(n->base, "addmv")) {
        /* as a row times mat^T, so the product's lanes run along M, where
         * the bias lies (a column would need a restickify) */
        int v = dc_val(c, n, 2, "vec");
        int64_t m = dc_T(c, a).shape[0], row[2] = {1, dc_T(c, v).shape[0]};
        p = dc_matmul(c, "aten.mm.default", dc_reshape(c, v, 2, row), dc_transpose(c, a, 0, 1));
        p = dc_reshape(c, p, 1, &m);
    } else if (!strcmp(n->base, "addr")) {
        a = dc_val(c, n, 1, "vec1");
        int b = dc_val(c, n, 2, "vec2");
        int64_t ra[2] = {dc_T(c, a).shape[0], 1}, rb[2] = {1, dc_T(c, b).shape[0]};
        p = dc_matmul(c, "aten.mm.default", dc_reshape(c, a, 2, ra), dc_reshape(c, b, 2, rb));
    } else {
        /* one product over K' = batch * K: (N, B*K) times (B*K, M) */
        a = dc_val(c, n, 1, "batch1");
        int b = dc_val(c, n, 2, "batch2");
        gr_ttype ta = dc_T(c, a), tb = dc_T(c, b);
        int64_t perm[3] = {1, 0, 2}, ra[2] = {ta.shape[1], ta.shape[0] * ta.shape[2]},
                rb[2] = {tb.shape[0] * tb.shape[1], tb.shape[2]};
        gr_ttype tp = {.dtype = ta.dtype, .rank = 3, .shape = {ta.shape[1], ta.shape[0], ta.shape[2]}};
        a = DC_EMIT(c, "aten.permute.default", tp, da_val(a), da_ints(3, perm));
        p = dc_matmul(c, "aten.mm.default", dc_reshape(c, a, 2, ra), dc_reshape(c, b, 2, rb));
    }
    out[0] = dc_add_scaled(c, n, bias, p);
    return 1;
}

/* The p-norm of x over dims: sqrt(sum(x*x)) for 2, sum|x| for 1, amax|x|
 * for inf, amin|x| for -inf, the count of nonzeros for 0, else
 * sum(|x|^p)^(1/p). */
static int pnorm(dctx *c, int x, double p, int nd, const int64_t *dims, int keep)
{
    int a = dc_un(c, "aten.abs.default", x);
    if (p == INFINITY || p == -INFINITY)
        return dc_red(c, p > 0 ? "aten.amax.default" : "aten.amin.default", a, nd, dims, keep);
    if (p == 0)
        return dc_red(c, "aten.sum.dim_IntList", dc_cast(c, dc_cmps(c, "aten.ne.Scalar", x, 0), dc_T(c, x).dtype), nd,
                      dims, keep);
    if (p == 1)
        return dc_red(c, "aten.sum.dim_IntList", a, nd, dims, keep);
    if (p == 2)
        return dc_un(c, "aten.sqrt.default",
                     dc_red(c, "aten.sum.dim_IntList", dc_bin(c, "aten.mul.Tensor", x, x), nd, dims, keep));
    int s = dc_red(c, "aten.sum.dim_IntList", dc_bins(c, "aten.pow.Tensor_Scalar", a, p), nd, dims, keep);
    return dc_bins(c, "aten.pow.Tensor_Scalar", s, 1 / p);
}

/* linalg_vector_norm(self, ord, dim, keepdim, dtype), norm(self, p, dim,
 * keepdim): pnorm over dim. */
int dc_r_norm(dctx *c, const gr_node *n, int *out)
{
    int x = dc_fx(c, dc_val(c, n, 0, "self"));
    int lin = !strcmp(n->base, "linalg_vector_norm");
    double p = dc_num(c, n, 1, lin ? "ord" : "p", 2);
    int64_t dims[GR_MAX_RANK];
    int nd = dc_ints(c, n, 2, "dim", dims);
    int keep = (int)dc_num(c, n, 3, "keepdim", 0);
    int dt = lin ? dc_dtype_arg(c, n, 4, "dtype") : dc_dtype_arg(c, n, 99, "dtype");
    if (dt >= 0)
        x = dc_cast(c, x, (gr_dtype)dt);
    out[0] = pnorm(c, x, p, nd < 0 ? 0 : nd, dims, keep);
    return 1;
}

/* sqrt(clamp_min(|a|^2 - 2ab + |b|^2, 0)) as PyTorch's _euclidean_dist:
 * one matmul of [-2a, |a|^2, 1] and [b, 1, |b|^2]^T. */
static int euclid_mm(dctx *c, int a, int b)
{
    gr_ttype ta = dc_T(c, a), tb = dc_T(c, b);
    int64_t la = ta.rank - 1, lb = tb.rank - 1;
    int an = dc_red(c, "aten.sum.dim_IntList", dc_bin(c, "aten.mul.Tensor", a, a), 1, &la, 1);
    int bn = dc_red(c, "aten.sum.dim_IntList", dc_bin(c, "aten.mul.Tensor", b, b), 1, &lb, 1);
    gr_ttype t1 = dc_T(c, an), t2 = dc_T(c, bn);
    int va[3] = {dc_scale(c, a, -2), an, dc_full(c, t1.rank, t1.shape, 1, t1.dtype)};
    int vb[3] = {b, dc_full(c, t2.rank, t2.shape, 1, t2.dtype), bn};
    ta.shape[la] += 2;
    tb.shape[lb] += 2;
    int ca = DC_EMIT(c, "aten.cat.default", ta, da_vals(3, va), da_int(la));
    int cb = DC_EMIT(c, "aten.cat.default", tb, da_vals(3, vb), da_int(lb));
    int prod = dc_matmul(c, "aten.matmul.default", ca, dc_transpose(c, cb, lb - 1, lb));
    return dc_un(c, "aten.sqrt.default", dc_bins(c, "aten.clamp_min.default", prod, 0));
}

/* The two (.., r, m) operands of a distance op, m alike. */
static void dist_operands(dctx *c, const gr_node *n, int *a, int *b)
{
    *a = dc_fx(c, dc_val(c, n, 0, "x1"));
    *b = dc_fx(c, dc_val(c, n, 1, "x2"));
    gr_ttype ta = dc_T(c, *a), tb = dc_T(c, *b);
    if (ta.rank < 2 || tb.rank < 2 || ta.shape[ta.rank - 1] != tb.shape[tb.rank - 1])
        dc_fail(c, "x1 and x2 must be (.., r, m) with the same m");
}

/* The p-norm over m of the differences a[.., :, None, :] - b[.., None, :, :]. */
static int diff_dist(dctx *c, int a, int b, double p)
{
    gr_ttype ta = dc_T(c, a), tb = dc_T(c, b);
    int d = dc_bin(c, "aten.sub.Tensor", dc_unsqueeze(c, a, ta.rank - 1), dc_unsqueeze(c, b, tb.rank - 2));
    int64_t m = dc_T(c, d).rank - 1;
    return pnorm(c, d, p, 1, &m, 0);
}

/* The 2-norm distances: by differences up to EUCLID_DIFF_MAX of them, as
 * the reference bounds them (euclid_mm's |a|^2 in DL16 is off by about
 * |a|^2 2^-11 / (2 d) for close points: 0.04 at |a|^2 = 16, d = 0.1);
 * measured at 256 x 256 x 64, 36198 cycles against euclid_mm's 13098. */
enum { EUCLID_DIFF_MAX = 1 << 22 };
static int euclid(dctx *c, int a, int b)
{
    gr_ttype ta = dc_T(c, a), tb = dc_T(c, b);
    int64_t n = ta.shape[ta.rank - 2] * tb.shape[tb.rank - 2] * ta.shape[ta.rank - 1];
    for (int i = 3; i <= ta.rank || i <= tb.rank; i++)
        n *= i <= ta.rank && ta.shape[ta.rank - i] != 1 ? ta.shape[ta.rank - i] : i <= tb.rank ? tb.shape[tb.rank - i] : 1;
    return n <= EUCLID_DIFF_MAX ? diff_dist(c, a, b, 2) : euclid_mm(c, a, b);
}

int dc_r_euclidean_dist(dctx *c, const gr_node *n, int *out)
{
    int a, b;
    dist_operands(c, n, &a, &b);
    out[0] = euclid(c, a, b);
    return 1;
}

/* _cdist_forward(x1, x2, p, compute_mode): the p-norm over m of the
 * differences; p = 2 by euclid, whatever compute_mode asks. */
int dc_r_cdist(dctx *c, const gr_node *n, int *out)
{
    int a, b;
    dist_operands(c, n, &a, &b);
    double p = dc_num(c, n, 2, "p", 2);
    out[0] = p == 2 ? euclid(c, a, b) : diff_dist(c, a, b, p);
    return 1;
}

/* mv(self, vec): the vector as a row times self^T, so the result's lanes
 * run along M (a column result split across cores would share sticks). */
int dc_r_mv(dctx *c, const gr_node *n, int *out)
{
    int a = dc_val(c, n, 0, "self"), v = dc_val(c, n, 1, "vec");
    gr_ttype ta = dc_T(c, a), tv = dc_T(c, v);
    if (ta.rank != 2 || tv.rank != 1 || ta.shape[1] != tv.shape[0])
        return 0;
    int64_t row[2] = {1, tv.shape[0]}, m = ta.shape[0];
    out[0] = dc_reshape(c, dc_matmul(c, "aten.mm.default", dc_reshape(c, v, 2, row), dc_transpose(c, a, 0, 1)), 1, &m);
    return 1;
}

/* cumprod(self, dim, dtype): a scan by doubling (Hillis and Steele): for
 * k = 1, 2, 4, ..: y[i] *= y[i - k] where i >= k (ones shifted in), log2(n)
 * pointwise products, each element rounded at most that often (a serial
 * product rounds n times).  Integer inputs stay for the host. */
int dc_r_cumprod(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), dt = dc_dtype_arg(c, n, 2, "dtype");
    if (dt >= 0)
        x = dc_cast(c, x, (gr_dtype)dt);
    gr_ttype t = dc_T(c, x);
    if (!dc_is_float(t.dtype))
        return 0;
    if (t.rank == 0 || dc_numel(&t) == 0) {
        out[0] = x;
        return 1;
    }
    out[0] = scan(c, x, dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), t.rank), "aten.mul.Tensor", 1);
    return 1;
}

/* dist(self, other, p): the p-norm of self - other over all elements. */
int dc_r_dist(dctx *c, const gr_node *n, int *out)
{
    int d = dc_bin(c, "aten.sub.Tensor", dc_fx(c, dc_val(c, n, 0, "self")), dc_fx(c, dc_val(c, n, 1, "other")));
    out[0] = pnorm(c, d, dc_num(c, n, 2, "p", 2), 0, NULL, 0);
    return 1;
}

/* _trilinear as nn.Bilinear calls it (x1 (B, I), weight (O, I, J), x2
 * (B, J); expand1 [1, 3], expand2 [0], expand3 [1, 2], sumdim [2, 3]):
 * t = x2 @ weight as (J, O*I), one product on the PT units, then
 * sum_i t (B, O, I) * x1 (B, 1, I).  Other forms stay for the host. */
int dc_r_trilinear(dctx *c, const gr_node *n, int *out)
{
    static const int64_t want[4][2] = {{1, 3}, {0, -1}, {1, 2}, {2, 3}};
    static const char *const keys[4] = {"expand1", "expand2", "expand3", "sumdim"};
    for (int k = 0; k < 4; k++) {
        int64_t v[GR_MAX_RANK];
        int m = dc_ints(c, n, 3 + k, keys[k], v);
        if (m != (want[k][1] < 0 ? 1 : 2) || v[0] != want[k][0] || (m == 2 && v[1] != want[k][1]))
            return 0;
    }
    int a = dc_val(c, n, 0, "i1"), w = dc_val(c, n, 1, "i2"), b = dc_val(c, n, 2, "i3");
    gr_ttype ta = dc_T(c, a), tw = dc_T(c, w), tb = dc_T(c, b);
    if (ta.rank != 2 || tw.rank != 3 || tb.rank != 2 || ta.shape[1] != tw.shape[1] || tb.shape[1] != tw.shape[2] ||
        ta.shape[0] != tb.shape[0])
        return 0;
    int64_t B = ta.shape[0], O = tw.shape[0], I = tw.shape[1], J = tw.shape[2];
    int64_t perm[3] = {2, 0, 1}, wj[2] = {J, O * I}, boi[3] = {B, O, I}, last = 2;
    int wt = dc_reshape(c, dc_permute(c, w, perm), 2, wj);
    int t = dc_reshape(c, dc_matmul(c, "aten.mm.default", b, wt), 3, boi);
    out[0] = dc_red(c, "aten.sum.dim_IntList", dc_bin(c, "aten.mul.Tensor", t, dc_unsqueeze(c, a, 1)), 1, &last, 0);
    return 1;
}

/* Is source value v laid out over a storage of its own, row-major from
 * offset 0: a graph input or parameter, an op's fresh result, or a
 * reshape-like view of one?  (as_strided reads its self's storage.) */
static int own_storage(const gr_graph *g, int v)
{
    for (int hops = 0; hops < 64; hops++) {
        int n = g->values[v].node;
        if (n < 0)
            return 1;
        const gr_node *s = &g->nodes[n];
        const unsigned a = ir_op_attrs(s->base);
        if (!(a & IR_OP_VIEW))
            return 1;
        if (!(a & (IR_OP_RESHAPE | IR_OP_ALIAS)))
            return 0;
        if (!s->nargs || s->args[0].kind != GR_ARG_VALUE)
            return 0;
        v = s->args[0].value;
    }
    return 0;
}

/* as_strided(self, size, stride, storage_offset): a view of self's
 * storage.  A layout that is a permutation of a row-major one over all of
 * self from offset 0 (size-1 dims aside: their strides are never used) is
 * a reshape and a permute of self; any other stays for the host. */
int dc_r_as_strided(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    gr_ttype t = dc_T(c, x);
    int64_t size[GR_MAX_RANK], stride[GR_MAX_RANK], sorted[GR_MAX_RANK], perm[GR_MAX_RANK];
    int r = dc_ints(c, n, 1, "size", size), rs = dc_ints(c, n, 2, "stride", stride), ord[GR_MAX_RANK], m = 0;
    const gr_arg *self = gr_node_arg(n, 0, "self");
    if (r < 0 || rs != r || dc_num(c, n, 3, "storage_offset", 0) != 0 || !own_storage(c->g, self->value))
        return 0;
    for (int d = 0; d < r; d++)
        if (size[d] != 1)
            ord[m++] = d;
    for (int i = 1; i < m; i++) /* by stride, largest first */
        for (int k = i; k > 0 && stride[ord[k]] > stride[ord[k - 1]]; k--) {
            int s = ord[k];
            ord[k] = ord[k - 1], ord[k - 1] = s;
        }
    int64_t want = 1;
    for (int i = m - 1; i >= 0; i--) {
        if (stride[ord[i]] != want)
            return 0;
        want *= size[ord[i]];
        sorted[i] = size[ord[i]];
    }
    if (want != dc_numel(&t))
        return 0;
    int y = dc_reshape(c, x, m, sorted);
    for (int k = 0, i = 0; i < r; i++) /* the k-th dim kept, in self's order, is at ord's position */
        if (size[i] != 1) {
            for (int p = 0; p < m; p++)
                if (ord[p] == i)
                    perm[k] = p;
            k++;
        }
    int identity = 1;
    for (int k = 0; k < m; k++)
        identity &= perm[k] == k;
    if (!identity) {
        gr_ttype tp = dc_T(c, y);
        for (int k = 0; k < m; k++)
            tp.shape[k] = sorted[perm[k]];
        y = DC_EMIT(c, "aten.permute.default", tp, da_val(y), da_ints(m, perm));
    }
    out[0] = dc_reshape(c, y, r, size);
    return 1;
}
