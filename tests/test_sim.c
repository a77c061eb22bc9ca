/* test_sim.c: the simulator: device DRAM, every unit's semantics on small
 * hand-built programs, and the rule checks. */
#include <CUnit/CUnit.h>
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptprod.h"
#include "sim.h"
#include "testutil.h"

static chip_config cfg4;

static void put_dl16(uint8_t *lx, int64_t off, const float *v, int n)
{
    for (int i = 0; i < n; i++) {
        uint16_t h = isa_dl16_from_f32(v[i]);
        memcpy(lx + off + 2 * i, &h, 2);
    }
}

static float get_dl16(const uint8_t *lx, int64_t off)
{
    uint16_t h;
    memcpy(&h, lx + off, 2);
    return isa_dl16_to_f32(h);
}

static int run(sim *s, isa_program *p, sim_fault *f)
{
    sim_stats st;
    return sim_run(s, p, 0, &st, f);
}

/* ---- DRAM ---- */

static void test_dram_is_sparse_and_reads_zero_when_untouched(void)
{
    chip_config c;
    tu_config("spyre", &c);
    sim *s = sim_create(&c); /* 128 GB device: must not allocate it */
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    uint8_t buf[256];
    memset(buf, 0xaa, sizeof buf);
    CU_ASSERT_EQUAL(sim_dram_read(s, 100ull << 30, buf, sizeof buf), 0);
    CU_ASSERT_EQUAL(buf[0], 0);
    CU_ASSERT_EQUAL(buf[255], 0);
    /* a write straddling a page boundary reads back whole */
    uint8_t w[300];
    for (int i = 0; i < 300; i++)
        w[i] = (uint8_t)i;
    uint64_t addr = (64ull << 30) + c.dram_page_bytes - 100;
    CU_ASSERT_EQUAL(sim_dram_write(s, addr, w, sizeof w), 0);
    uint8_t r[300];
    CU_ASSERT_EQUAL(sim_dram_read(s, addr, r, sizeof r), 0);
    CU_ASSERT_EQUAL(memcmp(w, r, sizeof w), 0);
    CU_ASSERT_EQUAL(sim_dram_write(s, c.dram_bytes - 10, w, 20), -1);
    sim_destroy(s);
}

/* sim_dram_zero clears exactly its range, across a page boundary and over
 * a page never written, and refuses a range past the end. */
static void test_dram_zero_clears_its_range_only(void)
{
    chip_config c;
    tu_config("spyre", &c);
    sim *s = sim_create(&c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    uint8_t w[300], r[300];
    memset(w, 0x5a, sizeof w);
    uint64_t addr = (8ull << 30) + c.dram_page_bytes - 150;
    CU_ASSERT_EQUAL(sim_dram_write(s, addr, w, sizeof w), 0);
    /* bytes 50 to 249 of w, the page boundary at 150, and on past the second page */
    CU_ASSERT_EQUAL(sim_dram_zero(s, addr + 50, 200 + 2 * c.dram_page_bytes), 0);
    CU_ASSERT_EQUAL(sim_dram_read(s, addr, r, sizeof r), 0);
    for (int i = 0; i < 300; i++)
        CU_ASSERT_EQUAL(r[i], i < 50 ? 0x5a : 0);
    CU_ASSERT_EQUAL(sim_dram_zero(s, c.dram_bytes - 10, 20), -1);
    sim_destroy(s);
}

/* ---- units ---- */

static void test_dma_moves_strided_sticks_both_ways(void)
{
    sim *s = sim_create(&cfg4);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    uint8_t src[4 * 128];
    for (int i = 0; i < (int)sizeof src; i++)
        src[i] = (uint8_t)(i * 7);
    sim_dram_write(s, 0x1000, src, sizeof src);
    /* gather sticks 0 and 2 (stride 256 in DRAM) into LX 0x200, 0x280 */
    tu_loop(tu_emit_at(p, 1, ISA_OP_DMA_LD, 0x200, 0x1000), 2, 128, 256);
    tu_sync(p, 1, ISA_OP_SIG, ISA_U_DMAI, 0);
    tu_sync(p, 1, ISA_OP_WAIT, ISA_U_DMAO, 0);
    tu_emit_at(p, 1, ISA_OP_DMA_ST, 0x8000, 0x200)->run = 2;
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    uint8_t out[256];
    sim_dram_read(s, 0x8000, out, sizeof out);
    CU_ASSERT_EQUAL(memcmp(out, src, 128), 0);
    CU_ASSERT_EQUAL(memcmp(out + 128, src + 256, 128), 0);
    isa_program_free(p);
    sim_destroy(s);
}

/* The small product of two tests: A 3x70 (two k groups), B 70x5, DL16
 * values; A at 0x0 (group g of m sticks, group stride 0x1000), B at
 * 0x4000. */
enum { SMALL_M = 3, SMALL_K = 70, SMALL_N = 5 };

static void put_small_operands(uint8_t *lx, float A[SMALL_M][SMALL_K], float B[SMALL_K][SMALL_N])
{
    for (int r = 0; r < SMALL_M; r++)
        for (int j = 0; j < SMALL_K; j++)
            A[r][j] = isa_dl16_round((float)((r + 1) * (j % 7) - 3) / 4);
    for (int j = 0; j < SMALL_K; j++)
        for (int c = 0; c < SMALL_N; c++)
            B[j][c] = isa_dl16_round((float)((j % 5) - c) / 8);
    for (int r = 0; r < SMALL_M; r++) {
        put_dl16(lx, 0x0000 + r * 128, A[r], 64);
        put_dl16(lx, 0x1000 + r * 128, A[r] + 64, 6);
    }
    for (int j = 0; j < SMALL_K; j++)
        put_dl16(lx, 0x4000 + j * 128, B[j], SMALL_N);
}

/* SPYRE_THREADS set to n for the sim_create that follows; returns the
 * value it had (NULL: unset), for threads_restore. */
static char *threads_set(const char *n)
{
    const char *had = getenv("SPYRE_THREADS");
    char *keep = had ? strdup(had) : NULL;
    setenv("SPYRE_THREADS", n, 1);
    return keep;
}

static void threads_restore(char *keep)
{
    if (keep)
        setenv("SPYRE_THREADS", keep, 1);
    else
        unsetenv("SPYRE_THREADS");
    free(keep);
}

/* The small product's DL16 results at `at` (rows 128 bytes apart) against
 * A x B in double: fp32 sums rounded once to DL16 (2^-10 relative). */
static void check_small_product(const uint8_t *at, float A[SMALL_M][SMALL_K], float B[SMALL_K][SMALL_N])
{
    for (int r = 0; r < SMALL_M; r++)
        for (int c = 0; c < SMALL_N; c++) {
            double ref = 0;
            for (int j = 0; j < SMALL_K; j++)
                ref += (double)A[r][j] * B[j][c];
            CU_ASSERT_DOUBLE_EQUAL(get_dl16(at, r * 128 + c * 2), ref, fabs(ref) * 2e-3 + 1e-6);
        }
}

/* A pt.mm on PT0 of core 0: m x n x 64, fp32 d at d (group pitch 0x1000),
 * a at 0, b at b (one stick of up to 64 lanes per k row). */
static isa_insn *emit_f32_product(isa_program *p, int64_t d, int64_t b, int m, int n, int flags)
{
    isa_insn *mm = tu_emit_at(p, 0, ISA_OP_PT_MM, d, 0);
    isa_set(mm, flags, flags);
    isa_set_off(&mm->b, b);
    isa_set(mm, m, m), isa_set(mm, nn, n), mm->k = 64;
    mm->as[0] = 0x1000, mm->ds[0] = 0x1000;
    return mm;
}

/* Row r of A (k wide) times column c of B (n wide), in double: the
 * reference a product's fp32 sums are held to. */
static double ref_dot(const float *A, const float *B, int r, int c, int k, int n)
{
    double ref = 0;
    for (int j = 0; j < k; j++)
        ref += (double)A[r * k + j] * B[j * n + c];
    return ref;
}

/* A product of m x k by k x n, beta 0 then 1, by sim_pt_product or, when
 * packed, by sim_pt_product_packed on operands packed with
 * sim_pt_pack_a/_b: the bits of one cblas_sgemm call on this host (the
 * same library on both sides: no bits are compared across machines). */
static void check_product_bits(int64_t m, int64_t n, int64_t k, int packed)
{
    float *A = malloc(sizeof(float) * (size_t)(m * k)), *B = malloc(sizeof(float) * (size_t)(k * n));
    float *C = malloc(sizeof(float) * (size_t)(m * n)), *W = malloc(sizeof(float) * (size_t)(m * n));
    float *pa = aligned_alloc(64, sizeof(float) * (size_t)((m * k + 15) & ~15));
    float *pb = aligned_alloc(64, sizeof(float) * (size_t)((k * n + 15) & ~15));
    CU_ASSERT_FATAL(A && B && C && W && pa && pb);
    for (int64_t e = 0; e < m * k; e++)
        A[e] = (float)((e * 37 % 101) - 50) / 17.0f;
    for (int64_t e = 0; e < k * n; e++)
        B[e] = (float)((e * 53 % 97) - 48) / 13.0f;
    if (packed) {
        sim_pt_pack_a(A, m, k, pa);
        sim_pt_pack_b(B, k, n, pb);
    }
    for (int acc = 0; acc <= 1; acc++) {
        for (int64_t e = 0; e < m * n; e++)
            C[e] = W[e] = (float)(e % 11) / 3.0f;
        if (packed)
            sim_pt_product_packed(pa, pb, C, m, n, k, acc);
        else
            sim_pt_product(A, B, C, m, n, k, acc);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, A, (int)k, B, (int)n,
                    acc ? 1.0f : 0.0f, W, (int)n);
        CU_ASSERT_EQUAL(memcmp(C, W, sizeof(float) * (size_t)(m * n)), 0);
    }
    free(A), free(B), free(C), free(W), free(pa), free(pb);
}

/* A PT product may be cut into column blocks for OpenBLAS's sake; its sums
 * must be one cblas_sgemm call's bit for bit, whatever kernel the host's
 * OpenBLAS picks. */
static void test_pt_product_gives_one_sgemm_calls_bits(void)
{
    static const int64_t shapes[][3] = {{64, 256, 64}, {64, 512, 64}, {128, 256, 64}, {256, 256, 64},
                                        {64, 256, 256}, {32, 1024, 128}, {64, 256, 384}, {8, 64, 8}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        check_product_bits(shapes[i][0], shapes[i][1], shapes[i][2], 0);
}

static void test_pt_product_on_packed_operands_gives_one_sgemm_calls_bits(void)
{
    /* as during a run: OpenBLAS on one thread (threaded, it sums in other blocks) */
    const int threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
    static const int64_t shapes[][3] = {{64, 256, 64}, {64, 64, 64},  {1, 1, 1},     {13, 37, 5},
                                        {5, 320, 320}, {128, 200, 96}, {27, 8, 300}, {300, 64, 64}};
    int packed = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
        if (!sim_pt_packs(m, n, k))
            continue; /* not on this host's OpenBLAS: products call sgemm */
        packed++;
        check_product_bits(m, n, k, 1);
    }
    if (tu_openblas_packs())
        CU_ASSERT_EQUAL(packed, 8); /* where they are known to pack, every shape here does */
    openblas_set_num_threads(threads);
}

