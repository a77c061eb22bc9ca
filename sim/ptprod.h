/* ptprod.h: a PT product's fp32 sums on the host (ptprod.c; private to
 * the simulator, here on its own so that a test can hold it to one
 * cblas_sgemm call bit for bit). */
#ifndef SIM_PTPROD_H
#define SIM_PTPROD_H

#include <stdint.h>

/* C (m x n) = A (m x k) B (k x n), plus C when acc: the same bits as one
 * cblas_sgemm call with beta acc ? 1 : 0 (OpenBLAS on one thread, as
 * during a run), on any host. */
void sim_pt_product(const float *A, const float *B, float *C, int64_t m, int64_t n, int64_t k, int acc);

/* May products of this shape run on operands packed ahead (below)?  Only
 * where the host's OpenBLAS kernel and packing routines were found and a
 * product of the shape gave one cblas_sgemm call's bits (checked once per
 * shape, on one OpenBLAS thread; with more the answer is no). */
int sim_pt_packs(int64_t m, int64_t n, int64_t k);
/* A (m x k, row-major) or B (k x n) packed as OpenBLAS packs them for its
 * kernel, into out: m * k (or k * n) floats on a 64-byte boundary. */
void sim_pt_pack_a(const float *A, int64_t m, int64_t k, float *out);
void sim_pt_pack_b(const float *B, int64_t k, int64_t n, float *out);
/* sim_pt_product on packed operands, for a shape sim_pt_packs allows. */
void sim_pt_product_packed(const float *pa, const float *pb, float *C, int64_t m, int64_t n, int64_t k, int acc);
/* Packed operands allowed (1, the default) or not (0: every product
 * calls cblas_sgemm), so that a test can run a program both ways and
 * compare the bits; and how many products ran packed in this process. */
void sim_pt_packing(int on);
long sim_pt_packed_products(void);

#endif
