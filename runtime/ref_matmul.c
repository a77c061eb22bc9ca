/* ref_matmul.c: reference ops: matrix products through OpenBLAS (mm, bmm, addmm, linear, ...) and attention. */
#include "ref_internal.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* C[M,N] = A[M,K] (or its transpose) x B[K,N] (or its transpose), row-major. */
static int gemm(ex *E, int ta, int tb, int64_t M, int64_t N, int64_t K, const float *a, int64_t lda, const float *b,
                int64_t ldb, float *c, int64_t ldc)
{
    if (!fits_int(M) || !fits_int(N) || !fits_int(K) || !fits_int(lda) || !fits_int(ldb) || !fits_int(ldc))
        return ref_fail(E, "matrix too large for BLAS");
    if (!M || !N)
        return 0;
    if (!K) {
        for (int64_t i = 0; i < M; i++)
            memset(c + i * ldc, 0, (size_t)N * sizeof *c);
        return 0;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K,
                1.0f, a, (int)(lda ? lda : 1), b, (int)(ldb ? ldb : 1), 0.0f, c, (int)(ldc ? ldc : 1));
    return 0;
}

/* x as fp32: x->f, or a converted copy in *owned. */
static const float *as_f32(ex *E, const tens *x, float **owned)
{
    *owned = NULL;
    if (x->f)
        return x->f;
    *owned = malloc((x->n ? (size_t)x->n : 1) * sizeof **owned);
    if (!*owned) {
        ref_fail(E, "out of host memory");
        return NULL;
    }
    for (int64_t k = 0; k < x->n; k++)
        (*owned)[k] = (float)x->i[k];
    return *owned;
}

static int mm_shapes_fail(ex *E, const tens *a, const tens *b)
{
    char s1[256], s2[256];
    ref_shape_str("", a->rank, a->shape, s1, sizeof s1);
    ref_shape_str("", b->rank, b->shape, s2, sizeof s2);
    return ref_fail(E, "shapes %s and %s cannot be multiplied", s1, s2);
}

/* out = beta * bias (broadcast to out) + alpha * out */
static int add_scaled_bias(ex *E, tens *o, const tens *bias, double alpha, double beta)
{
    const tens *ts[2] = {o, bias};
    int rank = 0;
    int64_t shape[MAXR];
    if (ref_bcast(E, 2, ts, &rank, shape))
        return -1;
    if (rank != o->rank || memcmp(shape, o->shape, (size_t)rank * sizeof *shape))
        return ref_fail(E, "the added tensor does not broadcast to the product's shape");
    iter it;
    ref_iter_tensors(&it, rank, shape, 2, ts);
    float al = (float)alpha, be = (float)beta;
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        for (int w = 0; o->eb[0] && w < 2; w++) { /* the product stored, then alpha *, beta * bias, + */
            bv pr = {o->f[k], o->eb[w][k], w};
            if (alpha != 1)
                pr = ref_bv_mul(pr, ref_bv_k(alpha));
            if (beta != 0) {
                bv bb = {ldd(bias, it.off[1]), ldb(bias, w, it.off[1]), w};
                pr = ref_bv_add(pr, beta == 1 ? bb : ref_bv_mul(bb, ref_bv_k(beta)));
            }
            o->eb[w][k] = (float)pr.e;
        }
        float p = alpha == 1 ? o->f[k] : al * o->f[k];
        o->f[k] = beta == 0 ? p : beta == 1 ? ldf(bias, it.off[1]) + p : be * ldf(bias, it.off[1]) + p;
    }
    return 0;
}

/* matmul's batch geometry: out = a x b, b one matrix (a's batch folded
 * into rows) or batches of n x k times k x m, broadcast. */
typedef struct {
    const tens *a, *b;
    int64_t n, k, m, batches;
    int br, bra, brb;
    int64_t bshape[MAXR];
} mm_geom;

static int mm_apply(ex *E, const mm_geom *g, const float *fa, const float *fb, float *out)
{
    int64_t n = g->n, k = g->k, m = g->m;
    if (g->brb == 0 || g->batches == 1) {
        /* b is one matrix: fold a's batch into rows */
        int64_t rows = g->a->n / (k ? k : 1);
        if (!k)
            rows = ref_numel(g->a->rank - 1, g->a->shape);
        return gemm(E, 0, 0, rows, m, k, fa, k, fb, m, out, m);
    }
    int ranks[2] = {g->bra, g->brb}, rc = 0;
    const int64_t *shapes[2] = {g->a->shape, g->b->shape};
    iter it;
    ref_iter_init(&it, g->br, g->bshape, 2, ranks, shapes);
    for (int64_t q = 0; q < g->batches && !rc; q++, iter_next(&it))
        rc = gemm(E, 0, 0, n, m, k, fa + it.off[0] * n * k, k, fb + it.off[1] * k * m, m, out + q * n * m, m);
    return rc;
}