static void test_accumulating_onto_sums_written_in_column_blocks_adds_every_block(void)
{
    /* fp32 sums written as two 32-column blocks, then one product adds onto
     * both as one 64-column p (= d): the worker may take the blocks from its
     * buffers instead of LX, and must get the same sums */
    enum { M = 4, N = 64 };
    sim *s = sim_create(&cfg4);
    uint8_t *lx = sim_lx(s, 0);
    float A[M][64], B[64][N];
    for (int r = 0; r < M; r++) {
        for (int j = 0; j < 64; j++)
            A[r][j] = isa_dl16_round((float)((r + 1) * (j % 7) - 3) / 4);
        put_dl16(lx, r * 128, A[r], 64);
    }
    for (int j = 0; j < 64; j++) {
        for (int c = 0; c < N; c++)
            B[j][c] = isa_dl16_round((float)((j % 5) - c % 9) / 8);
        put_dl16(lx, 0x4000 + j * 128, B[j], 32);      /* columns 0..31 */
        put_dl16(lx, 0x8000 + j * 128, B[j] + 32, 32); /* columns 32..63 */
        put_dl16(lx, 0xc000 + j * 128, B[j], N);       /* all */
    }
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    emit_f32_product(p, 0x10000, 0x4000, M, 32, ISA_F_F32);
    emit_f32_product(p, 0x11000, 0x8000, M, 32, ISA_F_F32);
    isa_insn *acc = emit_f32_product(p, 0x10000, 0xc000, M, N, ISA_F_F32 | ISA_F_ACC);
    acc->p.off = 0x10000;
    acc->ps = 0x1000;
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            const double ref = ref_dot(&A[0][0], &B[0][0], r, c, 64, N);
            float got;
            memcpy(&got, lx + 0x10000 + (c / 32) * 0x1000 + r * 128 + (c % 32) * 4, 4);
            CU_ASSERT_DOUBLE_EQUAL(got, 2 * ref, 1e-4); /* fp32 sums of DL16 products: only rounding order differs */
        }
    isa_program_free(p);
    sim_destroy(s);
}

/* On core c of p: `busy` large products (64 x 256 x 64 each, on zeros)
 * that keep its PT worker busy, then the small product of
 * put_small_operands' A and B into LX 0x20000, then sig PT0 token 0. */
static void emit_busy_then_small(isa_program *p, int c, int busy)
{
    for (int i = 0; i < busy; i++) {
        isa_insn *big = tu_emit_at(p, c, ISA_OP_PT_MM, 0x28000, 0x8000);
        big->b.off = 0x10000;
        big->m = 64, big->nn = 256, big->k = 64;
        big->as[0] = 0x2000, big->bs[0] = 0x2000, big->ds[0] = 0x2000;
    }
    isa_insn *mm = tu_emit_at(p, c, ISA_OP_PT_MM, 0x20000, 0);
    mm->b.off = 0x4000;
    mm->m = SMALL_M, mm->nn = SMALL_N, mm->k = SMALL_K;
    mm->as[0] = 0x1000, mm->ds[0] = 0x1000;
    tu_sync(p, c, ISA_OP_SIG, ISA_U_PT0, 0);
}

static void test_pt_matmul_matches_hand_computation(void)
{
    /* C = A B, with fp32 partials then acc */
    sim *s = sim_create(&cfg4);
    uint8_t *lx = sim_lx(s, 0);
    const int m = SMALL_M, k = SMALL_K, n = SMALL_N;
    float A[SMALL_M][SMALL_K], B[SMALL_K][SMALL_N];
    put_small_operands(lx, A, B);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    isa_insn *mm = tu_emit(p, 0, ISA_OP_PT_MM);
    mm->flags = ISA_F_F32;
    mm->d.off = 0x10000;
    mm->a.off = 0;
    mm->b.off = 0x4000;
    isa_set(mm, m, m);
    isa_set(mm, nn, n);
    isa_set(mm, k, k);
    mm->as[0] = 0x1000;
    mm->ds[0] = 0x1000;
    const isa_insn first = *mm;
    tu_sync(p, 0, ISA_OP_SIG, ISA_U_PT0, 1);
    tu_sync(p, 0, ISA_OP_WAIT, ISA_U_PT1, 1);
    /* second product accumulates onto the first, rounded to DL16 */
    isa_insn *mm2 = tu_emit(p, 0, ISA_OP_PT_MM);
    *mm2 = first;
    mm2->c = 1;
    mm2->flags = ISA_F_ACC;
    mm2->p.off = 0x10000;
    mm2->ps = 0x1000;
    mm2->d.off = 0x20000;
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    for (int r = 0; r < m; r++)
        for (int c = 0; c < n; c++) {
            const double ref = ref_dot(&A[0][0], &B[0][0], r, c, k, n);
            float part;
            memcpy(&part, lx + 0x10000 + r * 128 + c * 4, 4);
            CU_ASSERT_DOUBLE_EQUAL(part, ref, 1e-4);
            CU_ASSERT_EQUAL(get_dl16(lx, 0x20000 + r * 128 + c * 2), isa_dl16_round((float)(2 * ref)));
        }
    isa_program_free(p);
    sim_destroy(s);
}

/* The worker shares a conversion of A or B between products whose tiles
 * have the same bytes, wherever they lie: four products of one core on
 * copies of the small operands at other offsets, one with B changed in
 * its last row's last lane and two with A changed in its last row's last
 * lane of the second k group (short rows) or of the first (whole sticks),
 * must each give their own sums. */
static void test_products_share_a_tile_conversion_only_for_equal_bytes(void)
{
    sim *s = sim_create(&cfg4);
    uint8_t *lx = sim_lx(s, 0);
    const int m = SMALL_M, k = SMALL_K, n = SMALL_N;
    float A[SMALL_M][SMALL_K], B[SMALL_K][SMALL_N], A2[SMALL_M][SMALL_K], A3[SMALL_M][SMALL_K], B2[SMALL_K][SMALL_N];
    put_small_operands(lx, A, B);
    memcpy(A2, A, sizeof A);
    memcpy(A3, A, sizeof A);
    memcpy(B2, B, sizeof B);
    B2[k - 1][n - 1] = isa_dl16_round(B[k - 1][n - 1] + 0.5f);
    A2[m - 1][k - 1] = isa_dl16_round(A[m - 1][k - 1] - 0.75f);
    A3[m - 1][63] = isa_dl16_round(A[m - 1][63] + 0.25f);
    memcpy(lx + 0x8000, lx + 0x4000, 0x4000); /* B's copy, then B2 in it */
    put_dl16(lx, 0x8000 + (k - 1) * 128, B2[k - 1], n);
    memcpy(lx + 0x2000, lx, 0x2000); /* A's copy (both groups), then A2 in it */
    put_dl16(lx, 0x3000 + (m - 1) * 128, A2[m - 1] + 64, k - 64);
    memcpy(lx + 0xc000, lx, 0x2000); /* and A3 */
    put_dl16(lx, 0xc000 + (m - 1) * 128, A3[m - 1], 64);
    const struct {
        int64_t a, b;
        float (*A)[SMALL_K], (*B)[SMALL_N];
    } prod[4] = {{0, 0x4000, A, B}, {0, 0x8000, A, B2}, {0x2000, 0x4000, A2, B}, {0xc000, 0x4000, A3, B}};
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    for (int i = 0; i < 4; i++) {
        isa_insn *mm = tu_emit(p, 0, ISA_OP_PT_MM);
        mm->flags = ISA_F_F32;
        mm->d.off = 0x10000 + i * 0x2000;
        isa_set_off(&mm->a, prod[i].a);
        isa_set_off(&mm->b, prod[i].b);
        isa_set(mm, m, m);
        isa_set(mm, nn, n);
        isa_set(mm, k, k);
        mm->as[0] = 0x1000;
        mm->ds[0] = 0x1000;
    }
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    for (int i = 0; i < 4; i++)
        for (int r = 0; r < m; r++)
            for (int c = 0; c < n; c++) {
                double ref = 0;
                for (int j = 0; j < k; j++)
                    ref += (double)prod[i].A[r][j] * prod[i].B[j][c];
                float part;
                memcpy(&part, lx + 0x10000 + i * 0x2000 + r * 128 + c * 4, 4);
                /* 70 products of DL16 values below 2 in fp32: far below the
                 * changed lanes' effect (at least 1/16) */
                CU_ASSERT_DOUBLE_EQUAL(part, ref, 1e-4);
            }
    isa_program_free(p);
    sim_destroy(s);
}

/* An fp32 product's sums may stay in the host worker's buffer until
 * something else touches their LX bytes: a dma.st of them must see the
 * sums, and a dma.ld over them afterwards must leave its own bytes in LX,
 * not the sums written back late. */
static void test_fp32_sums_reach_dma_and_a_later_load_overwrites_them(void)
{
    sim *s = sim_create(&cfg4);
    uint8_t *lx = sim_lx(s, 0);
    const int m = 3, k = 64, n = 32;
    float A[3][64], B[64][32];
    for (int r = 0; r < m; r++)
        for (int j = 0; j < k; j++)
            A[r][j] = isa_dl16_round((float)((r + 2) * (j % 9) - 5) / 8);
    for (int j = 0; j < k; j++)
        for (int c = 0; c < n; c++)
            B[j][c] = isa_dl16_round((float)((j % 6) - c % 4) / 4);
    for (int r = 0; r < m; r++)
        put_dl16(lx, r * 128, A[r], k);
    for (int j = 0; j < k; j++)
        put_dl16(lx, 0x4000 + j * 128, B[j], n);
    uint8_t src[128];
    for (int i = 0; i < 128; i++)
        src[i] = (uint8_t)(i * 5 + 1);
    sim_dram_write(s, 0x1000, src, sizeof src);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    isa_insn *mm = tu_emit(p, 0, ISA_OP_PT_MM);
    mm->flags = ISA_F_F32;
    mm->d.off = 0x10000;
    mm->b.off = 0x4000;
    isa_set(mm, m, m);
    isa_set(mm, nn, n);
    isa_set(mm, k, k);
    mm->as[0] = 0x1000;
    mm->ds[0] = 0x1000;
    tu_sync(p, 0, ISA_OP_SIG, ISA_U_PT0, 0);
    tu_sync(p, 0, ISA_OP_WAIT, ISA_U_DMAO, 0);
    isa_insn *st = tu_emit_at(p, 0, ISA_OP_DMA_ST, 0x8000, 0x10000);
    isa_set(st, run, m);
    tu_sync(p, 0, ISA_OP_SIG, ISA_U_DMAO, 1);
    tu_sync(p, 0, ISA_OP_WAIT, ISA_U_DMAI, 1);
    tu_emit_at(p, 0, ISA_OP_DMA_LD, 0x10000, 0x1000);
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    float out[3][32];
    sim_dram_read(s, 0x8000, out, sizeof out);
    for (int r = 0; r < m; r++)
        for (int c = 0; c < n; c++) {
            const double ref = ref_dot(&A[0][0], &B[0][0], r, c, k, n);
            CU_ASSERT_DOUBLE_EQUAL(out[r][c], ref, 1e-4); /* fp32 sums of DL16 products */
        }
    CU_ASSERT_EQUAL(memcmp(lx + 0x10000, src, sizeof src), 0);
    float row1;
    memcpy(&row1, lx + 0x10000 + 128, 4);
    CU_ASSERT_EQUAL(row1, out[1][0]);
    isa_program_free(p);
    sim_destroy(s);
}

