/* test_compiler.c: the kernel generators (cc_gen_gemm, cc_gen_softmax):
 * the shape of the programs they produce (streams, work division, LX and
 * token use, compactness, errors) and their results on the simulator
 * against references computed here (OpenBLAS on the DL16-rounded inputs). */
#include <CUnit/CUnit.h>
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"
#include "sim.h"
#include "testutil.h"

/* Programs are run at a non-zero DRAM base to prove addresses are relative. */
#define DRAM_BASE (64ull << 20)

/* ---- helpers ---- */

static uint32_t rng_state = 12345;
static float frand(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)((rng_state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static const isa_tensor *tensor(const isa_program *p, const char *name)
{
    int i = isa_program_find_tensor(p, name);
    CU_ASSERT_FATAL(i >= 0);
    return &p->tensors[i];
}

/* Write host (rows, cols) fp32 data as DL16 in device layout (padding zero);
 * v is replaced by its DL16-rounded values. */
static void put_dl16(sim *s, const isa_program *p, const isa_tensor *t, float *v)
{
    int64_t rows = t->shape[0], cols = t->shape[1], lanes = p->stick_bytes / 2;
    uint8_t *buf = calloc(1, t->bytes);
    CU_ASSERT_FATAL(buf != NULL);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            uint16_t h = isa_dl16_from_f32(v[r * cols + c]);
            v[r * cols + c] = isa_dl16_to_f32(h);
            memcpy(buf + ((c / lanes) * rows + r) * p->stick_bytes + (c % lanes) * 2, &h, 2);
        }
    CU_ASSERT_EQUAL(sim_dram_write(s, DRAM_BASE + t->dram_off, buf, t->bytes), 0);
    free(buf);
}

/* Read a DL16 device-layout tensor back to host (rows, cols) fp32. */
static float *get_dl16(sim *s, const isa_program *p, const isa_tensor *t)
{
    int64_t rows = t->shape[0], cols = t->shape[1], lanes = p->stick_bytes / 2;
    uint8_t *buf = malloc(t->bytes);
    float *v = malloc((size_t)(rows * cols) * sizeof *v);
    CU_ASSERT_FATAL(buf && v);
    CU_ASSERT_EQUAL(sim_dram_read(s, DRAM_BASE + t->dram_off, buf, t->bytes), 0);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            uint16_t h;
            memcpy(&h, buf + ((c / lanes) * rows + r) * p->stick_bytes + (c % lanes) * 2, 2);
            v[r * cols + c] = isa_dl16_to_f32(h);
        }
    free(buf);
    return v;
}

/* Padding lanes of a DL16 device-layout tensor that are not zero. */
static int64_t nonzero_padding(sim *s, const isa_program *p, const isa_tensor *t)
{
    int64_t rows = t->shape[0], cols = t->shape[1], lanes = p->stick_bytes / 2, bad = 0;
    if (cols % lanes == 0)
        return 0;
    uint8_t *buf = malloc(t->bytes);
    CU_ASSERT_FATAL(buf != NULL);
    CU_ASSERT_EQUAL(sim_dram_read(s, DRAM_BASE + t->dram_off, buf, t->bytes), 0);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = cols; c % lanes; c++) {
            uint16_t h;
            memcpy(&h, buf + ((c / lanes) * rows + r) * p->stick_bytes + (c % lanes) * 2, 2);
            bad += h != 0;
        }
    free(buf);
    return bad;
}

/* Run p; on a fault print it and fail.  Returns 0 on success. */
static int run(sim *s, const isa_program *p, sim_stats *st)
{
    sim_fault f;
    memset(&f, 0, sizeof f);
    memset(st, 0, sizeof *st);
    int rc = sim_run(s, p, DRAM_BASE, st, &f);
    if (rc)
        fprintf(stderr, "\n  fault: core %d unit %d insn %ld: %s\n", f.core, f.unit, f.index, f.msg);
    CU_ASSERT_EQUAL(rc, 0);
    return rc;
}

static int has_op(const isa_stream *s, int op)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->insns[i].op == op)
            return 1;
    return 0;
}

/* Every core has a stream, it ends in halt, loops are balanced, and every
 * token is signalled as often as it is waited for (counting loop trips). */