/* A product as mm_apply does it (linear 0), or x (rows x K) times w^T
 * (w M x K) as linear does it. */
typedef struct {
    int linear;
    mm_geom g;
    int64_t rows, M, K;
} mm_plan;

static int mm_prod_plain(ex *E, const mm_plan *p, const float *a, const float *b, float *out)
{
    if (p->linear)
        return gemm(E, 0, 1, p->rows, p->M, p->K, a, p->K, b, p->K, out, p->M);
    return mm_apply(E, &p->g, a, b, out);
}

/* x's n entries (>= 0) split: fin the finite ones (an infinity 0), inf 1
 * where x is infinite, pos 1 where x > 0; returns whether any is infinite. */
static int split_inf(const float *x, int64_t n, float *fin, float *inf, float *pos)
{
    int any = 0;
    for (int64_t i = 0; i < n; i++) {
        int is = isinf(x[i]);
        any |= is;
        fin[i] = is ? 0 : x[i];
        inf[i] = is ? 1.0f : 0.0f;
        pos[i] = x[i] > 0 ? 1.0f : 0.0f;
    }
    return any;
}

/* A product of two matrices of bounds (entries >= 0, infinities allowed)
 * where a zero times an infinity is 0, never NaN (docs/validation.md: an
 * exact zero times anything the device holds is exactly 0): BLAS makes
 * such a term NaN.  With an infinity in either operand: the product of
 * the finite parts, infinite where some term has an infinite factor and a
 * positive other one. */
static int mm_prod(ex *E, const mm_plan *p, const float *a, int64_t na, const float *b, int64_t nb, float *out,
                   int64_t no)
{
    float *w = malloc((size_t)(3 * (na + nb) + no + 1) * sizeof *w);
    if (!w)
        return ref_fail(E, "out of host memory");
    float *af = w, *ai = af + na, *ap = ai + na, *bf = ap + na, *bi = bf + nb, *bp = bi + nb, *t = bp + nb;
    int ainf = split_inf(a, na, af, ai, ap), binf = split_inf(b, nb, bf, bi, bp), rc;
    if (!ainf && !binf)
        rc = mm_prod_plain(E, p, a, b, out);
    else
        rc = mm_prod_plain(E, p, af, bf, out) || mm_prod_plain(E, p, ai, bp, t) ? -1 : 0;
    for (int64_t i = 0; !rc && (ainf || binf) && i < no; i++)
        out[i] = t[i] > 0 ? INFINITY : out[i];
    if (!rc && binf)
        rc = mm_prod_plain(E, p, ap, bi, t);
    for (int64_t i = 0; !rc && binf && i < no; i++)
        out[i] = t[i] > 0 ? INFINITY : out[i];
    free(w);
    return rc;
}

/* The bounds of a matrix product C = A B (the PT unit: operands in DL16,
 * exact products, K fp32 sums, C stored in DL16; docs/validation.md), per
 * element, track 0:
 *   (1+u) (E_A |B| + |A| E_B) + E_A E_B + K 2^-23 |A||B| + u |C|
 * as the two products (K 2^-23 |A| + (1+u) E_A) |B| and ((1+u)|A| + E_A) E_B;
 * track 1, the terms of the sum over k and the fp32 roundings in quadrature:
 *   (1+u) (sqrt(S_A^2 (|B| + lambda S_B)^2) + sqrt(A^2 S_B^2)) + sqrt(K) 2^-23 |A||B| + u |C|
 * (squares and roots elementwise, the products over k).  Both with the
 * flush to zero of a result below 2^-31. */