/* The worker keeps fp32 sums in its buffers between products: sums
 * written as two 64-column products, a product that accumulates onto both
 * at once in place (128 columns), then two DL16 products that each read
 * 32 rows of those sums.  Each must read the newest sums, and LX must end
 * with the in-place product's (the two narrow ones' would be older). */
static void test_sums_kept_in_pieces_feed_wider_and_narrower_products(void)
{
    sim *s = sim_create(&cfg4);
    uint8_t *lx = sim_lx(s, 0);
    enum { M = 64, K = 64, N = 128 };
    const int64_t D = 0x10000, E = 0x20000, grp = M * 128; /* fp32 sums at D, DL16 results at E */
    static float A[M][K], B[K][N];
    for (int r = 0; r < M; r++)
        for (int j = 0; j < K; j++)
            A[r][j] = isa_dl16_round((float)((r * 7 + j * 3) % 11 - 5) / 8);
    for (int j = 0; j < K; j++)
        for (int c = 0; c < N; c++)
            B[j][c] = isa_dl16_round((float)((j * 5 + c) % 13 - 6) / 8);
    for (int r = 0; r < M; r++)
        put_dl16(lx, r * 128, A[r], K);
    for (int g = 0; g < N / 64; g++)
        for (int j = 0; j < K; j++)
            put_dl16(lx, 0x4000 + g * 0x2000 + j * 128, B[j] + 64 * g, 64);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    for (int h = 0; h < 3 + 2; h++) {
        const int first = h < 2, in_place = h == 2, half = h - 3;
        isa_insn *mm = tu_emit_at(p, 0, ISA_OP_PT_MM, first ? D + 2 * h * grp : in_place ? D : E + half * 32 * 128,
                                  half > 0 ? half * 32 * 128 : 0);
        mm->flags = first ? ISA_F_F32 : in_place ? ISA_F_F32 | ISA_F_ACC : ISA_F_ACC;
        mm->b.off = first ? 0x4000 + h * 0x2000 : 0x4000;
        isa_set_off(&mm->p, in_place ? D : D + half * 32 * 128);
        mm->m = half >= 0 ? 32 : M, mm->nn = first ? 64 : N, mm->k = K;
        mm->as[0] = 0x2000, mm->bs[0] = 0x2000;
        isa_set(mm, ds[0], grp);
        isa_set(mm, ps, grp);
    }
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            double ref = 0;
            for (int j = 0; j < K; j++)
                ref += (double)A[r][j] * B[j][c];
            float sum;
            memcpy(&sum, lx + D + c / 32 * grp + r * 128 + c % 32 * 4, 4);
            CU_ASSERT_DOUBLE_EQUAL(sum, 2 * ref, 1e-4); /* fp32 sums of DL16 products */
            /* three times the product, rounded once to DL16 (2^-10 relative) */
            CU_ASSERT_DOUBLE_EQUAL(get_dl16(lx, E + c / 64 * 0x2000 + r * 128 + c % 64 * 2), 3 * ref,
                                   fabs(3 * ref) * 2e-3 + 1e-6);
        }
    isa_program_free(p);
    sim_destroy(s);
}

/* Products run on a host worker behind the event loop.  A DMA that the
 * program orders after a product (a token) but that overwrites the
 * product's A and B before the worker has reached it must leave the
 * product its old operands: the worker, busy with sixty large products
 * first, gets copies of them (or the event loop waits). */
static void test_a_load_over_a_queued_products_operands_leaves_it_the_old_ones(void)
{
    sim *s = sim_create(&cfg4);
    uint8_t *lx = sim_lx(s, 0);
    const int m = SMALL_M, k = SMALL_K;
    float A[SMALL_M][SMALL_K], B[SMALL_K][SMALL_N];
    put_small_operands(lx, A, B);
    uint8_t junk[70 * 128];
    memset(junk, 0x3c, sizeof junk); /* DL16 0x3c3c, about 1.4 */
    sim_dram_write(s, 0, junk, sizeof junk);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    emit_busy_then_small(p, 0, 60);
    tu_sync(p, 0, ISA_OP_WAIT, ISA_U_DMAI, 0);
    isa_insn *a2 = tu_emit_at(p, 0, ISA_OP_DMA_LD, 0x1000, 0); /* A's second group */
    isa_set(a2, run, m);
    isa_insn *b = tu_emit_at(p, 0, ISA_OP_DMA_LD, 0x4000, 0); /* all of B */
    isa_set(b, run, k);
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    check_small_product(lx + 0x20000, A, B);
    CU_ASSERT_EQUAL(get_dl16(lx, 0x4000), get_dl16(lx, 0x4000 + 69 * 128)); /* the loads did land */
    isa_program_free(p);
    sim_destroy(s);
}

/* A dma.st of a queued product's results becomes a job after it on the
 * worker (busy with sixty large products first); a dma.ld of those DRAM
 * bytes that the program orders after the store must read the results,
 * not the zeros DRAM held before (it fails when loads skip the queued
 * stores). */
static void test_a_load_after_a_store_of_queued_results_reads_them(void)
{
    sim *s = sim_create(&cfg4);
    uint8_t *lx = sim_lx(s, 0);
    float A[SMALL_M][SMALL_K], B[SMALL_K][SMALL_N];
    put_small_operands(lx, A, B);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    emit_busy_then_small(p, 0, 60);
    tu_sync(p, 0, ISA_OP_WAIT, ISA_U_DMAO, 0);
    tu_emit_at(p, 0, ISA_OP_DMA_ST, 0x3000, 0x20000)->run = SMALL_M;
    tu_sync(p, 0, ISA_OP_SIG, ISA_U_DMAO, 1);
    tu_sync(p, 0, ISA_OP_WAIT, ISA_U_DMAI, 1);
    tu_emit_at(p, 0, ISA_OP_DMA_LD, 0x30000, 0x3000)->run = SMALL_M;
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    check_small_product(lx + 0x30000, A, B);
    isa_program_free(p);
    sim_destroy(s);
}

/* Stores of queued results from cores on two workers (SPYRE_THREADS 2:
 * cores 0 and 1 apart) to the same DRAM bytes, ordered by a barrier, land
 * in that order though core 0's worker is the busier: DRAM ends with core
 * 1's results (it fails when a store does not wait for the other
 * worker's). */
static void test_stores_of_two_workers_to_one_place_land_in_program_order(void)
{
    char *keep = threads_set("2");
    sim *s = sim_create(&cfg4);
    float A[SMALL_M][SMALL_K], B[SMALL_K][SMALL_N];
    put_small_operands(sim_lx(s, 0), A, B);
    put_small_operands(sim_lx(s, 1), A, B);
    memset(sim_lx(s, 1) + 0x4000, 0x3c, SMALL_K * 128); /* core 1's B: DL16 0x3c3c, about 1.4 */
    const float b1 = get_dl16(sim_lx(s, 1), 0x4000);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    for (int c = 0; c < 2; c++) {
        if (c == 1)
            for (int i = 0; i < 4; i++)
                tu_emit(p, i, ISA_OP_BAR);
        emit_busy_then_small(p, c, c ? 60 : 200);
        tu_sync(p, c, ISA_OP_WAIT, ISA_U_DMAO, 0);
        tu_emit_at(p, c, ISA_OP_DMA_ST, 0x3000, 0x20000)->run = SMALL_M;
    }
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    uint8_t out[SMALL_M * 128];
    sim_dram_read(s, 0x3000, out, sizeof out);
    for (int r = 0; r < SMALL_M; r++)
        for (int c = 0; c < SMALL_N; c++) {
            double ref = 0;
            for (int j = 0; j < SMALL_K; j++)
                ref += (double)A[r][j] * b1;
            /* fp32 sums rounded once to DL16 (2^-10 relative) */
            CU_ASSERT_DOUBLE_EQUAL(get_dl16(out, r * 128 + c * 2), ref, fabs(ref) * 2e-3 + 1e-6);
        }
    isa_program_free(p);
    sim_destroy(s);
    threads_restore(keep);
}

/* Products on two cores of one PT worker whose B tiles came by ring from
 * one core share a conversion by the bytes' content tag, without
 * comparing them; a load into one copy afterwards must end that: core
 * 2's product gets its own last row of B (it fails when the load leaves
 * the tag). */
static void test_a_load_into_a_ring_copy_ends_its_shared_conversion(void)
{
    char *keep = threads_set("2"); /* cores 0 and 2 on one worker */
    sim *s = sim_create(&cfg4);
    const int m = SMALL_M, k = SMALL_K, n = SMALL_N;
    float A[SMALL_M][SMALL_K], B[SMALL_K][SMALL_N];
    put_small_operands(sim_lx(s, 0), A, B);
    memcpy(sim_lx(s, 2), sim_lx(s, 0), 0x2000); /* core 2's A */
    uint8_t junk[128];
    memset(junk, 0x3c, sizeof junk); /* DL16 0x3c3c, about 1.4 */
    sim_dram_write(s, 0, junk, sizeof junk);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    for (int c = 0; c <= 2; c += 2) { /* products first, so that the workers exist */
        isa_insn *warm = tu_emit_at(p, c, ISA_OP_PT_MM, 0x30000, 0);
        warm->b.off = 0x8000;
        isa_set(warm, m, m), isa_set(warm, nn, n), isa_set(warm, k, k);
        warm->as[0] = 0x1000, warm->ds[0] = 0x1000;
        tu_sync(p, c, ISA_OP_SIG, ISA_U_PT0, 1);
    }
    tu_sync(p, 0, ISA_OP_WAIT, ISA_U_RING, 1);
    isa_insn *snd = tu_emit_at(p, 0, ISA_OP_RING_SEND, 0x4000, 0x4000); /* B to core 2 */
    snd->core = 2;
    snd->tok = 2;
    isa_set(snd, run, k);
    tu_sync(p, 0, ISA_OP_SIG, ISA_U_RING, 3);
    tu_sync(p, 0, ISA_OP_WAIT, ISA_U_PT0, 3);
    tu_sync(p, 2, ISA_OP_WAIT, ISA_U_DMAI, 1);
    tu_sync(p, 2, ISA_OP_WAIT, ISA_U_DMAI, 2);
    tu_emit_at(p, 2, ISA_OP_DMA_LD, 0x4000 + (k - 1) * 128, 0)->run = 1; /* B's last row */
    tu_sync(p, 2, ISA_OP_SIG, ISA_U_DMAI, 4);
    tu_sync(p, 2, ISA_OP_WAIT, ISA_U_PT0, 4); /* after core 0's product, which takes the tag first */
    for (int c = 0; c <= 2; c += 2) {
        isa_insn *mm = tu_emit_at(p, c, ISA_OP_PT_MM, 0x20000, 0);
        mm->flags = ISA_F_F32;
        mm->b.off = 0x4000;
        isa_set(mm, m, m), isa_set(mm, nn, n), isa_set(mm, k, k);
        mm->as[0] = 0x1000, mm->ds[0] = 0x1000;
    }
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    for (int c = 0; c <= 2; c += 2)
        for (int r = 0; r < m; r++)
            for (int col = 0; col < n; col++) {
                double ref = 0;
                for (int j = 0; j < k; j++)
                    ref += (double)A[r][j] * (c == 2 && j == k - 1 ? get_dl16(junk, 0) : B[j][col]);
                float part;
                memcpy(&part, sim_lx(s, c) + 0x20000 + r * 128 + col * 4, 4);
                /* 70 products of DL16 values below 2 in fp32: far below the
                 * changed row's effect (at least 1/4) */
                CU_ASSERT_DOUBLE_EQUAL(part, ref, 1e-4);
            }
    isa_program_free(p);
    sim_destroy(s);
    threads_restore(keep);
}