static void check_structure(const sim_config *cfg, const isa_program *p)
{
    CU_ASSERT_EQUAL(p->ncores, cfg->cores);
    CU_ASSERT_STRING_EQUAL(p->config, cfg->name);
    CU_ASSERT_EQUAL(p->lx_bytes, cfg->lx_bytes);
    CU_ASSERT_EQUAL(p->stick_bytes, cfg->stick_bytes);
    for (int c = 0; c < p->ncores; c++) {
        const isa_stream *s = &p->cores[c];
        CU_ASSERT_FATAL(s->n > 0);
        CU_ASSERT_EQUAL(s->insns[s->n - 1].op, ISA_OP_HALT);
        int64_t trips[ISA_MAX_LOOPS + 1] = {1}, depth = 0;
        int64_t *bal = calloc((size_t)cfg->tokens, sizeof *bal);
        for (size_t i = 0; i < s->n; i++) {
            const isa_insn *in = &s->insns[i];
            if (in->op == ISA_OP_LOOP) {
                CU_ASSERT_FATAL(depth < ISA_MAX_LOOPS);
                trips[depth + 1] = trips[depth] * in->val;
                depth++;
            } else if (in->op == ISA_OP_ENDL) {
                CU_ASSERT_FATAL(depth > 0);
                depth--;
            } else if (in->op == ISA_OP_SIG || in->op == ISA_OP_WAIT) {
                CU_ASSERT_FATAL(in->tok >= 0 && in->tok < cfg->tokens);
                bal[in->tok] += in->op == ISA_OP_SIG ? trips[depth] : -trips[depth];
            }
        }
        CU_ASSERT_EQUAL(depth, 0);
        for (int t = 0; t < cfg->tokens; t++)
            CU_ASSERT_EQUAL(bal[t], 0);
        free(bal);
    }
}

static size_t max_stream(const isa_program *p)
{
    size_t m = 0;
    for (int c = 0; c < p->ncores; c++)
        if (p->cores[c].n > m)
            m = p->cores[c].n;
    return m;
}

/* ---- GEMM ---- */

static void gemm_on(const char *cfgname, int64_t M, int64_t N, int64_t K)
{
    sim_config cfg;
    tu_config(cfgname, &cfg);
    char err[256] = "";
    isa_program *p = cc_gen_gemm(&cfg, M, N, K, err, sizeof err);
    if (!p)
        fprintf(stderr, "\n  %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    check_structure(&cfg, p);
    CU_ASSERT_STRING_EQUAL(p->graph, "%C = aten.mm(%A, %B)\n");
    const isa_tensor *ta = tensor(p, "A"), *tb = tensor(p, "B"), *tc = tensor(p, "C");
    CU_ASSERT_EQUAL(ta->role, ISA_ROLE_INPUT);
    CU_ASSERT_EQUAL(tb->role, ISA_ROLE_INPUT);
    CU_ASSERT_EQUAL(tc->role, ISA_ROLE_OUTPUT);
    CU_ASSERT(ta->shape[0] == M && ta->shape[1] == K && tb->shape[0] == K && tb->shape[1] == N &&
              tc->shape[0] == M && tc->shape[1] == N);

    float *a = malloc((size_t)(M * K) * sizeof *a), *b = malloc((size_t)(K * N) * sizeof *b);
    float *ref = malloc((size_t)(M * N) * sizeof *ref), *bound = malloc((size_t)(M * N) * sizeof *bound);
    float *aa = malloc((size_t)(M * K) * sizeof *aa), *ab = malloc((size_t)(K * N) * sizeof *ab);
    CU_ASSERT_FATAL(a && b && ref && bound && aa && ab);
    for (int64_t i = 0; i < M * K; i++)
        a[i] = frand();
    for (int64_t i = 0; i < K * N; i++)
        b[i] = frand();

    sim *s = sim_create(&cfg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    put_dl16(s, p, ta, a);
    put_dl16(s, p, tb, b);
    sim_stats st;
    if (run(s, p, &st) == 0) {
        float *c = get_dl16(s, p, tc);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)K, b, (int)N,
                    0.0f, ref, (int)N);
        for (int64_t i = 0; i < M * K; i++)
            aa[i] = fabsf(a[i]);
        for (int64_t i = 0; i < K * N; i++)
            ab[i] = fabsf(b[i]);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, aa, (int)K, ab, (int)N,
                    0.0f, bound, (int)N);
        int64_t bad = 0;
        for (int64_t i = 0; i < M * N; i++)
            if (!(fabsf(c[i] - ref[i]) <= 1e-2f * bound[i] + 1e-6f)) {
                if (bad++ < 3)
                    fprintf(stderr, "\n  %s gemm %ldx%ldx%ld: C[%ld][%ld] = %g, expected %g", cfgname, (long)M,
                            (long)N, (long)K, (long)(i / N), (long)(i % N), c[i], ref[i]);
            }
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT_EQUAL(st.macs >= (uint64_t)(M * N * K), 1);
        for (int i = 0; i < cfg.cores; i++)
            CU_ASSERT(st.lx_peak[i] <= cfg.lx_usable_bytes);
        /* C is computed in whole sticks from B's zero padding: its padding is zero. */
        CU_ASSERT_EQUAL(nonzero_padding(s, p, tc), 0);
        free(c);
    }
    sim_destroy(s);
    free(a);
    free(b);
    free(ref);
    free(bound);
    free(aa);
    free(ab);
    isa_program_free(p);
}