static int mm_bounds(ex *E, const mm_plan *p, const float *fa, const tens *a, const float *fb, const tens *b, tens *o)
{
    size_t na = a->n ? (size_t)a->n : 1, nb = b->n ? (size_t)b->n : 1, no = o->n ? (size_t)o->n : 1;
    float *a1 = malloc(na * sizeof *a1), *a2 = malloc(na * sizeof *a2);
    float *b1 = malloc(nb * sizeof *b1), *b2 = malloc(nb * sizeof *b2);
    float *t1 = malloc(no * sizeof *t1), *t2 = malloc(no * sizeof *t2);
    int rc = a1 && a2 && b1 && b2 && t1 && t2 ? 0 : ref_fail(E, "out of host memory");
    const double K = (double)p->K, u = EB_U, lam = EB_LAMBDA;
    /* track 0 */
    for (int64_t i = 0; !rc && i < a->n; i++) {
        double x = fabs(fa[i]), e = ldb(a, 0, i);
        a1[i] = (float)(K * EB_ACC * x + (1 + u) * e);
        a2[i] = (float)((1 + u) * x + e);
    }
    for (int64_t i = 0; !rc && i < b->n; i++) {
        b1[i] = fabsf(fb[i]);
        b2[i] = (float)ldb(b, 0, i);
    }
    if (!rc)
        rc = mm_prod(E, p, a1, a->n, b1, b->n, o->eb[0], o->n) || mm_prod(E, p, a2, a->n, b2, b->n, t1, o->n) ? -1 : 0;
    for (int64_t i = 0; !rc && i < o->n; i++) {
        double c = fabs(o->f[i]), q = (double)o->eb[0][i] + t1[i], r = u * c;
        o->eb[0][i] = (float)(q + (c - q < EB_FLUSH ? fmax(r, EB_FLUSH) : r));
    }
    /* track 1: S_A^2 (|B| + lambda S_B)^2, A^2 S_B^2, |A||B| */
    for (int64_t i = 0; !rc && i < a->n; i++) {
        double e = ldb(a, 1, i);
        a1[i] = (float)(e * e);
        a2[i] = fa[i] * fa[i];
    }
    for (int64_t i = 0; !rc && i < b->n; i++) {
        double e = ldb(b, 1, i), x = fabs(fb[i]) + lam * e;
        b2[i] = (float)(x * x);
    }
    if (!rc)
        rc = mm_prod(E, p, a1, a->n, b2, b->n, t1, o->n) ? -1 : 0;
    for (int64_t i = 0; !rc && i < b->n; i++) {
        double e = ldb(b, 1, i);
        b2[i] = (float)(e * e);
    }
    for (int64_t i = 0; !rc && i < a->n; i++)
        a1[i] = fabsf(fa[i]);
    if (!rc)
        rc = mm_prod(E, p, a2, a->n, b2, b->n, t2, o->n) || mm_prod(E, p, a1, a->n, b1, b->n, o->eb[1], o->n) ? -1 : 0;
    for (int64_t i = 0; !rc && i < o->n; i++) {
        double c = fabs(o->f[i]), r = u * c;
        double q = (1 + u) * (sqrt(fmax(0, t1[i])) + sqrt(fmax(0, t2[i]))) + ref_eb_acc_n(K, 1) * EB_ACC * o->eb[1][i];
        r = c - lam * q < EB_FLUSH ? fmax(r, EB_FLUSH) : r;
        o->eb[1][i] = (float)sqrt(q * q + r * r);
    }
    free(a1), free(a2), free(b1), free(b2), free(t1), free(t2);
    return rc;
}

/* matmul with PyTorch's rules: 1-D operands get a dim added and removed,
 * batch dims broadcast.  mm and bmm check their ranks first.  The product
 * is the next result, or (tmp not NULL) the temporary *tmp. */
