/* ptprod.c: a PT product's fp32 sums on the host, through OpenBLAS. */
#include "ptprod.h"

#include <cblas.h>
#include <pthread.h>
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

static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;
static int split_same_bits;

static void kernel_check(void)
{
    const char *core = openblas_get_corename();
    split_same_bits = core && (!strcasecmp(core, "skylakex") || !strcasecmp(core, "cooperlake"));
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