static void test_gemm_100x70x130_uneven_edges(void)
{
    gemm_on("spyre", 100, 70, 130);
    gemm_on("spyre-4core", 100, 70, 130);
}

static void test_gemm_64x64x4096_long_k(void)
{
    gemm_on("spyre", 64, 64, 4096);
    gemm_on("spyre-4core", 64, 64, 4096);
}

static void test_gemm_8192x64x256_tall_skinny(void)
{
    gemm_on("spyre", 8192, 64, 256);
    gemm_on("spyre-4core", 8192, 64, 256);
}

static void test_gemm_tiny_and_single_stick(void)
{
    gemm_on("spyre", 1, 1, 1);
    gemm_on("spyre-4core", 3, 65, 64);
    gemm_on("spyre-4core", 17, 200, 1000);
}

static void test_gemm_1024_cube(void)
{
    gemm_on("spyre", 1024, 1024, 1024);
    gemm_on("spyre-4core", 1024, 1024, 1024);
}

static int cores_with_pt(const isa_program *p)
{
    int n = 0;
    for (int c = 0; c < p->ncores; c++)
        n += has_op(&p->cores[c], ISA_OP_PT_MM);
    return n;
}

static void test_gemm_1024_cube_uses_every_core_compactly(void)
{
    const char *names[] = {"spyre", "spyre-4core"};
    for (int i = 0; i < 2; i++) {
        sim_config cfg;
        tu_config(names[i], &cfg);
        char err[256];
        isa_program *p = cc_gen_gemm(&cfg, 1024, 1024, 1024, err, sizeof err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(cores_with_pt(p), cfg.cores);
        /* The K loop is a counted loop: hundreds of instructions per core. */
        CU_ASSERT(max_stream(p) <= 400u);
        if (i == 0)
            for (int c = 0; c < p->ncores; c++)
                CU_ASSERT(has_op(&p->cores[c], ISA_OP_LOOP));
        isa_program_free(p);
    }
}

static void test_gemm_small_leaves_idle_cores_halting(void)
{
    sim_config cfg;
    tu_config("spyre", &cfg);
    char err[256];
    isa_program *p = cc_gen_gemm(&cfg, 8, 64, 64, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    check_structure(&cfg, p);
    int idle = 0;
    for (int c = 0; c < p->ncores; c++)
        idle += p->cores[c].n == 1;
    CU_ASSERT(idle > 0);
    CU_ASSERT_EQUAL(idle + cores_with_pt(p), cfg.cores);
    isa_program_free(p);
}

static void test_gemm_bad_shapes_fail_with_message(void)
{
    sim_config cfg;
    tu_config("spyre", &cfg);
    char err[256];
    int64_t shapes[][3] = {{0, 4, 4}, {4, -1, 4}, {4, 4, 0}, {1ll << 25, 64, 64}, {64, 64, 1ll << 25},
                           {1ll << 22, 1ll << 22, 64}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        err[0] = 0;
        isa_program *p = cc_gen_gemm(&cfg, shapes[i][0], shapes[i][1], shapes[i][2], err, sizeof err);
        CU_ASSERT_PTR_NULL(p);
        CU_ASSERT(strstr(err, "gemm") != NULL);
        isa_program_free(p);
    }
}

/* ---- budgets ---- */

static void test_budget_errors_name_the_resource(void)
{
    sim_config cfg;
    tu_config("spyre-4core", &cfg);
    char err[256] = "";
    cfg.lx_usable_bytes = 2048;
    CU_ASSERT_PTR_NULL(cc_gen_gemm(&cfg, 64, 64, 64, err, sizeof err));
    CU_ASSERT(strstr(err, "LX") != NULL);
    err[0] = 0;
    CU_ASSERT_PTR_NULL(cc_gen_softmax(&cfg, 64, 1000, err, sizeof err));
    CU_ASSERT(strstr(err, "LX") != NULL);
    tu_config("spyre-4core", &cfg);
    cfg.tokens = 4;
    err[0] = 0;
    CU_ASSERT_PTR_NULL(cc_gen_gemm(&cfg, 64, 64, 64, err, sizeof err));
    CU_ASSERT(strstr(err, "token") != NULL);
    err[0] = 0;
    CU_ASSERT_PTR_NULL(cc_gen_softmax(&cfg, 64, 64, err, sizeof err));
    CU_ASSERT(strstr(err, "token") != NULL);
}

/* ---- softmax ---- */

static void softmax_on(const char *cfgname, int64_t rows, int64_t cols)
{
    sim_config cfg;
    tu_config(cfgname, &cfg);
    char err[256] = "";
    isa_program *p = cc_gen_softmax(&cfg, rows, cols, err, sizeof err);
    if (!p)
        fprintf(stderr, "\n  %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    check_structure(&cfg, p);
    CU_ASSERT_STRING_EQUAL(p->graph, "%y = aten._softmax(%x, -1, False)\n");
    const isa_tensor *tx = tensor(p, "x"), *ty = tensor(p, "y");
    CU_ASSERT_EQUAL(tx->role, ISA_ROLE_INPUT);
    CU_ASSERT_EQUAL(ty->role, ISA_ROLE_OUTPUT);

    float *x = malloc((size_t)(rows * cols) * sizeof *x);
    CU_ASSERT_FATAL(x != NULL);
    for (int64_t i = 0; i < rows * cols; i++)
        x[i] = 4.0f * frand() + (float)(i % 7); /* a row max well away from 0 */
    sim *s = sim_create(&cfg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    put_dl16(s, p, tx, x);
    sim_stats st;
    if (run(s, p, &st) == 0) {
        float *y = get_dl16(s, p, ty);
        int64_t bad = 0;
        for (int64_t r = 0; r < rows; r++) {
            double mx = -INFINITY, sum = 0;
            for (int64_t c = 0; c < cols; c++)
                mx = fmax(mx, x[r * cols + c]);
            for (int64_t c = 0; c < cols; c++)
                sum += exp(x[r * cols + c] - mx);
            for (int64_t c = 0; c < cols; c++) {
                double ref = exp(x[r * cols + c] - mx) / sum, got = y[r * cols + c];
                if (!(fabs(got - ref) <= 2e-2 * ref + 1e-4) && bad++ < 3)
                    fprintf(stderr, "\n  %s softmax %ldx%ld: y[%ld][%ld] = %g, expected %g", cfgname, (long)rows,
                            (long)cols, (long)r, (long)c, got, ref);
            }
        }
        CU_ASSERT_EQUAL(bad, 0);
        for (int i = 0; i < cfg.cores; i++)
            CU_ASSERT(st.lx_peak[i] <= cfg.lx_usable_bytes);
        free(y);
    }
    sim_destroy(s);
    free(x);
    isa_program_free(p);
}

static void test_softmax_37x200(void)
{
    softmax_on("spyre", 37, 200);
    softmax_on("spyre-4core", 37, 200);
}

static void test_softmax_512x1024_loops(void)
{
    softmax_on("spyre", 512, 1024);
    softmax_on("spyre-4core", 512, 1024);
    /* One core's worth of rows that do not divide into chunks evenly. */
    softmax_on("spyre-4core", 1001, 70);
}

static void test_softmax_wide_rows_and_single_row(void)
{
    softmax_on("spyre-4core", 3, 20000);
    softmax_on("spyre", 1, 1);
}

static void test_softmax_bad_shapes_fail_with_message(void)
{
    sim_config cfg;
    tu_config("spyre-4core", &cfg);
    char err[256];
    int64_t shapes[][2] = {{0, 10}, {10, 0}, {4, 1 << 20}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        err[0] = 0;
        isa_program *p = cc_gen_softmax(&cfg, shapes[i][0], shapes[i][1], err, sizeof err);
        CU_ASSERT_PTR_NULL(p);
        CU_ASSERT(strstr(err, "softmax") != NULL);
        isa_program_free(p);
    }
}

int main(void)
{
    static const tu_test tests[] = {
        {"gemm 100x70x130: uneven edges on both configs", test_gemm_100x70x130_uneven_edges},
        {"gemm 64x64x4096: long K in a loop", test_gemm_64x64x4096_long_k},
        {"gemm 8192x64x256: tall and skinny", test_gemm_8192x64x256_tall_skinny},
        {"gemm tiny shapes and single sticks", test_gemm_tiny_and_single_stick},
        {"gemm 1024^3 computes the product on both configs", test_gemm_1024_cube},
        {"gemm 1024^3 uses every core with compact streams", test_gemm_1024_cube_uses_every_core_compactly},
        {"gemm too small for the chip leaves idle cores halting", test_gemm_small_leaves_idle_cores_halting},
        {"gemm bad shapes fail with a message", test_gemm_bad_shapes_fail_with_message},
        {"budget errors name the resource (LX, tokens)", test_budget_errors_name_the_resource},
        {"softmax 37x200 on both configs", test_softmax_37x200},
        {"softmax 512x1024 and uneven chunks", test_softmax_512x1024_loops},
        {"softmax wide rows and a single element", test_softmax_wide_rows_and_single_row},
        {"softmax bad shapes fail with a message", test_softmax_bad_shapes_fail_with_message},
        {NULL, NULL},
    };
    return tu_run("compiler", tests);
}