static int matmul(ex *E, const tens *a, const tens *b, tens **out, tens *tmp)
{
    if (a->rank == 0 || b->rank == 0)
        return ref_fail(E, "matmul of a rank-0 tensor");
    int ra = a->rank, rb = b->rank;
    int64_t n = ra >= 2 ? a->shape[ra - 2] : 1, k = a->shape[ra - 1];
    int64_t kb = rb >= 2 ? b->shape[rb - 2] : b->shape[0], m = rb >= 2 ? b->shape[rb - 1] : 1;
    if (k != kb)
        return mm_shapes_fail(E, a, b);
    /* batch dims */
    int bra = ra > 2 ? ra - 2 : 0, brb = rb > 2 ? rb - 2 : 0, br = bra > brb ? bra : brb;
    int64_t bshape[MAXR];
    for (int d = 0; d < br; d++) {
        int da = d - (br - bra), db = d - (br - brb);
        int64_t x = da >= 0 ? a->shape[da] : 1, y = db >= 0 ? b->shape[db] : 1;
        if (x != y && x != 1 && y != 1)
            return mm_shapes_fail(E, a, b);
        bshape[d] = x == 1 ? y : x;
    }
    int64_t oshape[MAXR];
    int orank = br;
    memcpy(oshape, bshape, (size_t)br * sizeof *oshape);
    if (ra >= 2)
        oshape[orank++] = n;
    if (rb >= 2)
        oshape[orank++] = m;
    tens *o = tmp;
    if (tmp ? ref_temp_tensor(E, tmp, K_F, orank, oshape) : !(o = ref_new_result(E, K_F, orank, oshape)))
        return -1;
    *out = o;
    float *oa, *ob;
    const float *fa = as_f32(E, a, &oa), *fb = fa ? as_f32(E, b, &ob) : NULL;
    if (!fb) {
        free(oa);
        return -1;
    }
    mm_geom g = {a, b, n, k, m, ref_numel(br, bshape), br, bra, brb, {0}};
    memcpy(g.bshape, bshape, sizeof g.bshape);
    int rc = mm_apply(E, &g, fa, fb, o->f);
    if (!rc && o->eb[0]) {
        mm_plan pl = {0, g, 0, 0, k};
        rc = mm_bounds(E, &pl, fa, a, fb, b, o);
    }
    free(oa);
    free(ob);
    return rc;
}

enum { M_MM, M_BMM, M_MATMUL, M_ADDMM, M_BADDBMM, M_LINEAR, M_ADDMV, M_ADDR, M_ADDBMM, M_MV };

/* The operands of addmv (mat @ vec), addr (vec1 as a column times vec2 as
 * a row: K = 1) and addbmm (the sum over the batch of batch1[b] @ batch2[b]
 * is one product with K = B k: batch1 as n x (B k), its copy in *tmp, and
 * batch2 as (B k) x m) as views av, bv for matmul. */
static int reduced_operands(ex *E, int how, const tens **a, const tens **b, tens *av, tens *bv, tens *tmp)
{
    const tens *x = *a, *y = *b;
    int bad = how == M_ADDMV ? x->rank != 2 || y->rank != 1
              : how == M_ADDR ? x->rank != 1 || y->rank != 1
                              : x->rank != 3 || y->rank != 3 || x->shape[0] != y->shape[0] || x->shape[2] != y->shape[1];
    if (bad)
        return mm_shapes_fail(E, x, y);
    if (how == M_ADDMV)
        return 0;
    *av = *x, *bv = *y;
    av->rank = bv->rank = 2;
    if (how == M_ADDR) {
        av->shape[1] = 1;
        bv->shape[0] = 1, bv->shape[1] = y->shape[0];
    } else {
        int64_t B = x->shape[0], n = x->shape[1], k = x->shape[2], st[3] = {k, n * k, 1}, sh[3] = {n, B, k};
        if (ref_temp_tensor(E, tmp, kind_of(x->dtype), 3, sh))
            return -1;
        if (tmp->n)
            ref_strided_copy(x, 3, sh, st, 0, tmp); /* [n, B, k] */
        *av = *tmp;
        av->rank = 2, av->shape[0] = n, av->shape[1] = B * k;
        bv->shape[0] = B * k, bv->shape[1] = y->shape[2];
    }
    av->n = ref_numel(2, av->shape), bv->n = ref_numel(2, bv->shape);
    *a = av, *b = bv;
    return 0;
}

/* mm(self, mat2), bmm(self, mat2), matmul(self, other),
 * addmm(self, mat1, mat2, beta=1, alpha=1), baddbmm(self, batch1, batch2, beta=1, alpha=1),
 * linear(input, weight, bias=None) */