static void test_sfp_binary_broadcast_and_reductions(void)
{
    sim *s = sim_create(&cfg4);
    uint8_t *lx = sim_lx(s, 2);
    float row0[64], row1[64];
    for (int i = 0; i < 64; i++) {
        row0[i] = (float)i / 8;
        row1[i] = -(float)i / 4;
    }
    put_dl16(lx, 0, row0, 64);
    put_dl16(lx, 128, row1, 64);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    /* max over the first 40 elements of each row -> two elements at 0x400 */
    isa_insn *mx = tu_emit(p, 2, ISA_OP_SFP_RMAX);
    mx->c = 1;
    mx->flags = ISA_F_LANES;
    mx->a.off = 0;
    mx->n[1] = 2;
    mx->as[1] = 128;
    mx->d.off = 0x400;
    mx->ds[1] = 2;
    mx->vl = 40;
    /* rows - their max (element broadcast), on the same unit so in order */
    isa_insn *sub = tu_emit_at(p, 2, ISA_OP_SFP_SUB, 0x800, 0);
    sub->c = 1;
    sub->bm = ISA_BM_ELEM;
    sub->b.off = 0x400;
    tu_loop(sub, 2, 128, 128);
    sub->bs[0] = 2;
    /* row0 times an immediate */
    isa_insn *mul = tu_emit(p, 2, ISA_OP_SFP_MUL);
    mul->c = 1;
    mul->bm = ISA_BM_IMM;
    mul->imm = 0.5f;
    mul->d.off = 0xc00;
    mul->a.off = 0;
    isa_insn *sum = tu_emit(p, 2, ISA_OP_SFP_RSUM);
    sum->c = 1;
    sum->flags = ISA_F_LANES;
    sum->t = ISA_T_DL16;
    sum->a.off = 0;
    sum->n[0] = 2;
    sum->as[0] = 128;
    sum->d.off = 0x1000;
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    CU_ASSERT_EQUAL(get_dl16(lx, 0x400), 39.0f / 8);
    CU_ASSERT_EQUAL(get_dl16(lx, 0x402), 0.0f);
    CU_ASSERT_EQUAL(get_dl16(lx, 0x800 + 2 * 10), isa_dl16_round(10.0f / 8 - 39.0f / 8));
    CU_ASSERT_EQUAL(get_dl16(lx, 0x880 + 2 * 4), -1.0f);
    CU_ASSERT_EQUAL(get_dl16(lx, 0xc00 + 2 * 9), 9.0f / 16);
    /* sum of row0 + row1 over 64 lanes = sum(i/8 - i/4) = -sum(i)/8 = -252 */
    CU_ASSERT_EQUAL(get_dl16(lx, 0x1000), -252.0f);
    isa_program_free(p);
    sim_destroy(s);
}

static void test_sfp_unary_ops_and_conversion(void)
{
    sim *s = sim_create(&cfg4);
    uint8_t *lx = sim_lx(s, 0);
    float x[64];
    for (int i = 0; i < 64; i++)
        x[i] = isa_dl16_round((float)(i - 32) / 10);
    put_dl16(lx, 0, x, 64);
    const int ops[] = {ISA_OP_SFP_EXP, ISA_OP_SFP_TANH, ISA_OP_SFP_SIGM, ISA_OP_SFP_GELU, ISA_OP_SFP_SILU,
                       ISA_OP_SFP_RELU, ISA_OP_SFP_NEG};
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    for (int i = 0; i < 7; i++) {
        isa_insn *in = tu_emit(p, 0, ops[i]);
        in->d.off = 0x1000 + 0x80 * i;
    }
    isa_insn *cvt = tu_emit(p, 0, ISA_OP_SFP_CVT);
    cvt->d.off = 0x2000;
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    for (int i = 0; i < 64; i++) {
        double v = x[i];
        double want[7] = {exp(v), tanh(v), 1 / (1 + exp(-v)), 0.5 * v * (1 + erf(v / sqrt(2.0))), v / (1 + exp(-v)),
                          v > 0 ? v : 0, -v};
        for (int o = 0; o < 7; o++)
            CU_ASSERT_EQUAL(get_dl16(lx, 0x1000 + 0x80 * o + 2 * i), isa_dl16_round((float)want[o]));
        float f32;
        memcpy(&f32, lx + 0x2000 + 4 * i, 4);
        CU_ASSERT_EQUAL(f32, x[i]);
    }
    isa_program_free(p);
    sim_destroy(s);
}

/* A 4-core chip whose DRAM starts with the n bytes of src. */
static sim *sim_with_dram(const uint8_t *src, size_t n)
{
    sim *s = sim_create(&cfg4);
    sim_dram_write(s, 0, src, n);
    return s;
}

/* Core c copies 5 sticks from DRAM 0 to LX 0x100 one at a time, with a
 * loop: the DRAM address (r1) steps by a stick, the LX address (r2) by
 * lx_step. */
static isa_program *stick_copy_loop(int c, int lx_step)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    isa_insn *li = tu_emit(p, c, ISA_OP_LI);
    li->reg = 2;
    li->val = 0x100;
    tu_emit(p, c, ISA_OP_LOOP)->val = 5;
    isa_insn *ld = tu_emit(p, c, ISA_OP_DMA_LD);
    ld->d.reg = 2;
    ld->a.reg = 1;
    isa_insn *a1 = tu_emit(p, c, ISA_OP_ADDI);
    a1->reg = 1;
    a1->val = 128;
    isa_insn *a2 = tu_emit(p, c, ISA_OP_ADDI);
    a2->reg = 2;
    a2->val = lx_step;
    tu_emit(p, c, ISA_OP_ENDL);
    tu_halt_all(p);
    return p;
}

static void test_loops_and_registers_step_addresses(void)
{
    /* copy 5 sticks one at a time with a loop and addi */
    uint8_t src[5 * 128];
    for (int i = 0; i < (int)sizeof src; i++)
        src[i] = (uint8_t)(i ^ 0x5a);
    sim *s = sim_with_dram(src, sizeof src);
    isa_program *p = stick_copy_loop(3, 128);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    CU_ASSERT_EQUAL(memcmp(sim_lx(s, 3) + 0x100, src, sizeof src), 0);
    isa_program_free(p);
    sim_destroy(s);
}

/* The sequencer queues an instruction with its address registers read at
 * dispatch: a later addi does not move it.  A queue holds more than one
 * dma.ld here, so the unit runs each after the registers have moved on; the
 * trace shows each with the addresses it was dispatched with, and the
 * program's own instruction keeps its register form. */
static void test_queued_instructions_keep_the_addresses_of_their_dispatch(void)
{
    uint8_t src[5 * 128];
    for (int i = 0; i < (int)sizeof src; i++)
        src[i] = (uint8_t)(i * 13 + 1);
    sim *s = sim_with_dram(src, sizeof src);
    isa_program *p = stick_copy_loop(2, 256); /* LX 0x100, 0x200, ... 0x500 */
    for (int values = 1; values >= 0; values--) {
        sim_options o = {.values = values, .detect_races = 1, .trace = SIM_TRACE_INSN};
        sim_set_options(s, &o);
        sim_fault f;
        CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
        for (int i = 0; values && i < 5; i++)
            CU_ASSERT_EQUAL(memcmp(sim_lx(s, 2) + 0x100 + 256 * i, src + 128 * i, 128), 0);
        char path[512], err[512];
        tu_tmpfile(".json", path, sizeof path);
        CU_ASSERT_EQUAL_FATAL(sim_write_trace(s, p, path, err, sizeof err), 0);
        char *text = tu_read_file(path, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(text);
        remove(path);
        for (int i = 0; i < 5; i++) {
            char want[64];
            snprintf(want, sizeof want, "\"insn\":\"dma.ld d=0x%x a=0x%x\"", 0x100 + 256 * i, 128 * i);
            if (i == 0)
                snprintf(want, sizeof want, "\"insn\":\"dma.ld d=0x100\"");
            CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
        }
        CU_ASSERT_PTR_NULL(strstr(text, "r2+"));
        free(text);
    }
    CU_ASSERT_EQUAL(p->cores[2].insns[2].d.reg, 2); /* the program is not changed */
    CU_ASSERT_EQUAL(p->cores[2].insns[2].d.off, 0);
    isa_program_free(p);
    sim_destroy(s);
}

static void test_ring_send_and_reduce_signal_remote_core(void)
{
    sim *s = sim_create(&cfg4);
    float one[32], two[32];
    for (int i = 0; i < 32; i++) {
        one[i] = (float)i;
        two[i] = 0.5f;
    }
    memcpy(sim_lx(s, 0), one, 128);
    memcpy(sim_lx(s, 1), two, 128);
    memcpy(sim_lx(s, 2) + 0x100, two, 128);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    /* core 0 sends its stick to core 2 at 0x200 and signals core 2 token 4;
     * core 1 reduce-adds into core 2 at 0x100 (fp32), token 5. */
    isa_insn *snd = tu_emit(p, 0, ISA_OP_RING_SEND);
    snd->core = 2;
    snd->tok = 4;
    snd->d.off = 0x200;
    isa_insn *red = tu_emit(p, 1, ISA_OP_RING_RED);
    red->core = 2;
    red->tok = 5;
    red->t = ISA_T_F32;
    red->d.off = 0x100;
    /* core 2 waits for both then adds them */
    tu_sync(p, 2, ISA_OP_WAIT, ISA_U_SFP0, 4);
    tu_sync(p, 2, ISA_OP_WAIT, ISA_U_SFP0, 5);
    isa_insn *add = tu_emit(p, 2, ISA_OP_SFP_ADD);
    add->t = ISA_T_F32;
    add->d.off = 0x300;
    add->a.off = 0x100;
    add->b.off = 0x200;
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    float out[32];
    memcpy(out, sim_lx(s, 2) + 0x300, 128);
    for (int i = 0; i < 32; i++)
        CU_ASSERT_EQUAL(out[i], 1.0f + (float)i);
    isa_program_free(p);
    sim_destroy(s);
}

/* Run p on a 4-core chip whose core 0 holds a stick of 0x42 at LX 0:
 * the stick must arrive at LX 0x80 of core `to`.  Frees p. */
static void expect_stick_arrives(isa_program *p, int to)
{
    sim *s = sim_create(&cfg4);
    memset(sim_lx(s, 0), 0x42, 128);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    CU_ASSERT_EQUAL(sim_lx(s, to)[0x80], 0x42);
    CU_ASSERT_EQUAL(sim_lx(s, to)[0xff], 0x42);
    isa_program_free(p);
    sim_destroy(s);
}

static void test_barrier_orders_cores(void)
{
    /* core 0 stores to DRAM, barrier, core 1 loads it */
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_emit(p, 0, ISA_OP_DMA_ST)->d.off = 0x400;
    for (int c = 0; c < 4; c++)
        tu_emit(p, c, ISA_OP_BAR);
    tu_emit_at(p, 1, ISA_OP_DMA_LD, 0x80, 0x400);
    tu_halt_all(p);
    expect_stick_arrives(p, 1);
}

/* ---- rule checks ---- */

static void expect_fault(isa_program *p, int core, int unit, long index, const char *text)
{
    sim *s = sim_create(&cfg4);
    sim_fault f;
    CU_ASSERT_EQUAL(run(s, p, &f), -1);
    CU_ASSERT_EQUAL(f.core, core);
    CU_ASSERT_EQUAL(f.unit, unit);
    CU_ASSERT_EQUAL(f.index, index);
    if (!strstr(f.msg, text))
        fprintf(stderr, "\nfault message '%s' lacks '%s'\n", f.msg, text);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, text));
    isa_program_free(p);
    sim_destroy(s);
}

