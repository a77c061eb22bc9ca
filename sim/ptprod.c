/* ptprod.c: a PT product's fp32 sums on the host, through OpenBLAS. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "ptprod.h"

#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Products are cut into column blocks of at most SMALL_MNK multiply-adds
 * where OpenBLAS (0.3.21) has its "small" kernel, which runs products up
 * to that size straight from A and B; larger ones go through its packing
 * driver, which copies them first (a GEMM's 64 x 64 by 64 x 256 product,
 * 1.05 M, took 21 us whole and 18.4 us as two halves on a Cooper Lake).
 * Every C element is still one sum over k in order there, so the bits are
 * one call's: only up to SPLIT_K, as past OpenBLAS's K block (384 and up)
 * the packing driver adds each block's sums to C and the small kernel
 * does not.  Only on the kernels where that was checked (SkylakeX and
 * Cooperlake): on Haswell's and Zen's, 387 of a 64 x 64 by 64 x 256
 * product's 16,384 sums came out different in blocks.  Blocks are 16
 * columns times a power of two (a 256 x 64 by 64 x 256 product: 8% faster
 * in blocks of 32, 2% in blocks of 48), keeping B's and C's rows on
 * 64-byte boundaries; a product too big for 16 columns stays whole. */
#define SMALL_MNK 1000000.0
#define SPLIT_K 256

/* Packed operands, on the cores whose OpenBLAS (0.3.21) runs Haswell's
 * sgemm kernel (Haswell, Zen).  A GEMM's product (64 x 64 by 64 x 256)
 * spent 8% of its time in OpenBLAS packing its operands (16.4 us a call,
 * 15.1 us on packed ones), and each A and B tile feeds several products:
 * packed once with OpenBLAS's own routines and handed to its kernel in
 * the calls its driver makes (level3.c, one thread), the sums are the
 * same: 29,440 shapes (m 1-128, n 1-310, k 1-300), beta 0 and 1, gave one
 * call's bits, and with n or k from 321 on, past the driver's blocks
 * (GEMM_P = GEMM_Q = 320), none did. */
#define PACK_MAX_NK 320
#define PACK_MAX_M 1024
#define UNROLL_N 4 /* the driver's kernel calls take 3 or 1 panels of 4 columns of C */

typedef int (*kernel_fn)(long m, long n, long k, float alpha, const float *a, const float *b, float *c, long ldc);
typedef int (*copy_fn)(long m, long n, const float *a, long lda, float *b);

static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;
static atomic_int packing_off;
static atomic_long packed_products;
static int split_same_bits;
static struct {
    kernel_fn kernel;
    copy_fn itcopy, oncopy; /* B's and A's packing (C = A B row-major is B^T A^T to OpenBLAS) */
} blas;

/* OpenBLAS's routines for core (its DYNAMIC_ARCH names), or none. */
static void find_routines(const char *suffix)
{
    char name[64];
    snprintf(name, sizeof name, "sgemm_kernel_%s", suffix);
    kernel_fn kernel = (kernel_fn)dlsym(RTLD_DEFAULT, name);
    snprintf(name, sizeof name, "sgemm_itcopy_%s", suffix);
    copy_fn itcopy = (copy_fn)dlsym(RTLD_DEFAULT, name);
    snprintf(name, sizeof name, "sgemm_oncopy_%s", suffix);
    copy_fn oncopy = (copy_fn)dlsym(RTLD_DEFAULT, name);
    if (kernel && itcopy && oncopy)
        blas.kernel = kernel, blas.itcopy = itcopy, blas.oncopy = oncopy;
}

static void kernel_check(void)
{
    const char *core = openblas_get_corename();
    split_same_bits = core && (!strcasecmp(core, "skylakex") || !strcasecmp(core, "cooperlake"));
    /* the packing routines of 0.3.21 write exactly rows x cols floats (checked
     * with guard bytes on 14,160 shapes); another version's might pad its
     * last panel past the buffers, so only this one packs ahead */
    const char *config = openblas_get_config();
    if (!config || strncmp(config, "OpenBLAS 0.3.21 ", 16))
        return;
    if (core && !strcasecmp(core, "haswell"))
        find_routines("HASWELL");
    else if (core && !strcasecmp(core, "zen"))
        find_routines("ZEN");
}

/* The width of C's column blocks: n when the product stays whole. */
static int64_t block_width(int64_t m, int64_t n, int64_t k)
{
    const double mnk = (double)m * (double)n * (double)k;
    if (k > SPLIT_K || mnk <= SMALL_MNK)
        return n;
    pthread_once(&kernel_once, kernel_check);
    if (!split_same_bits)
        return n;
    const int64_t parts = (int64_t)((mnk + SMALL_MNK - 1) / SMALL_MNK), most = n / parts;
    int64_t w = 16;
    while (w * 2 <= most)
        w *= 2;
    return most < 16 ? n : w;
}