static int op_matmul(ex *E, int how)
{
    tens *o = NULL;
    if (how == M_LINEAR) {
        const tens *x = ref_arg_tensor(E, 0, "input"), *w = x ? ref_arg_tensor(E, 1, "weight") : NULL;
        if (!w)
            return -1;
        const gr_arg *ab = ref_arg(E, 2, "bias");
        const tens *b = ref_present(ab) ? ref_tensor_of(E, ab, "bias") : NULL;
        if (ref_present(ab) && !b)
            return -1;
        if (x->rank == 0 || w->rank != 2 || x->shape[x->rank - 1] != w->shape[1])
            return mm_shapes_fail(E, x, w);
        int64_t shape[MAXR], K = w->shape[1], M = w->shape[0], rows = ref_numel(x->rank - 1, x->shape);
        memcpy(shape, x->shape, sizeof shape);
        shape[x->rank - 1] = M;
        if (!(o = ref_new_result(E, K_F, x->rank, shape)))
            return -1;
        float *ox, *ow;
        const float *fx = as_f32(E, x, &ox), *fw = fx ? as_f32(E, w, &ow) : NULL;
        int rc = fw ? gemm(E, 0, 1, rows, M, K, fx, K, fw, K, o->f, M) : -1;
        if (!rc && o->eb[0]) { /* the mm bounds with w transposed */
            mm_plan pl = {1, {0}, rows, M, K};
            rc = mm_bounds(E, &pl, fx, x, fw, w, o);
        }
        free(ox);
        if (fw)
            free(ow);
        if (rc)
            return -1;
        return b ? add_scaled_bias(E, o, b, 1, 1) : 0;
    }
    static const char *const keys[][2] = {{"self", "mat2"}, {"self", "mat2"}, {"self", "other"},   {"mat1", "mat2"},
                                          {"batch1", "batch2"}, {"input", "weight"}, {"mat", "vec"}, {"vec1", "vec2"},
                                          {"batch1", "batch2"}, {"self", "vec"}};
    int three = how == M_ADDMM || how == M_BADDBMM || (how >= M_ADDMV && how <= M_ADDBMM);
    const char *k1 = keys[how][0], *k2 = keys[how][1];
    const tens *bias = three ? ref_arg_tensor(E, 0, "self") : NULL;
    if (three && !bias)
        return -1;
    const tens *a = ref_arg_tensor(E, three, k1), *b = a ? ref_arg_tensor(E, three + 1, k2) : NULL;
    if (!b)
        return -1;
    int want = how == M_MM || how == M_ADDMM ? 2 : how == M_BMM || how == M_BADDBMM ? 3 : 0;
    if (want && (a->rank != want || b->rank != want || (want == 3 && a->shape[0] != b->shape[0])))
        return mm_shapes_fail(E, a, b);
    tens av, bv, tmp = {0};
    int rc = three && how >= M_ADDMV ? reduced_operands(E, how, &a, &b, &av, &bv, &tmp) : 0;
    rc = rc ? rc : matmul(E, a, b, &o, NULL);
    ref_tfree(&tmp);
    if (rc)
        return -1;
    if (!three)
        return 0;
    double beta, alpha;
    if (ref_arg_num(E, 3, "beta", 1, &beta) || ref_arg_num(E, 4, "alpha", 1, &alpha))
        return -1;
    return add_scaled_bias(E, o, bias, alpha, beta);
}

/* scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
 * is_causal=False, scale=None): softmax(q k^T * scale + mask) v, with a bool
 * mask keeping where true, a float mask added, is_causal keeping j <= i. */