/* Core 0 stores LX to DRAM on dmao and loads it back on dmai, with no
 * token between the two units; fence: a fence between them. */
static isa_program *store_then_load_on_one_core(int fence)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_emit(p, 0, ISA_OP_DMA_ST)->d.off = 0x400;
    if (fence)
        tu_emit(p, 0, ISA_OP_FENCE);
    tu_emit_at(p, 0, ISA_OP_DMA_LD, 0x80, 0x400);
    tu_halt_all(p);
    return p;
}

static void test_fence_orders_a_cores_own_units(void)
{
    expect_stick_arrives(store_then_load_on_one_core(1), 0);
    expect_fault(store_then_load_on_one_core(0), 0, ISA_U_DMAI, 1, "race: core 0 dmai #1 reads DRAM");
}

/* A program the compiler did not check (one built in memory, as the KTIR
 * path's) whose stride did not fit its 32-bit field when stored: the
 * simulator refuses the instruction naming the operand, rather than run
 * it with the wrapped stride (2^32 + 128 would be 128, a legal one). */
static void test_a_value_isa_set_could_not_store_faults_at_issue(void)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    isa_insn *ld = tu_emit_at(p, 0, ISA_OP_DMA_LD, 0x80, 0x400);
    isa_set(ld, n[0], 2);
    isa_set(ld, ds[0], ((int64_t)1 << 32) + 128);
    tu_halt_all(p);
    expect_fault(p, 0, ISA_U_SEQ, 0, "operand ds0 out of range");
}

/* Core 0's dmai loads `run` sticks at 0x9280 - 5 sticks + `at` (no token),
 * while pt0 reads b as three groups of 16 sticks (a block each) at 0x8000,
 * 0x9000 and 0xa000: the middle group of the pt.mm's strided set meets the
 * load. */
static isa_program *load_under_a_pt_group(int64_t at, int64_t run)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    isa_insn *ld = tu_emit_at(p, 0, ISA_OP_DMA_LD, 0x9000 + at, 0);
    isa_set(ld, run, run);
    isa_insn *mm = tu_emit_at(p, 0, ISA_OP_PT_MM, 0x20000, 0);
    mm->m = 1;
    mm->nn = 3 * 64; /* three groups of 64 DL16 columns */
    mm->k = 16;
    mm->b.off = 0x8000;
    mm->bs[0] = 0x1000;
    tu_halt_all(p);
    return p;
}

static void test_a_race_in_the_middle_of_a_strided_set_names_its_bytes(void)
{
    /* one stick of the middle group's block: found stick by stick */
    expect_fault(load_under_a_pt_group(0x280, 1), 0, ISA_U_PT0, 1,
                 "race: core 0 pt0 #1 reads core 0's LX bytes [0x9280, 0x9300) that core 0 dmai #0 wrote");
    /* the whole block: found on its summary, named by its first stick */
    expect_fault(load_under_a_pt_group(0, 16), 0, ISA_U_PT0, 1,
                 "race: core 0 pt0 #1 reads core 0's LX bytes [0x9000, 0x9080) that core 0 dmai #0 wrote");
    /* between the groups: no race */
    sim *s = sim_create(&cfg4);
    isa_program *p = load_under_a_pt_group(0x800, 16);
    sim_fault f;
    CU_ASSERT_EQUAL(run(s, p, &f), 0);
    isa_program_free(p);
    sim_destroy(s);
}

/* Core 0's dmai loads two sticks, signalling token 1 after the first and
 * token 2 after the second (two sigs with no wait between, which share a
 * snapshot of its clock); sfp0 waits for token 1, and for token 2 when
 * `both`, then reads both sticks. */
static isa_program *two_loads_two_sigs(int both)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_emit_at(p, 0, ISA_OP_DMA_LD, 0x80, 0);
    tu_sync(p, 0, ISA_OP_SIG, ISA_U_DMAI, 1);
    tu_emit_at(p, 0, ISA_OP_DMA_LD, 0x100, 0);
    tu_sync(p, 0, ISA_OP_SIG, ISA_U_DMAI, 2);
    tu_sync(p, 0, ISA_OP_WAIT, ISA_U_SFP0, 1);
    if (both)
        tu_sync(p, 0, ISA_OP_WAIT, ISA_U_SFP0, 2);
    isa_insn *add = tu_emit_at(p, 0, ISA_OP_SFP_ADD, 0x300, 0x80);
    add->t = ISA_T_F32;
    add->b.off = 0x100;
    tu_halt_all(p);
    return p;
}

static void test_a_wait_orders_what_came_before_its_own_sig_only(void)
{
    expect_fault(two_loads_two_sigs(0), 0, ISA_U_SFP0, 5, "race: core 0 sfp0 #5 reads core 0's LX");
    sim *s = sim_create(&cfg4);
    isa_program *p = two_loads_two_sigs(1);
    sim_fault f;
    CU_ASSERT_EQUAL(run(s, p, &f), 0);
    isa_program_free(p);
    sim_destroy(s);
}

static void test_lx_out_of_bounds_names_core_unit_and_index(void)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_emit(p, 2, ISA_OP_NOP);
    isa_insn *ld = tu_emit(p, 2, ISA_OP_DMA_LD);
    isa_set_off(&ld->d, cfg4.lx_bytes - 128);
    ld->run = 2;
    tu_halt_all(p);
    expect_fault(p, 2, ISA_U_DMAI, 1, "outside LX");
}

static void test_dram_outside_segment_faults(void)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    isa_insn *st = tu_emit(p, 0, ISA_OP_DMA_ST);
    st->d.off = (1 << 20) - 128;
    st->n[0] = 2;
    st->ds[0] = 128;
    tu_halt_all(p);
    expect_fault(p, 0, ISA_U_DMAO, 0, "outside the program's segment");
}

static void test_unaligned_stick_faults(void)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    isa_insn *in = tu_emit(p, 1, ISA_OP_SFP_EXP);
    in->c = 1;
    in->a.off = 64;
    tu_halt_all(p);
    expect_fault(p, 1, ISA_U_SFP1, 0, "not aligned");
}

static void test_wait_on_never_signalled_token_is_deadlock(void)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_emit(p, 3, ISA_OP_NOP);
    tu_sync(p, 3, ISA_OP_WAIT, ISA_U_PT1, 7);
    tu_halt_all(p);
    expect_fault(p, 3, ISA_U_PT1, 1, "deadlock");
}

static void test_barrier_missed_by_halted_core_is_deadlock(void)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    for (int c = 0; c < 3; c++)
        tu_emit(p, c, ISA_OP_BAR);
    tu_halt_all(p);
    expect_fault(p, 0, ISA_U_SEQ, 0, "waits at bar");
}

/* Core 0 runs a wait or sig (op) of unit on token tok, then a fence: the
 * run faults on core 0's unit `at`, instruction index, saying text. */
static void expect_fault_at_fence(int op, int unit, int tok, int at, long index, const char *text)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_sync(p, 0, op, unit, tok);
    tu_emit(p, 0, ISA_OP_FENCE);
    tu_halt_all(p);
    expect_fault(p, 0, at, index, text);
}

static void test_fence_behind_a_unit_that_never_goes_idle_is_deadlock(void)
{
    expect_fault_at_fence(ISA_OP_WAIT, ISA_U_PT0, 7, ISA_U_PT0, 0,
                          "core 0 pt0 #0 waits on token 7 (0, never signalled); core 0 sequencer #1 waits at fence;");
}

/* A signal no wait took is still on its token at the next fence or bar. */
static void test_a_token_left_at_a_fence_or_bar_faults(void)
{
    expect_fault_at_fence(ISA_OP_SIG, ISA_U_DMAI, 5, ISA_U_SEQ, 1, "token 5 is 1 at a fence: a signal no wait took");
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_sync(p, 2, ISA_OP_SIG, ISA_U_PT0, 3);
    for (int c = 0; c < cfg4.cores; c++)
        tu_emit(p, c, ISA_OP_BAR);
    tu_halt_all(p);
    expect_fault(p, 2, ISA_U_SEQ, 1, "token 3 is 1 at a bar");
}

static void test_missing_token_and_bad_loop_fault(void)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_sync(p, 0, ISA_OP_SIG, ISA_U_DMAI, 200);
    tu_halt_all(p);
    expect_fault(p, 0, ISA_U_DMAI, 0, "token 200 does not exist");
    p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_emit(p, 1, ISA_OP_ENDL);
    tu_halt_all(p);
    expect_fault(p, 1, ISA_U_SEQ, 0, "endl without loop");
    p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_emit(p, 1, ISA_OP_LOOP)->val = 2;
    tu_halt_all(p);
    expect_fault(p, 1, ISA_U_SEQ, 1, "halt inside a loop");
}

/* Run p on the 4-core chip with the given limits; the fault in *f. */
static int run_limited(isa_program *p, uint64_t max_insns, uint64_t max_cycles, sim_fault *f)
{
    sim *s = sim_create(&cfg4);
    sim_options o = {.values = 1, .detect_races = 1, .max_insns = max_insns, .max_cycles = max_cycles};
    sim_set_options(s, &o);
    int rc = sim_run(s, p, 0, NULL, f);
    sim_destroy(s);
    return rc;
}

/* Two nested loops of 2^32 - 1 around a nop: without limits this ran for
 * ever; each limit stops it at the instruction past it. */
static isa_program *nested_nop_loops(void)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_emit(p, 2, ISA_OP_LOOP)->val = 4294967295;
    tu_emit(p, 2, ISA_OP_LOOP)->val = 4294967295;
    tu_emit(p, 2, ISA_OP_NOP);
    tu_emit(p, 2, ISA_OP_ENDL);
    tu_emit(p, 2, ISA_OP_ENDL);
    tu_halt_all(p);
    return p;
}