void sim_pt_product(const float *A, const float *B, float *C, int64_t m, int64_t n, int64_t k, int acc)
{
    const int64_t w = block_width(m, n, k);
    for (int64_t c = 0; c < n; c += w)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)(n - c < w ? n - c : w), (int)k, 1.0f, A,
                    (int)k, B + c, (int)n, acc ? 1.0f : 0.0f, C + c, (int)n);
}

void sim_pt_pack_a(const float *A, int64_t m, int64_t k, float *out) { blas.oncopy((long)k, (long)m, A, (long)k, out); }

void sim_pt_pack_b(const float *B, int64_t k, int64_t n, float *out) { blas.itcopy((long)k, (long)n, B, (long)n, out); }

void sim_pt_product_packed(const float *pa, const float *pb, float *C, int64_t m, int64_t n, int64_t k, int acc)
{
    atomic_fetch_add_explicit(&packed_products, 1, memory_order_relaxed);
    if (!acc) /* beta 0: the driver zeroes C, then the kernel adds the sums to it */
        memset(C, 0, sizeof *C * (size_t)(m * n));
    for (int64_t j = 0, w; j < m; j += w) {
        w = m - j >= 3 * UNROLL_N ? 3 * UNROLL_N : m - j > UNROLL_N ? UNROLL_N : m - j;
        blas.kernel((long)n, (long)w, (long)k, 1.0f, pb, pa + k * j, C + j * n, (long)n);
    }
}

/* Numbers in [-1, 1) from a fixed seed, for the shape check. */
static void fill(float *v, int64_t count, uint64_t *x)
{
    for (int64_t i = 0; i < count; i++) {
        *x = *x * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)(*x >> 40) / (float)(1 << 23) - 1.0f;
    }
}

/* Does a product of this shape on packed operands give one cblas_sgemm
 * call's bits (beta 0 and 1)? */
static int packed_same_bits(int64_t m, int64_t n, int64_t k)
{
    /* each array on a 64-byte line of its own, as the worker's buffers */
    const size_t a = (size_t)(m * k + 15) & ~(size_t)15, b = (size_t)(k * n + 15) & ~(size_t)15,
                 c = (size_t)(m * n + 15) & ~(size_t)15;
    float *buf = aligned_alloc(64, sizeof(float) * 2 * (a + b + c));
    if (!buf)
        return 0;
    float *A = buf, *B = A + a, *C = B + b, *W = C + c, *pa = W + c, *pb = pa + a;
    uint64_t x = 1;
    fill(A, (int64_t)a, &x);
    fill(B, (int64_t)b, &x);
    sim_pt_pack_a(A, m, k, pa);
    sim_pt_pack_b(B, k, n, pb);
    int same = 1;
    for (int acc = 0; acc <= 1; acc++) {
        fill(C, (int64_t)c, &x);
        memcpy(W, C, sizeof *C * c);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, A, (int)k, B, (int)n,
                    acc ? 1.0f : 0.0f, W, (int)n);
        sim_pt_product_packed(pa, pb, C, m, n, k, acc);
        same &= !memcmp(C, W, sizeof *C * c);
    }
    free(buf);
    return same;
}

/* Shapes checked so far (a program has a few), under shapes_mu. */
#define SHAPES 64
static pthread_mutex_t shapes_mu = PTHREAD_MUTEX_INITIALIZER;
typedef struct {
    int64_t m, n, k;
    int same;
} shape_check;
static shape_check shapes[SHAPES];
static int nshapes;

int sim_pt_packs(int64_t m, int64_t n, int64_t k)
{
    /* a worker asks for one shape many times running: its last answer
     * spares the lock the workers share */
    static _Thread_local shape_check last;
    if (atomic_load_explicit(&packing_off, memory_order_relaxed))
        return 0;
    if (m == last.m && n == last.n && k == last.k)
        return last.same;
    if (m < 1 || n < 1 || k < 1 || m > PACK_MAX_M || n > PACK_MAX_NK || k > PACK_MAX_NK)
        return 0;
    pthread_once(&kernel_once, kernel_check);
    if (!blas.kernel)
        return 0;
    pthread_mutex_lock(&shapes_mu);
    int i = 0;
    while (i < nshapes && (shapes[i].m != m || shapes[i].n != n || shapes[i].k != k))
        i++;
    /* threaded OpenBLAS sums differently: judged only as a run calls it */
    if (i == nshapes && nshapes < SHAPES && openblas_get_num_threads() == 1)
        shapes[nshapes++] = (shape_check){m, n, k, packed_same_bits(m, n, k)};
    const int same = i < nshapes && shapes[i].same;
    if (i < nshapes)
        last = shapes[i];
    pthread_mutex_unlock(&shapes_mu);
    return same;
}

void sim_pt_packing(int on) { atomic_store(&packing_off, !on); }

long sim_pt_packed_products(void) { return atomic_load(&packed_products); }