static int op_sdpa(ex *E, int unused)
{
    (void)unused;
    const tens *q = ref_arg_tensor(E, 0, "query"), *k = q ? ref_arg_tensor(E, 1, "key") : NULL;
    const tens *v = k ? ref_arg_tensor(E, 2, "value") : NULL;
    if (!v)
        return -1;
    const gr_arg *am = ref_arg(E, 3, "attn_mask");
    const tens *mask = ref_present(am) ? ref_tensor_of(E, am, "attn_mask") : NULL;
    double p, scale;
    int causal = 0;
    if ((ref_present(am) && !mask) || ref_arg_num(E, 4, "dropout_p", 0, &p) ||
        ref_arg_bool(E, 5, "is_causal", 0, &causal))
        return -1;
    if (p != 0)
        return ref_fail(E, "attention dropout with p=%g is random: the reference runs only p=0", p);
    if (q->rank < 2 || k->rank < 2 || v->rank < 2)
        return ref_fail(E, "query, key and value need rank >= 2");
    if (ref_arg_num(E, 6, "scale", 1 / sqrt((double)q->shape[q->rank - 1]), &scale))
        return -1;
    /* kt = k^T over the last two dims */
    tens kt, s = {0};
    int64_t st[MAXR], shape[MAXR];
    ref_contiguous_strides(k->rank, k->shape, st);
    memcpy(shape, k->shape, sizeof shape);
    int r = k->rank;
    int64_t tmp = shape[r - 1];
    shape[r - 1] = shape[r - 2];
    shape[r - 2] = tmp;
    tmp = st[r - 1];
    st[r - 1] = st[r - 2];
    st[r - 2] = tmp;
    if (ref_temp_tensor(E, &kt, kind_of(k->dtype), r, shape))
        return -1;
    ref_strided_copy(k, r, shape, st, 0, &kt);
    tens *sp = NULL;
    int rc = matmul(E, q, &kt, &sp, &s);
    ref_tfree(&kt);
    if (rc)
        return -1;
    int64_t L = s.shape[s.rank - 2], S = s.shape[s.rank - 1];
    if (mask) {
        const tens *ts[2] = {&s, mask};
        int mr;
        int64_t ms[MAXR];
        if (ref_bcast(E, 2, ts, &mr, ms)) {
            ref_tfree(&s);
            return -1;
        }
        if (mr != s.rank || memcmp(ms, s.shape, (size_t)mr * sizeof *ms)) {
            ref_tfree(&s);
            return ref_fail(E, "attn_mask does not broadcast to the scores");
        }
    }
    iter it;
    const tens *ts[2] = {&s, mask ? mask : &s};
    ref_iter_tensors(&it, s.rank, s.shape, 2, ts);
    for (int64_t e = 0; e < s.n; e++, iter_next(&it)) {
        int64_t i = (e / S) % L, j = e % S;
        float x = (float)(s.f[e] * scale);
        for (int w = 0; s.eb[0] && w < 2; w++) { /* the scores scaled, then masked (a select, or an add) */
            bv b = ref_bv_mul((bv){s.f[e], s.eb[w][e], w}, ref_bv_k(scale));
            if (mask && kind_of(mask->dtype) == K_B)
                b.e = ref_select_bound(ref_eb_flips(ldd(mask, it.off[1]), ldb(mask, w, it.off[1]), w), b.v, b.e,
                                       -INFINITY, 0, mask->i[it.off[1]] != 0, w);
            else if (mask)
                b = ref_bv_add(b, (bv){ldd(mask, it.off[1]), ldb(mask, w, it.off[1]), w});
            s.eb[w][e] = (float)(causal && j > i ? 0 : b.e);
        }
        if (mask && kind_of(mask->dtype) == K_B)
            x = mask->i[it.off[1]] ? x : -INFINITY;
        else if (mask)
            x += ldf(mask, it.off[1]);
        if (causal && j > i)
            x = -INFINITY;
        s.f[e] = x;
        for (int w = 0; s.eb[0] && w < 2; w++)
            if (!isfinite(x) && isfinite(s.eb[w][e]))
                s.eb[w][e] = 0;
    }
    /* softmax over the last dim, in double */
    for (int64_t row = 0; S && row < s.n / S; row++) {
        float *x = s.f + row * S;
        for (int w = 0; s.eb[0] && w < 2; w++)
            ref_softmax_bound(x, s.eb[w] + row * S, S, 1, s.eb[w] + row * S, w);
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < S; j++)
            m = x[j] > m ? x[j] : m;
        for (int64_t j = 0; j < S; j++)
            sum += exp(x[j] - m);
        for (int64_t j = 0; j < S; j++)
            x[j] = (float)(exp(x[j] - m) / sum);
    }
    tens *o;
    rc = matmul(E, &s, v, &o, NULL);
    ref_tfree(&s);
    return rc;
}

static const ref_op ops[] = {
    /* matrix products (cblas_sgemm) */
    {"mm", op_matmul, M_MM},             /* self @ mat2, 2-D */
    {"bmm", op_matmul, M_BMM},           /* batched, 3-D */
    {"matmul", op_matmul, M_MATMUL},     /* 1-D / 2-D / batched with broadcast */
    {"addmm", op_matmul, M_ADDMM},       /* beta self + alpha mat1 @ mat2 */
    {"baddbmm", op_matmul, M_BADDBMM},   /* beta self + alpha batch1 @ batch2 */
    {"linear", op_matmul, M_LINEAR},     /* input @ weight^T + bias */
    {"mv", op_matmul, M_MV},             /* self @ vec */
    {"addmv", op_matmul, M_ADDMV},       /* beta self + alpha mat @ vec */
    {"addr", op_matmul, M_ADDR},         /* beta self + alpha vec1 vec2^T */
    {"addbmm", op_matmul, M_ADDBMM},     /* beta self + alpha sum_b batch1[b] @ batch2[b] */
    {"scaled_dot_product_attention", op_sdpa, 0}, /* softmax(q k^T scale + mask) v */
};
const ref_ops ref_matmul_ops = REF_OPS(ops);