static void test_a_runaway_loop_stops_at_the_instruction_and_cycle_limits(void)
{
    isa_program *p = nested_nop_loops();
    sim_fault f;
    CU_ASSERT_EQUAL(run_limited(p, 1000, 0, &f), -1);
    CU_ASSERT_EQUAL(f.core, 2);
    CU_ASSERT_EQUAL(f.unit, ISA_U_SEQ);
    CU_ASSERT(f.index >= 2 && f.index <= 4); /* inside the inner loop */
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, "instruction limit (1000; spyre run --max-insns N raises it, 0 removes it)"));
    /* the sequencer takes seq_issue_cycles (1) per instruction */
    CU_ASSERT_EQUAL(run_limited(p, SIM_NO_LIMIT, 5000, &f), -1);
    CU_ASSERT_EQUAL(f.core, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, "cycle limit (5000 cycles; spyre run --max-cycles N raises it"));
    isa_program_free(p);
}

/* Core 1: a nop, then an SFP exp of about 2000 cycles (instruction 1);
 * every core halts. */
static isa_program *long_sfp_prog(void)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_emit(p, 1, ISA_OP_NOP);
    isa_insn *in = tu_emit(p, 1, ISA_OP_SFP_EXP);
    in->n[0] = 1000; /* about 2000 cycles of the vector unit */
    in->as[0] = in->ds[0] = 0;
    tu_halt_all(p);
    return p;
}

/* A unit instruction that would end past the cycle limit faults on its
 * unit, naming its index; the same program passes with the limit above. */
static void test_the_cycle_limit_names_the_unit_instruction_that_passes_it(void)
{
    isa_program *p = long_sfp_prog();
    sim_fault f;
    CU_ASSERT_EQUAL(run_limited(p, 0, 500, &f), -1);
    CU_ASSERT_EQUAL(f.core, 1);
    CU_ASSERT_EQUAL(f.unit, ISA_U_SFP0);
    CU_ASSERT_EQUAL(f.index, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, "cycle limit (500 cycles"));
    CU_ASSERT_EQUAL(run_limited(p, 0, 100000, &f), 0);
    CU_ASSERT_EQUAL(run_limited(p, 0, SIM_NO_LIMIT, &f), 0);
    isa_program_free(p);
}

/* A decode kept across runs (sim_set_decode) gives the runs of a fresh
 * one: the same cycles, and the cycle limit met at the same instruction
 * by its least duration after a run that passed; a second program given
 * the same place gets a decode of its own. */
static void test_a_kept_decode_runs_as_a_fresh_one(void)
{
    isa_program *p = long_sfp_prog();
    sim *s = sim_create(&cfg4);
    sim_decode *kept = NULL;
    sim_set_decode(s, &kept);
    sim_options o = {.values = 1, .detect_races = 1, .max_cycles = 100000};
    sim_set_options(s, &o);
    sim_stats a, b;
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(sim_run(s, p, 0, &a, &f), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(kept);
    const uintptr_t first = (uintptr_t)kept; /* (an address: the decode itself goes below) */
    CU_ASSERT_EQUAL_FATAL(sim_run(s, p, 0, &b, &f), 0);
    CU_ASSERT_EQUAL((uintptr_t)kept, first); /* taken, not rebuilt */
    CU_ASSERT_EQUAL(a.cycles, b.cycles);
    CU_ASSERT(a.cycles > 1000);
    o.max_cycles = 500;
    sim_set_options(s, &o);
    CU_ASSERT_EQUAL(sim_run(s, p, 0, NULL, &f), -1);
    CU_ASSERT_EQUAL(f.core, 1);
    CU_ASSERT_EQUAL(f.unit, ISA_U_SFP0);
    CU_ASSERT_EQUAL(f.index, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, "cycle limit (500 cycles"));
    isa_program *q = tu_prog_new(cfg4.cores, 1 << 20);
    tu_halt_all(q);
    o.max_cycles = 0;
    sim_set_options(s, &o);
    CU_ASSERT_EQUAL(sim_run(s, q, 0, NULL, &f), 0);
    CU_ASSERT_PTR_NOT_NULL(kept);
    CU_ASSERT_NOT_EQUAL((uintptr_t)kept, first); /* (built while the first still lived) */
    sim_set_decode(s, NULL);
    sim_decode_free(kept);
    sim_destroy(s);
    isa_program_free(p);
    isa_program_free(q);
}

/* One DMA of 65535^4 pieces (stride 0) would loop for ever even timing
 * only: its least possible duration passes the default cycle limit, so it
 * faults before any of its work. */
static void test_one_endless_dma_stops_at_the_cycle_limit_before_it_runs(void)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    isa_insn *in = tu_emit(p, 0, ISA_OP_DMA_LD);
    for (int l = 0; l < ISA_MAX_LOOPS; l++)
        in->n[l] = 65535;
    tu_halt_all(p);
    sim *s = sim_create(&cfg4);
    sim_options o = {.values = 0, .detect_races = 0};
    sim_set_options(s, &o);
    sim_fault f;
    CU_ASSERT_EQUAL(sim_run(s, p, 0, NULL, &f), -1);
    CU_ASSERT_EQUAL(f.core, 0);
    CU_ASSERT_EQUAL(f.unit, ISA_U_DMAI);
    CU_ASSERT_EQUAL(f.index, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, "cycle limit"));
    sim_destroy(s);
    isa_program_free(p);
}

/* 0 in sim_options takes the defaults, far above a normal program. */
static void test_zero_limits_take_the_defaults(void)
{
    CU_ASSERT(SIM_DEFAULT_MAX_INSNS >= 100000000ull);
    CU_ASSERT(SIM_DEFAULT_MAX_CYCLES >= 100000000ull);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_emit(p, 0, ISA_OP_LOOP)->val = 100000;
    tu_emit(p, 0, ISA_OP_NOP);
    tu_emit(p, 0, ISA_OP_ENDL);
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL(run_limited(p, 0, 0, &f), 0);
    isa_program_free(p);
}

/* addi wraps modulo 2^64: 2^16 steps of 2^47 - 1 and one of 2^16 give
 * 2^63, which wraps to INT64_MIN, an address outside every memory; 2^17
 * steps of -2^47 go once round and give 0, a usable address again. */
static void test_addi_wraps_modulo_2_64(void)
{
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_emit(p, 0, ISA_OP_LOOP)->val = 65536;
    isa_insn *in = tu_emit(p, 0, ISA_OP_ADDI);
    in->reg = 1;
    in->val = (1ll << 47) - 1;
    tu_emit(p, 0, ISA_OP_ENDL);
    in = tu_emit(p, 0, ISA_OP_ADDI);
    in->reg = 1;
    in->val = 65536;
    tu_emit(p, 0, ISA_OP_DMA_LD)->d.reg = 1;
    tu_halt_all(p);
    expect_fault(p, 0, ISA_U_DMAI, 4, "address 0x8000000000000000 of operand d is outside every memory");

    p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_emit(p, 0, ISA_OP_LOOP)->val = 131072;
    in = tu_emit(p, 0, ISA_OP_ADDI);
    in->reg = 2;
    in->val = -(1ll << 47);
    tu_emit(p, 0, ISA_OP_ENDL);
    in = tu_emit(p, 0, ISA_OP_ADDI);
    in->reg = 2;
    in->val = 0x200;
    in = tu_emit(p, 0, ISA_OP_DMA_LD);
    in->d.reg = 2;
    in->a.off = 0x1000;
    tu_halt_all(p);
    sim *s = sim_create(&cfg4);
    uint8_t stick[128];
    for (int i = 0; i < 128; i++)
        stick[i] = (uint8_t)(i + 1);
    sim_dram_write(s, 0x1000, stick, sizeof stick);
    sim_fault f;
    CU_ASSERT_EQUAL(sim_run(s, p, 0, NULL, &f), 0);
    CU_ASSERT_EQUAL(memcmp(sim_lx(s, 0) + 0x200, stick, sizeof stick), 0);
    sim_destroy(s);
    isa_program_free(p);
}

static void test_runs_are_deterministic(void)
{
    sim *s = sim_create(&cfg4);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    isa_insn *in = tu_emit(p, 0, ISA_OP_SFP_EXP);
    tu_loop(in, 4, 128, 128);
    in->d.off = 0x1000;
    tu_halt_all(p);
    for (int i = 0; i < 512; i++)
        sim_lx(s, 0)[i] = (uint8_t)(i * 31);
    sim_stats a, b;
    sim_fault f;
    CU_ASSERT_EQUAL(sim_run(s, p, 0, &a, &f), 0);
    uint8_t first[512];
    memcpy(first, sim_lx(s, 0) + 0x1000, 512);
    CU_ASSERT_EQUAL(sim_run(s, p, 0, &b, &f), 0);
    CU_ASSERT_EQUAL(memcmp(first, sim_lx(s, 0) + 0x1000, 512), 0);
    CU_ASSERT_EQUAL(a.insns, b.insns);
    CU_ASSERT_EQUAL(a.sfp_elems, 256);
    isa_program_free(p);
    sim_destroy(s);
}

/* ---- DRAM regions: weights and activations at separate device addresses ---- */

/* A segment of 4096 bytes whose first 1024 are weights: core 0 loads two
 * weight sticks (offset 0) and two activation sticks (offset 1024), and
 * stores the four at activation offset 2048. */
static isa_program *regions_program(void)
{
    isa_program *p = tu_prog_new(cfg4.cores, 4096);
    p->weight_bytes = 1024;
    isa_insn *in = tu_emit(p, 0, ISA_OP_DMA_LD);
    in->run = 2;
    in = tu_emit(p, 0, ISA_OP_DMA_LD);
    in->d.off = 256;
    in->a.off = 1024;
    in->run = 2;
    tu_sync(p, 0, ISA_OP_SIG, ISA_U_DMAI, 0);
    tu_sync(p, 0, ISA_OP_WAIT, ISA_U_DMAO, 0);
    in = tu_emit(p, 0, ISA_OP_DMA_ST);
    in->d.off = 2048;
    in->run = 4;
    tu_halt_all(p);
    return p;
}

static void test_dma_translates_weight_and_activation_offsets(void)
{
    sim *s = sim_create(&cfg4);
    isa_program *p = regions_program();
    const uint64_t wbase = 1 << 20, abase = 128 << 10; /* activations below the weights */
    uint8_t w[256], x[256], out[512];
    for (int i = 0; i < 256; i++) {
        w[i] = (uint8_t)(i + 1);
        x[i] = (uint8_t)(200 - i);
    }
    CU_ASSERT_EQUAL(sim_dram_write(s, wbase, w, 256), 0);
    CU_ASSERT_EQUAL(sim_dram_write(s, abase, x, 256), 0);
    sim_stats st;
    sim_fault f;
    int rc = sim_run_regions(s, p, wbase, abase, &st, &f);
    if (rc)
        fprintf(stderr, "\n    %s\n", f.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    /* Offset 2048 is activation byte 1024. */
    CU_ASSERT_EQUAL(sim_dram_read(s, abase + 1024, out, 512), 0);
    CU_ASSERT_EQUAL(memcmp(out, w, 256), 0);
    CU_ASSERT_EQUAL(memcmp(out + 256, x, 256), 0);
    /* Nothing landed where a contiguous segment would have put it. */
    CU_ASSERT_EQUAL(sim_dram_read(s, wbase + 2048, out, 512), 0);
    int zeros = 0;
    for (int i = 0; i < 512; i++)
        zeros += out[i] == 0;
    CU_ASSERT_EQUAL(zeros, 512);

    /* sim_run is the contiguous case: activations right after the weights. */
    CU_ASSERT_EQUAL(sim_dram_write(s, 8192, w, 256), 0);
    CU_ASSERT_EQUAL(sim_dram_write(s, 8192 + 1024, x, 256), 0);
    CU_ASSERT_EQUAL(sim_run(s, p, 8192, &st, &f), 0);
    CU_ASSERT_EQUAL(sim_dram_read(s, 8192 + 2048, out, 512), 0);
    CU_ASSERT_EQUAL(memcmp(out, w, 256), 0);
    CU_ASSERT_EQUAL(memcmp(out + 256, x, 256), 0);

    /* Each region must fit device DRAM. */
    CU_ASSERT_EQUAL(sim_run_regions(s, p, 0, cfg4.dram_bytes - 1024, &st, &f), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, "activation region"));
    CU_ASSERT_EQUAL(sim_run_regions(s, p, cfg4.dram_bytes - 512, 0, &st, &f), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, "weights region"));
    isa_program_free(p);
    sim_destroy(s);
}

