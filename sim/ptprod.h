/* ptprod.h: a PT product's fp32 sums on the host (ptprod.c; private to
 * the simulator, here on its own so that a test can hold it to one
 * cblas_sgemm call bit for bit). */
#ifndef SIM_PTPROD_H
#define SIM_PTPROD_H

#include <stdint.h>

/* C (m x n) = A (m x k) B (k x n), plus C when acc: the same bits as one
 * cblas_sgemm call with beta acc ? 1 : 0, on any host. */
void sim_pt_product(const float *A, const float *B, float *C, int64_t m, int64_t n, int64_t k, int acc);

#endif