static void test_dma_piece_straddling_the_regions_faults(void)
{
    isa_program *p = regions_program();
    p->cores[0].insns[1].a.off = 1024 - 128; /* two sticks: one weight, one activation */
    expect_fault(p, 0, ISA_U_DMAI, 1, "straddles the end of the weights region (0x400 bytes)");
    /* Pieces on either side of the boundary are fine. */
    p = regions_program();
    isa_insn *in = &p->cores[0].insns[1];
    in->a.off = 1024 - 128;
    in->run = 1;
    in->n[0] = 2;
    in->as[0] = 128;
    in->ds[0] = 128;
    sim *s = sim_create(&cfg4);
    sim_fault f;
    CU_ASSERT_EQUAL(run(s, p, &f), 0);
    isa_program_free(p);
    sim_destroy(s);
}

static void test_dma_store_into_weights_faults(void)
{
    isa_program *p = regions_program();
    p->cores[0].insns[4].d.off = 512;
    expect_fault(p, 0, ISA_U_DMAO, 4, "lies in the weights region [0, 0x400), which is read-only");
}

static uint16_t get_bits(const uint8_t *lx, int64_t off)
{
    uint16_t h;
    memcpy(&h, lx + off, 2);
    return h;
}

static void test_sfp_rst_transposes_shifts_lanes_and_keeps_the_rest(void)
{
    /* four sticks, element (r, c) holding the bits 0x100*r + c */
    sim *s = sim_create(&cfg4);
    uint8_t *lx = sim_lx(s, 0);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 64; c++) {
            uint16_t h = (uint16_t)(0x100 * r + c);
            memcpy(lx + 128 * r + 2 * c, &h, 2);
        }
    for (int i = 0; i < 64 * 7; i++)
        memcpy(lx + 0x1000 + 2 * i, &(uint16_t){0xaaaa}, 2);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    /* transpose the 4 x 6 block at lane 2: stick i of d gets lane 2 + i
     * of the four sticks */
    isa_insn *tr = tu_emit_at(p, 0, ISA_OP_SFP_RST, 0x1000, 4);
    tu_loop(tr, 6, 128, 2);
    tr->bs[0] = 128;
    tr->bs[1] = 2;
    tr->vl = 4;
    /* shift lanes 1..16 of stick 3 to lanes 40..55 of another stick */
    isa_insn *sh = tu_emit(p, 0, ISA_OP_SFP_RST);
    sh->d.off = 0x1000 + 6 * 128 + 80;
    sh->a.off = 3 * 128 + 2;
    sh->bs[0] = sh->bs[1] = 2;
    sh->vl = 16;
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    for (int i = 0; i < 6; i++)
        for (int l = 0; l < 64; l++)
            CU_ASSERT_EQUAL(get_bits(lx, 0x1000 + 128 * i + 2 * l), l < 4 ? 0x100 * l + 2 + i : 0xaaaa);
    for (int l = 0; l < 64; l++)
        CU_ASSERT_EQUAL(get_bits(lx, 0x1000 + 6 * 128 + 2 * l), l >= 40 && l < 56 ? 0x300 + l - 39 : 0xaaaa);
    isa_program_free(p);
    sim_destroy(s);
    /* an odd address is not an element */
    isa_program *q = tu_prog_new(cfg4.cores, 1 << 20);
    isa_insn *bad = tu_emit(q, 0, ISA_OP_SFP_RST);
    bad->a.off = 3;
    tu_halt_all(q);
    expect_fault(q, 0, ISA_U_SFP0, 0, "operand a is not aligned to 2 bytes");
}

static void test_sfp_iota_writes_affine_index_values_per_column_and_row(void)
{
    /* a 2-group x 3-row DL16 tile: group stride 3 sticks; value =
     * 5 + 2*column - 64*row, the column running across groups */
    sim *s = sim_create(&cfg4);
    uint8_t *lx = sim_lx(s, 0);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    isa_insn *io = tu_emit(p, 0, ISA_OP_SFP_IOTA);
    io->d.off = 0x2000;
    io->n[0] = 2;
    io->ds[0] = 3 * 128;
    io->n[1] = 3;
    io->ds[1] = 128;
    io->bs[0] = 2;
    io->bs[1] = -64;
    io->imm = 5.0f;
    /* fp32: 32 lanes per stick, the lane alone */
    isa_insn *f = tu_emit(p, 0, ISA_OP_SFP_IOTA);
    f->t = ISA_T_F32;
    f->d.off = 0x4000;
    f->bs[0] = 1;
    tu_halt_all(p);
    sim_fault ft;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &ft), 0);
    for (int g = 0; g < 2; g++)
        for (int r = 0; r < 3; r++)
            for (int l = 0; l < 64; l++)
                CU_ASSERT_EQUAL(get_dl16(lx, 0x2000 + g * 3 * 128 + r * 128 + 2 * l),
                                (float)(5 + 2 * (g * 64 + l) - 64 * r));
    CU_ASSERT_EQUAL(get_dl16(lx, 0x2000 + 3 * 128 + 2 * 63), 259.0f); /* column 127, row 0 */
    for (int l = 0; l < 32; l++) {
        float v;
        memcpy(&v, lx + 0x4000 + 4 * l, 4);
        CU_ASSERT_EQUAL(v, (float)l);
    }
    isa_program_free(p);
    sim_destroy(s);
}

/* A 5-row x 2-group fp32 table at DRAM 0x1000 (row stride one stick,
 * group stride 5 sticks): lane l of row r, group g holds 1000g + 40r + l. */
static void put_gather_table(sim *s)
{
    float t[2 * 5 * 32];
    for (int g = 0; g < 2; g++)
        for (int r = 0; r < 5; r++)
            for (int l = 0; l < 32; l++)
                t[(g * 5 + r) * 32 + l] = (float)(1000 * g + 40 * r + l);
    sim_dram_write(s, 0x1000, t, sizeof t);
}

static isa_insn *emit_gather(isa_program *p, int core, int64_t n0)
{
    isa_insn *g = tu_emit(p, core, ISA_OP_DMA_GATHER);
    g->d.off = 0x2000;
    g->a.off = 0x1000;
    g->b.off = 0x100;
    g->vl = 5;
    isa_set(g, n[0], n0);
    g->ds[0] = 128;
    g->as[0] = 128;
    g->n[1] = 2;
    isa_set(g, ds[1], n0 * 128);
    g->as[1] = 5 * 128;
    return g;
}

static void test_dma_gather_copies_the_indexed_rows_of_every_group(void)
{
    sim *s = sim_create(&cfg4);
    put_gather_table(s);
    const float idx[4] = {3, 0, 3, 4};
    memcpy(sim_lx(s, 2) + 0x100, idx, sizeof idx);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    CU_ASSERT_EQUAL(emit_gather(p, 2, 4)->bs[0], 4); /* the default index stride: packed fp32 */
    /* strided indices: every other fp32 of 0x100.. (3, 3) into 0x3000 */
    isa_insn *g = emit_gather(p, 2, 2);
    g->bs[0] = 8;
    g->d.off = 0x3000;
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    const uint8_t *lx = sim_lx(s, 2);
    for (int grp = 0; grp < 2; grp++)
        for (int i = 0; i < 4; i++)
            for (int l = 0; l < 32; l++) {
                float v;
                memcpy(&v, lx + 0x2000 + grp * 4 * 128 + i * 128 + 4 * l, 4);
                CU_ASSERT_EQUAL(v, (float)(1000 * grp + 40 * idx[i] + l));
            }
    float v;
    memcpy(&v, lx + 0x2000 + 4 * 128 + 3 * 128 + 4 * 31, 4); /* group 1, index 4, lane 31 */
    CU_ASSERT_EQUAL(v, 1191.0f);
    memcpy(&v, lx + 0x3000 + 1 * 128 + 4 * 5, 4); /* strided: index 1 is idx[2] = 3 */
    CU_ASSERT_EQUAL(v, 125.0f);
    memcpy(&v, lx + 0x3000 + 2 * 128 + 1 * 128, 4); /* group 1 (ds1 = 2 sticks), index 1, lane 0 */
    CU_ASSERT_EQUAL(v, 1120.0f);
    isa_program_free(p);
    sim_destroy(s);
}

static void expect_gather_fault(float bad, const char *text)
{
    sim *s = sim_create(&cfg4);
    put_gather_table(s);
    const float idx[3] = {1, bad, 2};
    memcpy(sim_lx(s, 1) + 0x100, idx, sizeof idx);
    memset(sim_lx(s, 1) + 0x2000, 0x5a, 6 * 128);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_emit(p, 1, ISA_OP_NOP);
    emit_gather(p, 1, 3);
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL(run(s, p, &f), -1);
    CU_ASSERT_EQUAL(f.core, 1);
    CU_ASSERT_EQUAL(f.unit, ISA_U_DMAI);
    CU_ASSERT_EQUAL(f.index, 1);
    if (!strstr(f.msg, text))
        fprintf(stderr, "\nfault message '%s' lacks '%s'\n", f.msg, text);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, text));
    /* the faulting gather copied nothing */
    CU_ASSERT_EQUAL(sim_lx(s, 1)[0x2000], 0x5a);
    CU_ASSERT_EQUAL(sim_lx(s, 1)[0x2000 + 6 * 128 - 1], 0x5a);
    isa_program_free(p);
    sim_destroy(s);
}

static void test_dma_gather_faults_on_an_index_that_is_not_an_integer_row(void)
{
    expect_gather_fault(1.5f, "dma.gather: index 1 (LX 0x104) is 1.5, not an integer row in [0, 5)");
    expect_gather_fault(5.0f, "dma.gather: index 1 (LX 0x104) is 5, not an integer row in [0, 5)");
    expect_gather_fault(-1.0f, "is -1, not an integer row in [0, 5)");
    expect_gather_fault(NAN, "not an integer row in [0, 5)");
}

/* A scatter on core `core` of n0 rows x 2 groups from LX 0x2000 (packed:
 * ds as for emit_gather's LX side) to the 5-row x 2-group table at DRAM
 * 0x1000, its fp32 row numbers at LX 0x100. */
static isa_insn *emit_scatter(isa_program *p, int core, int64_t n0)
{
    isa_insn *g = tu_emit(p, core, ISA_OP_DMA_SCATTER);
    g->d.off = 0x1000;
    g->a.off = 0x2000;
    g->b.off = 0x100;
    g->vl = 5;
    isa_set(g, n[0], n0);
    g->ds[0] = 128;
    g->as[0] = 128;
    g->n[1] = 2;
    g->ds[1] = 5 * 128;
    isa_set(g, as[1], n0 * 128);
    return g;
}

/* LX 0x2000 of core: n0 rows x 2 groups, lane l of row i, group g holding
 * -(1000g + 100i + l + 1); indices idx at LX 0x100. */
static void put_scatter_rows(sim *s, int core, const float *idx, int n0)
{
    float t[2 * 8 * 32];
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < n0; i++)
            for (int l = 0; l < 32; l++)
                t[(g * n0 + i) * 32 + l] = -(float)(1000 * g + 100 * i + l + 1);
    memcpy(sim_lx(s, core) + 0x2000, t, (size_t)(2 * n0 * 32) * sizeof(float));
    memcpy(sim_lx(s, core) + 0x100, idx, (size_t)n0 * sizeof(float));
}

static void test_dma_scatter_writes_the_indexed_rows_of_every_group_and_no_other(void)
{
    sim *s = sim_create(&cfg4);
    put_gather_table(s);
    const float idx[2] = {3, 1};
    put_scatter_rows(s, 2, idx, 2);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    emit_scatter(p, 2, 2);
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(run(s, p, &f), 0);
    float t[2 * 5 * 32];
    sim_dram_read(s, 0x1000, t, sizeof t);
    for (int g = 0; g < 2; g++)
        for (int r = 0; r < 5; r++)
            for (int l = 0; l < 32; l++) {
                int i = r == 3 ? 0 : r == 1 ? 1 : -1; /* the LX row scattered to table row r */
                float want = i < 0 ? (float)(1000 * g + 40 * r + l) : -(float)(1000 * g + 100 * i + l + 1);
                CU_ASSERT_EQUAL(t[(g * 5 + r) * 32 + l], want);
            }
    isa_program_free(p);
    sim_destroy(s);
}

static void test_dma_scatter_faults_on_a_row_out_of_bounds_and_writes_nothing(void)
{
    sim *s = sim_create(&cfg4);
    put_gather_table(s);
    const float idx[3] = {1, 5, 2};
    put_scatter_rows(s, 1, idx, 3);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    tu_emit(p, 1, ISA_OP_NOP);
    emit_scatter(p, 1, 3);
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL(run(s, p, &f), -1);
    CU_ASSERT_EQUAL(f.core, 1);
    CU_ASSERT_EQUAL(f.unit, ISA_U_DMAO);
    CU_ASSERT_EQUAL(f.index, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, "dma.scatter: index 1 (LX 0x104) is 5, not an integer row in [0, 5)"));
    float t[2 * 5 * 32]; /* row 1 (index 0's) still holds the table */
    sim_dram_read(s, 0x1000, t, sizeof t);
    CU_ASSERT_EQUAL(t[1 * 32 + 7], 47.0f);
    isa_program_free(p);
    sim_destroy(s);
}

/* Cores 0 and 1 scatter one row each into the table with nothing ordering
 * them: a race only when the rows (data, not the table's extent) meet. */
static void scatter_rows_on_two_cores(float row0, float row1, int expect_race)
{
    sim *s = sim_create(&cfg4);
    put_scatter_rows(s, 0, &row0, 1);
    put_scatter_rows(s, 1, &row1, 1);
    isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
    emit_scatter(p, 0, 1);
    emit_scatter(p, 1, 1);
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL(run(s, p, &f), expect_race ? -1 : 0);
    CU_ASSERT(!expect_race || strstr(f.msg, "race: core 1 dmao #0 writes DRAM") != NULL);
    isa_program_free(p);
    sim_destroy(s);
}

static void test_dma_scatters_race_on_the_rows_they_write(void)
{
    scatter_rows_on_two_cores(2, 2, 1);
    scatter_rows_on_two_cores(2, 3, 0);
    /* a load of the scattered row on the same core's other DMA unit, with
     * no token: a race; a fence between the two orders them */
    for (int fence = 0; fence < 2; fence++) {
        isa_program *p = tu_prog_new(cfg4.cores, 1 << 20);
        emit_scatter(p, 0, 1);
        if (fence)
            tu_emit(p, 0, ISA_OP_FENCE);
        tu_emit_at(p, 0, ISA_OP_DMA_LD, 0x4000, 0x1000 + 4 * 128);
        tu_halt_all(p);
        sim *s = sim_create(&cfg4);
        const float row = 4;
        put_scatter_rows(s, 0, &row, 1);
        sim_fault f;
        CU_ASSERT_EQUAL(run(s, p, &f), fence ? 0 : -1);
        float v;
        memcpy(&v, sim_lx(s, 0) + 0x4000, 4);
        CU_ASSERT(fence ? v == -1.0f : strstr(f.msg, "race: core 0 dmai #1 reads DRAM") != NULL);
        isa_program_free(p);
        sim_destroy(s);
    }
}

int main(void)
{
    tu_config("spyre-4core", &cfg4);
    static const tu_test tests[] = {
        {"a wait orders what came before its own sig only", test_a_wait_orders_what_came_before_its_own_sig_only},
        {"a runaway loop stops at the instruction and cycle limits",
         test_a_runaway_loop_stops_at_the_instruction_and_cycle_limits},
        {"the cycle limit names the unit instruction that passes it",
         test_the_cycle_limit_names_the_unit_instruction_that_passes_it},
        {"one endless DMA stops at the cycle limit before it runs",
         test_one_endless_dma_stops_at_the_cycle_limit_before_it_runs},
        {"a kept decode runs as a fresh one", test_a_kept_decode_runs_as_a_fresh_one},
        {"zero limits take the defaults", test_zero_limits_take_the_defaults},
        {"addi wraps modulo 2^64", test_addi_wraps_modulo_2_64},
        {"dram_is_sparse_and_reads_zero_when_untouched", test_dram_is_sparse_and_reads_zero_when_untouched},
        {"dram_zero_clears_its_range_only", test_dram_zero_clears_its_range_only},
        {"dma_moves_strided_sticks_both_ways", test_dma_moves_strided_sticks_both_ways},
        {"pt_matmul_matches_hand_computation", test_pt_matmul_matches_hand_computation},
        {"pt_product_gives_one_sgemm_calls_bits", test_pt_product_gives_one_sgemm_calls_bits},
        {"pt_product_on_packed_operands_gives_one_sgemm_calls_bits",
         test_pt_product_on_packed_operands_gives_one_sgemm_calls_bits},
        {"accumulating_onto_sums_written_in_column_blocks_adds_every_block",
         test_accumulating_onto_sums_written_in_column_blocks_adds_every_block},
        {"products_share_a_tile_conversion_only_for_equal_bytes",
         test_products_share_a_tile_conversion_only_for_equal_bytes},
        {"a_load_into_a_ring_copy_ends_its_shared_conversion", test_a_load_into_a_ring_copy_ends_its_shared_conversion},
        {"fp32_sums_reach_dma_and_a_later_load_overwrites_them", test_fp32_sums_reach_dma_and_a_later_load_overwrites_them},
        {"sums_kept_in_pieces_feed_wider_and_narrower_products", test_sums_kept_in_pieces_feed_wider_and_narrower_products},
        {"a_load_over_a_queued_products_operands_leaves_it_the_old_ones",
         test_a_load_over_a_queued_products_operands_leaves_it_the_old_ones},
        {"a_load_after_a_store_of_queued_results_reads_them", test_a_load_after_a_store_of_queued_results_reads_them},
        {"stores_of_two_workers_to_one_place_land_in_program_order",
         test_stores_of_two_workers_to_one_place_land_in_program_order},
        {"sfp_binary_broadcast_and_reductions", test_sfp_binary_broadcast_and_reductions},
        {"sfp_unary_ops_and_conversion", test_sfp_unary_ops_and_conversion},
        {"loops_and_registers_step_addresses", test_loops_and_registers_step_addresses},
        {"queued_instructions_keep_the_addresses_of_their_dispatch",
         test_queued_instructions_keep_the_addresses_of_their_dispatch},
        {"ring_send_and_reduce_signal_remote_core", test_ring_send_and_reduce_signal_remote_core},
        {"barrier_orders_cores", test_barrier_orders_cores},
        {"fence_orders_a_cores_own_units", test_fence_orders_a_cores_own_units},
        {"lx_out_of_bounds_names_core_unit_and_index", test_lx_out_of_bounds_names_core_unit_and_index},
        {"dram_outside_segment_faults", test_dram_outside_segment_faults},
        {"unaligned_stick_faults", test_unaligned_stick_faults},
        {"wait_on_never_signalled_token_is_deadlock", test_wait_on_never_signalled_token_is_deadlock},
        {"a_token_left_at_a_fence_or_bar_faults", test_a_token_left_at_a_fence_or_bar_faults},
        {"barrier_missed_by_halted_core_is_deadlock", test_barrier_missed_by_halted_core_is_deadlock},
        {"fence_behind_a_unit_that_never_goes_idle_is_deadlock", test_fence_behind_a_unit_that_never_goes_idle_is_deadlock},
        {"missing_token_and_bad_loop_fault", test_missing_token_and_bad_loop_fault},
        {"runs_are_deterministic", test_runs_are_deterministic},
        {"dma_translates_weight_and_activation_offsets", test_dma_translates_weight_and_activation_offsets},
        {"dma_piece_straddling_the_regions_faults", test_dma_piece_straddling_the_regions_faults},
        {"dma_store_into_weights_faults", test_dma_store_into_weights_faults},
        {"sfp_rst_transposes_shifts_lanes_and_keeps_the_rest", test_sfp_rst_transposes_shifts_lanes_and_keeps_the_rest},
        {"sfp_iota_writes_affine_index_values_per_column_and_row",
         test_sfp_iota_writes_affine_index_values_per_column_and_row},
        {"dma_gather_copies_the_indexed_rows_of_every_group", test_dma_gather_copies_the_indexed_rows_of_every_group},
        {"dma_gather_faults_on_an_index_that_is_not_an_integer_row",
         test_dma_gather_faults_on_an_index_that_is_not_an_integer_row},
        {"dma_scatter_writes_the_indexed_rows_of_every_group_and_no_other",
         test_dma_scatter_writes_the_indexed_rows_of_every_group_and_no_other},
        {"dma_scatter_faults_on_a_row_out_of_bounds_and_writes_nothing",
         test_dma_scatter_faults_on_a_row_out_of_bounds_and_writes_nothing},
        {"dma_scatters_race_on_the_rows_they_write", test_dma_scatters_race_on_the_rows_they_write},
        {"a_race_in_the_middle_of_a_strided_set_names_its_bytes", test_a_race_in_the_middle_of_a_strided_set_names_its_bytes},
        {"a_value_isa_set_could_not_store_faults_at_issue", test_a_value_isa_set_could_not_store_faults_at_issue},
        {NULL, NULL},
    };
    return tu_run("sim", tests);
}
