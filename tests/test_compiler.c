/* test_compiler.c: the named kernels (cc_gen_gemm, cc_gen_softmax and their
 * options, compiled by the graph compiler) and the hand-shaped kernels of
 * the benchmarks (bench/shapes.h: shapes_gemm, shapes_softmax,
 * shapes_stream): the shape of the programs they produce (streams,
 * kernels, work division, LX and token use, compactness, errors) and their
 * results on the simulator, with race and deadlock detection on, against
 * references computed here (OpenBLAS on the DL16-rounded inputs, a C
 * softmax, the input bytes of a copy).  A test of a detail of a
 * hand-shaped kernel (its tiling, its K chunks, its zeroed padding, its
 * two softmax kernels through DRAM) runs on the bench copy. */
#include <CUnit/CUnit.h>
#include <cblas.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cc.h"
#include "shapes.h"
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

/* Fill every core's LX and the bytes of tensor t with garbage DL16 values,
 * NaN, infinity and negative numbers among them, as a chip that ran
 * something else before might hold: a program must not rely on zeros it
 * did not write. */
static void fill_garbage(sim *s, const chip_config *cfg, const isa_tensor *t)
{
    size_t bytes = t->bytes > cfg->lx_bytes ? t->bytes : cfg->lx_bytes;
    uint16_t *buf = malloc(bytes);
    CU_ASSERT_FATAL(buf != NULL);
    for (size_t i = 0; i < bytes / 2; i++) {
        rng_state = rng_state * 1664525u + 1013904223u;
        buf[i] = i % 4 ? (uint16_t)(rng_state >> 16) : (uint16_t)(ISA_DL16_NINF | (i % 8 ? 0x8000u : 0u));
    }
    for (int c = 0; c < cfg->cores; c++)
        memcpy(sim_lx(s, c), buf, cfg->lx_bytes);
    CU_ASSERT_EQUAL(sim_dram_write(s, DRAM_BASE + t->dram_off, buf, t->bytes), 0);
    free(buf);
}

/* Run p with races and deadlocks reported as faults; on a fault print it
 * and fail.  Returns 0 on success. */
static int run(sim *s, const isa_program *p, sim_stats *st)
{
    sim_options opt = {.values = 1, .detect_races = 1, .trace = SIM_TRACE_OFF};
    sim_set_options(s, &opt);
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

/* Does core c do any work (an instruction for a unit, not only control)? */
static int core_works(const isa_program *p, int c)
{
    const isa_stream *s = &p->cores[c];
    for (size_t i = 0; i < s->n; i++)
        if (isa_insn_unit(&s->insns[i]) != ISA_U_SEQ)
            return 1;
    return 0;
}

static int cores_working(const isa_program *p)
{
    int n = 0;
    for (int c = 0; c < p->ncores; c++)
        n += core_works(p, c);
    return n;
}

/* The kernels of every working core cover each of its instructions but
 * the final halt exactly once (a bar or fence between two kernels, which
 * the graph compiler puts outside both, at most once); idle cores have no
 * kernels and only halt (after a bar or fence when the program has one
 * between kernels). */
static void check_kernels(const isa_program *p)
{
    for (int c = 0; c < p->ncores; c++) {
        const isa_stream *s = &p->cores[c];
        int *cover = calloc(s->n ? s->n : 1, sizeof *cover);
        CU_ASSERT_FATAL(cover != NULL);
        for (size_t k = 0; k < p->nkernels; k++) {
            const isa_kernel *kn = &p->kernels[k];
            CU_ASSERT_FATAL(kn->core >= 0 && kn->core < p->ncores);
            if (kn->core != c)
                continue;
            CU_ASSERT(kn->name[0] != 0);
            CU_ASSERT_FATAL(kn->first >= 0 && kn->first <= kn->last && (size_t)kn->last < s->n);
            for (long i = kn->first; i <= kn->last; i++)
                cover[i]++;
        }
        if (core_works(p, c)) {
            int64_t bad = 0;
            for (size_t i = 0; i + 1 < s->n; i++) {
                int sync = s->insns[i].op == ISA_OP_BAR || s->insns[i].op == ISA_OP_FENCE;
                bad += !(cover[i] == 1 || (sync && cover[i] == 0));
            }
            CU_ASSERT_EQUAL(bad, 0);
            CU_ASSERT_EQUAL(cover[s->n - 1], 0); /* the halt */
        } else {
            for (size_t i = 0; i < s->n; i++) {
                CU_ASSERT_EQUAL(cover[i], 0);
                CU_ASSERT(s->insns[i].op == ISA_OP_HALT || s->insns[i].op == ISA_OP_BAR || s->insns[i].op == ISA_OP_FENCE);
            }
        }
        free(cover);
    }
}

/* The names of core c's kernels in stream order, joined by spaces. */
static void kernel_names(const isa_program *p, int c, char *buf, size_t len)
{
    buf[0] = 0;
    for (long at = 0;; at++) {
        const isa_kernel *next = NULL;
        for (size_t k = 0; k < p->nkernels; k++)
            if (p->kernels[k].core == c && p->kernels[k].first >= at && (!next || p->kernels[k].first < next->first))
                next = &p->kernels[k];
        if (!next)
            return;
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, "%s%s", n ? " " : "", next->name);
        at = next->first;
    }
}

/* Every working core of p runs the kernels named in want, in order. */
static void check_working_kernels(const isa_program *p, const char *want)
{
    for (int c = 0; c < p->ncores; c++)
        if (core_works(p, c)) {
            char names[256];
            kernel_names(p, c, names, sizeof names);
            CU_ASSERT_STRING_EQUAL(names, want);
        }
}

/* Every core has a stream, it ends in halt, loops are balanced, every
 * token is signalled as often as it is waited for (counting loop trips;
 * a ring transfer's token counts as a signal on its destination core),
 * and the kernels cover the working cores (check_kernels). */
static void check_structure(const chip_config *cfg, const isa_program *p)
{
    CU_ASSERT_EQUAL(p->ncores, cfg->cores);
    CU_ASSERT_STRING_EQUAL(p->config, cfg->name);
    CU_ASSERT_EQUAL(p->lx_bytes, cfg->lx_bytes);
    CU_ASSERT_EQUAL(p->stick_bytes, cfg->stick_bytes);
    int64_t *bals = calloc((size_t)p->ncores * (size_t)cfg->tokens, sizeof *bals);
    CU_ASSERT_FATAL(bals != NULL);
    for (int c = 0; c < p->ncores; c++) {
        const isa_stream *s = &p->cores[c];
        CU_ASSERT_FATAL(s->n > 0);
        CU_ASSERT_EQUAL(s->insns[s->n - 1].op, ISA_OP_HALT);
        int64_t trips[ISA_MAX_LOOPS + 1] = {1}, depth = 0;
        int64_t *bal = bals + (size_t)c * (size_t)cfg->tokens;
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
            } else if ((in->op == ISA_OP_RING_SEND || in->op == ISA_OP_RING_RED) && in->tok != 255) {
                CU_ASSERT_FATAL(in->core >= 0 && in->core < p->ncores && in->tok < cfg->tokens);
                bals[(size_t)in->core * (size_t)cfg->tokens + (size_t)in->tok] += trips[depth];
            }
        }
        CU_ASSERT_EQUAL(depth, 0);
    }
    for (size_t t = 0; t < (size_t)p->ncores * (size_t)cfg->tokens; t++)
        CU_ASSERT_EQUAL(bals[t], 0);
    free(bals);
    check_kernels(p);
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

/* cc_gen_gemm_opts or shapes_gemm. */
typedef isa_program *gemm_fn(const chip_config *cfg, int64_t M, int64_t N, int64_t K, const cc_gen_opts *opts,
                             char *err, size_t errlen);

/* The statistics of the last gemm_with run. */
static sim_stats gemm_stats;

/* Generate C = A @ B with gen and opts (NULL: defaults), run it, check it
 * against OpenBLAS; returns the number of cores that work. */
static int gemm_with(gemm_fn *gen, const char *cfgname, int64_t M, int64_t N, int64_t K, const cc_gen_opts *opts)
{
    chip_config cfg;
    tu_config(cfgname, &cfg);
    char err[256] = "";
    isa_program *p = gen(&cfg, M, N, K, opts, err, sizeof err);
    if (!p)
        fprintf(stderr, "\n  %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    check_structure(&cfg, p);
    int working = cores_working(p);
    check_working_kernels(p, "gemm");
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
    fill_garbage(s, &cfg, tc);
    put_dl16(s, p, ta, a);
    put_dl16(s, p, tb, b);
    sim_stats st;
    int rc = run(s, p, &st);
    gemm_stats = st;
    if (rc == 0) {
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
        /* pt.mm covers the true columns of its tile: no MACs on padding. */
        CU_ASSERT_EQUAL(st.macs, (uint64_t)(M * N * K));
        for (int i = 0; i < cfg.cores; i++)
            CU_ASSERT(st.lx_peak[i] <= cfg.lx_usable_bytes);
        /* C's padding is zero although pt.mm does not write it and LX and
         * C's DRAM held garbage: the hand-shaped GEMM zeroes it in LX (the
         * compiler's leave it as LX held it; nothing reads it). */
        if (gen == shapes_gemm)
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
    return working;
}

static int gemm_on_opts(const char *cfgname, int64_t M, int64_t N, int64_t K, const cc_gen_opts *opts)
{
    return gemm_with(cc_gen_gemm_opts, cfgname, M, N, K, opts);
}

/* On the compiler's GEMM and on the hand-shaped one. */
static void gemm_on(const char *cfgname, int64_t M, int64_t N, int64_t K)
{
    gemm_with(cc_gen_gemm_opts, cfgname, M, N, K, NULL);
    gemm_with(shapes_gemm, cfgname, M, N, K, NULL);
}

/* On both chips. */
static void gemm_on_both(int64_t M, int64_t N, int64_t K)
{
    gemm_on("spyre", M, N, K);
    gemm_on("spyre-4core", M, N, K);
}

static void test_gemm_100x70x130_uneven_edges(void)
{
    gemm_on_both(100, 70, 130);
}

static void test_gemm_64x64x4096_long_k(void)
{
    gemm_on_both(64, 64, 4096);
}

static void test_gemm_8192x64x256_tall_skinny(void)
{
    gemm_on_both(8192, 64, 256);
}

static void test_gemm_tiny_and_single_stick(void)
{
    gemm_on("spyre", 1, 1, 1);
    gemm_on("spyre-4core", 3, 65, 64);
    gemm_on("spyre-4core", 17, 200, 1000);
}

static void test_gemm_1024_cube(void)
{
    gemm_on_both(1024, 1024, 1024);
}

static int cores_with_pt(const isa_program *p)
{
    int n = 0;
    for (int c = 0; c < p->ncores; c++)
        n += has_op(&p->cores[c], ISA_OP_PT_MM);
    return n;
}

/* The hand-shaped GEMM's streams (the compiler's are rolled by its reroll
 * pass, and a K beyond one pt.mm is not supported there yet). */
static void test_gemm_1024_cube_uses_every_core_compactly(void)
{
    const char *names[] = {"spyre", "spyre-4core"};
    for (int i = 0; i < 2; i++) {
        chip_config cfg;
        tu_config(names[i], &cfg);
        char err[256];
        isa_program *p = shapes_gemm(&cfg, 1024, 1024, 1024, NULL, err, sizeof err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(cores_with_pt(p), cfg.cores);
        /* Counted loops and large K chunks: hundreds of instructions per core.
         * On the 32-core chip the panels are shared over the ring, in
         * straight code (one step per row block and K chunk, with the
         * loaders' sends): still well under a thousand. */
        CU_ASSERT(max_stream(p) <= (i == 0 ? 1000u : 400u));
        isa_program_free(p);
    }
    /* A long K runs its middle chunks as a counted loop. */
    chip_config cfg;
    tu_config("spyre", &cfg);
    char err[256];
    isa_program *p = shapes_gemm(&cfg, 64, 64, 1 << 16, NULL, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (int c = 0; c < p->ncores; c++)
        if (has_op(&p->cores[c], ISA_OP_PT_MM))
            CU_ASSERT(has_op(&p->cores[c], ISA_OP_LOOP));
    CU_ASSERT(max_stream(p) <= 100u);
    isa_program_free(p);
}

/* The largest and the smallest K of a program's pt.mm instructions. */
static void pt_k_range(const isa_program *p, int64_t *kmax, int64_t *kmin)
{
    *kmax = 0;
    *kmin = INT64_MAX;
    for (int c = 0; c < p->ncores; c++)
        for (size_t i = 0; i < p->cores[c].n; i++)
            if (p->cores[c].insns[i].op == ISA_OP_PT_MM) {
                int64_t k = p->cores[c].insns[i].k;
                *kmax = k > *kmax ? k : *kmax;
                *kmin = k < *kmin ? k : *kmin;
            }
}

/* The hand-shaped GEMM's K chunk is the largest its cost model does not
 * count as worse.  1024^3
 * on the 32-core chip: 256 rows (512 makes the first load, which the PT
 * waits for, 7% of the estimate longer); on the 4-core chip's small LX a
 * chunk above 64 rows would shrink the blocks and reload A and B more
 * often (8% more in the estimate, 20% more cycles simulated).  A long K
 * goes in chunks of 512, a short one (on one core, 192) in one chunk. */
static void test_gemm_prefers_the_largest_k_chunk(void)
{
    const struct {
        const char *cfg;
        int cores;
        int64_t M, N, K, kmax, kmin;
    } cases[] = {
        /* On the 32-core chip these two share their panels over the ring,
         * whose plan trades the first chunk's way in against the cost of
         * each item (with at most two row blocks per core and items of at
         * least two sticks when K has enough of them): 128 rows. */
        {"spyre", 0, 1024, 1024, 1024, 128, 128},
        {"spyre-4core", 0, 1024, 1024, 1024, 64, 64},
        {"spyre", 0, 64, 64, 4096, 128, 128},
        {"spyre", 1, 300, 300, 192, 192, 192},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        chip_config cfg;
        tu_config(cases[i].cfg, &cfg);
        char err[256] = "";
        cc_gen_opts o = {cases[i].cores, 1};
        isa_program *p = shapes_gemm(&cfg, cases[i].M, cases[i].N, cases[i].K, &o, err, sizeof err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        int64_t kmax, kmin;
        pt_k_range(p, &kmax, &kmin);
        if (kmax != cases[i].kmax || kmin != cases[i].kmin)
            fprintf(stderr, "\n  %s gemm %ldx%ldx%ld: pt.mm k in [%ld, %ld], expected [%ld, %ld]", cases[i].cfg,
                    (long)cases[i].M, (long)cases[i].N, (long)cases[i].K, (long)kmin, (long)kmax,
                    (long)cases[i].kmin, (long)cases[i].kmax);
        CU_ASSERT_EQUAL(kmax, cases[i].kmax);
        CU_ASSERT_EQUAL(kmin, cases[i].kmin);
        isa_program_free(p);
    }
}

static void test_gemm_small_leaves_idle_cores_halting(void)
{
    chip_config cfg;
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
    chip_config cfg;
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
    chip_config cfg;
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

/* Generate y = softmax(x) with opts (NULL: defaults), check its tensors
 * and kernels, run it and check y against a C softmax; the run's
 * statistics go to *out (may be NULL).  Returns the number of cores that
 * work. */
typedef isa_program *softmax_fn(const chip_config *cfg, int64_t rows, int64_t cols, const cc_gen_opts *opts,
                                char *err, size_t errlen); /* cc_gen_softmax_opts or shapes_softmax */

/* The tensors and kernels of a softmax through DRAM (lx_plan=0): the
 * hand-shaped one's two kernels pass the per-row max and sum of
 * exp(x - max) in rmax and rsum (one stick per row); the compiler's
 * kernels (its no_lx_plan) pass every intermediate in a scratch tensor. */
static void check_softmax_in_dram(softmax_fn *gen, const isa_program *p, int64_t rows)
{
    if (gen != shapes_softmax) {
        CU_ASSERT(p->ntensors > 2u);
        for (size_t t = 0; t < p->ntensors; t++)
            if (strcmp(p->tensors[t].name, "x") && strcmp(p->tensors[t].name, "y"))
                CU_ASSERT_EQUAL(p->tensors[t].role, ISA_ROLE_SCRATCH);
        return;
    }
    const isa_tensor *tm = tensor(p, "rmax"), *ts = tensor(p, "rsum");
    CU_ASSERT_EQUAL(tm->role, ISA_ROLE_SCRATCH);
    CU_ASSERT_EQUAL(ts->role, ISA_ROLE_SCRATCH);
    CU_ASSERT(tm->shape[0] == rows && tm->shape[1] == 1 && ts->shape[0] == rows && ts->shape[1] == 1);
    CU_ASSERT_EQUAL(p->ntensors, 4u);
    check_working_kernels(p, "softmax_reduce softmax_normalize");
}

static int softmax_with(softmax_fn *gen, const char *cfgname, int64_t rows, int64_t cols, const cc_gen_opts *opts,
                        sim_stats *out)
{
    chip_config cfg;
    tu_config(cfgname, &cfg);
    char err[256] = "";
    isa_program *p = gen(&cfg, rows, cols, opts, err, sizeof err);
    if (!p)
        fprintf(stderr, "\n  %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    check_structure(&cfg, p);
    CU_ASSERT_STRING_EQUAL(p->graph, "%y = aten._softmax(%x, -1, False)\n");
    const isa_tensor *tx = tensor(p, "x"), *ty = tensor(p, "y");
    CU_ASSERT_EQUAL(tx->role, ISA_ROLE_INPUT);
    CU_ASSERT_EQUAL(ty->role, ISA_ROLE_OUTPUT);
    int in_dram = opts && !opts->lx_plan;
    if (in_dram) {
        check_softmax_in_dram(gen, p, rows);
    } else {
        CU_ASSERT_EQUAL(p->ntensors, 2u);
        check_working_kernels(p, "softmax");
    }
    int working = cores_working(p);

    float *x = malloc((size_t)(rows * cols) * sizeof *x);
    CU_ASSERT_FATAL(x != NULL);
    for (int64_t i = 0; i < rows * cols; i++)
        x[i] = 4.0f * frand() + (float)(i % 7); /* a row max well away from 0 */
    sim *s = sim_create(&cfg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    fill_garbage(s, &cfg, ty);
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
    if (out)
        *out = st;
    sim_destroy(s);
    free(x);
    isa_program_free(p);
    return working;
}

static int softmax_on_opts(const char *cfgname, int64_t rows, int64_t cols, const cc_gen_opts *opts, sim_stats *out)
{
    return softmax_with(cc_gen_softmax_opts, cfgname, rows, cols, opts, out);
}

static void softmax_on(const char *cfgname, int64_t rows, int64_t cols)
{
    softmax_on_opts(cfgname, rows, cols, NULL, NULL);
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

/* Rows of 20000 columns on the 4-core chip's LX: only the hand-shaped
 * softmax (the compiler's row kernel holds more of a row at once). */
static void test_softmax_wide_rows_and_single_row(void)
{
    softmax_with(shapes_softmax, "spyre-4core", 3, 20000, NULL, NULL);
    softmax_on("spyre", 1, 1);
}

static void test_softmax_bad_shapes_fail_with_message(void)
{
    chip_config cfg;
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

/* ---- kernels and options ---- */

/* Generate one of the programs the kernel tests look at: the compiler's
 * GEMMs and softmax, the hand-shaped softmax through DRAM and streams. */
static isa_program *generate(const chip_config *cfg, int which)
{
    char err[256] = "";
    cc_gen_opts in_lx = {0, 1}, in_dram = {0, 0}, three = {3, 0};
    isa_program *p = NULL;
    switch (which) {
    case 0: p = cc_gen_gemm(cfg, 1024, 1024, 1024, err, sizeof err); break;
    case 1: p = cc_gen_gemm(cfg, 100, 70, 130, err, sizeof err); break;
    case 2: p = cc_gen_softmax_opts(cfg, 512, 1024, &in_lx, err, sizeof err); break;
    case 3: p = shapes_softmax(cfg, 512, 1024, &in_dram, err, sizeof err); break;
    case 4: p = shapes_softmax(cfg, 37, 200, &three, err, sizeof err); break;
    case 5: p = shapes_stream(cfg, 1 << 20, 1, NULL, err, sizeof err); break;
    default: p = shapes_stream(cfg, 3 << 20, 0, &three, err, sizeof err); break;
    }
    if (!p)
        fprintf(stderr, "\n  program %d: %s\n", which, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

static void test_kernels_cover_each_working_instruction_once(void)
{
    const char *names[] = {"spyre", "spyre-4core"};
    const char *expect[] = {"gemm", "gemm", "softmax", "softmax_reduce softmax_normalize",
                            "softmax_reduce softmax_normalize", "stream", "stream"};
    for (int i = 0; i < 2; i++) {
        chip_config cfg;
        tu_config(names[i], &cfg);
        for (int which = 0; which < 7; which++) {
            isa_program *p = generate(&cfg, which);
            check_kernels(p);
            CU_ASSERT(p->nkernels >= 1);
            for (int c = 0; c < p->ncores; c++) {
                char got[256];
                kernel_names(p, c, got, sizeof got);
                CU_ASSERT_STRING_EQUAL(got, core_works(p, c) ? expect[which] : "");
            }
            isa_program_free(p);
        }
    }
}

/* spyre dis shows the kernels, and its text assembles to the same kernels. */
static void test_disassembly_of_compiled_kernels_reassembles(void)
{
    chip_config cfg;
    tu_config("spyre-4core", &cfg);
    for (int which = 0; which < 7; which++) {
        isa_program *p = generate(&cfg, which);
        char *text = isa_disassemble(p), err[256] = "";
        CU_ASSERT_PTR_NOT_NULL_FATAL(text);
        CU_ASSERT_PTR_NOT_NULL(strstr(text, "\n.kernel "));
        CU_ASSERT_PTR_NOT_NULL(strstr(text, "\n.endkernel\nhalt\n"));
        isa_program *q = isa_assemble(text, "compiled.s", err, sizeof err);
        if (!q)
            fprintf(stderr, "\n  %s\n", err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(q);
        CU_ASSERT_EQUAL_FATAL(q->nkernels, p->nkernels);
        for (size_t k = 0; k < p->nkernels; k++) {
            CU_ASSERT_STRING_EQUAL(q->kernels[k].name, p->kernels[k].name);
            CU_ASSERT_EQUAL(q->kernels[k].core, p->kernels[k].core);
            CU_ASSERT_EQUAL(q->kernels[k].first, p->kernels[k].first);
            CU_ASSERT_EQUAL(q->kernels[k].last, p->kernels[k].last);
        }
        free(text);
        isa_program_free(p);
        isa_program_free(q);
    }
}

/* On the compiler's softmax and the hand-shaped one (rows of 20000
 * columns on the 4-core chip: only the hand-shaped one). */
static void test_softmax_with_intermediates_in_dram_validates(void)
{
    cc_gen_opts o = {0, 0};
    softmax_fn *gens[] = {cc_gen_softmax_opts, shapes_softmax};
    for (int g = 0; g < 2; g++) {
        softmax_with(gens[g], "spyre", 512, 1024, &o, NULL);
        softmax_with(gens[g], "spyre-4core", 512, 1024, &o, NULL);
        softmax_with(gens[g], "spyre", 37, 200, &o, NULL);
        softmax_with(gens[g], "spyre-4core", 1001, 70, &o, NULL);
        softmax_with(gens[g], "spyre", 1, 1, &o, NULL);
    }
    softmax_with(shapes_softmax, "spyre-4core", 3, 20000, &o, NULL);
}

/* lx_plan=0 moves more bytes and is not faster, on the compiler's softmax
 * and the hand-shaped one.  The hand-shaped one reads x twice (once per
 * kernel) and passes the row maxima and sums (one stick per row each)
 * through DRAM: x + x + maxima + sums read, maxima + sums + y written;
 * e = exp(x - max) never leaves LX. */
static void test_softmax_in_dram_moves_more_bytes_and_is_not_faster(void)
{
    const int64_t rows = 512, cols = 1024;
    const uint64_t tensor_bytes = (uint64_t)rows * (cols / 64) * 128, sum_bytes = (uint64_t)rows * 128;
    const char *names[] = {"spyre", "spyre-4core"};
    const int cores[] = {1, 4, 0};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++) {
            cc_gen_opts in_lx = {cores[k], 1}, in_dram = {cores[k], 0};
            sim_stats *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
            CU_ASSERT_FATAL(a && b);
            for (int g = 0; g < 2; g++) {
                softmax_fn *gen = g ? shapes_softmax : cc_gen_softmax_opts;
                softmax_with(gen, names[i], rows, cols, &in_lx, a);
                softmax_with(gen, names[i], rows, cols, &in_dram, b);
                CU_ASSERT_EQUAL(a->dram_bytes_read, tensor_bytes);
                CU_ASSERT_EQUAL(a->dram_bytes_written, tensor_bytes);
                if (gen == shapes_softmax) {
                    CU_ASSERT_EQUAL(b->dram_bytes_read, 2 * tensor_bytes + 2 * sum_bytes);
                    CU_ASSERT_EQUAL(b->dram_bytes_written, tensor_bytes + 2 * sum_bytes);
                }
                CU_ASSERT(b->dram_bytes_read + b->dram_bytes_written > a->dram_bytes_read + a->dram_bytes_written);
                CU_ASSERT(b->cycles >= a->cycles);
                CU_ASSERT(a->cycles > 0);
            }
            free(a);
            free(b);
        }
}

/* Idle cores of a program hold only halt, after `bars` bars (-1: any
 * number of bars or fences, one between each two kernels). */
static void check_idle_cores(const isa_program *p, int bars)
{
    for (int c = 0; c < p->ncores; c++) {
        if (core_works(p, c))
            continue;
        const isa_stream *s = &p->cores[c];
        if (bars >= 0)
            CU_ASSERT_EQUAL_FATAL(s->n, (size_t)bars + 1);
        for (size_t i = 0; i + 1 < s->n; i++)
            CU_ASSERT(s->insns[i].op == ISA_OP_BAR || (bars < 0 && s->insns[i].op == ISA_OP_FENCE));
        CU_ASSERT_EQUAL(s->insns[s->n - 1].op, ISA_OP_HALT);
    }
}

/* On the compiler's kernels and the hand-shaped ones; without LX planning
 * the hand-shaped softmax has one bar between its two kernels, the
 * compiler's one bar or fence between each two of its kernels. */
static void test_core_limit_uses_exactly_that_many_cores(void)
{
    const int limits[] = {1, 4};
    for (int i = 0; i < 2; i++)
        for (int lx = 0; lx < 2; lx++) {
            cc_gen_opts o = {limits[i], lx};
            for (int g = 0; g < 2; g++) {
                softmax_fn *gen = g ? shapes_softmax : cc_gen_softmax_opts;
                CU_ASSERT_EQUAL(softmax_with(gen, "spyre", 512, 1024, &o, NULL), limits[i]);
                CU_ASSERT_EQUAL(softmax_with(gen, "spyre-4core", 100, 70, &o, NULL), limits[i]);
            }
            chip_config cfg;
            tu_config("spyre", &cfg);
            char err[256];
            isa_program *p = cc_gen_softmax_opts(&cfg, 512, 1024, &o, err, sizeof err);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            check_idle_cores(p, lx ? 0 : -1);
            isa_program_free(p);
            p = shapes_softmax(&cfg, 512, 1024, &o, err, sizeof err);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            check_idle_cores(p, !lx);
            isa_program_free(p);
            p = cc_gen_gemm_opts(&cfg, 256, 256, 256, &o, err, sizeof err);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            CU_ASSERT_EQUAL(cores_with_pt(p), limits[i]);
            check_idle_cores(p, 0);
            isa_program_free(p);
        }
    cc_gen_opts one = {1, 1}, four = {4, 1};
    CU_ASSERT_EQUAL(gemm_on_opts("spyre", 256, 256, 256, &one), 1);
    CU_ASSERT_EQUAL(gemm_on_opts("spyre", 256, 256, 256, &four), 4);
    CU_ASSERT_EQUAL(gemm_on_opts("spyre-4core", 100, 70, 130, &one), 1);
    CU_ASSERT_EQUAL(gemm_with(shapes_gemm, "spyre", 256, 256, 256, &one), 1);
    CU_ASSERT_EQUAL(gemm_with(shapes_gemm, "spyre", 256, 256, 256, &four), 4);
    CU_ASSERT_EQUAL(gemm_with(shapes_gemm, "spyre-4core", 100, 70, 130, &one), 1);
}

/* Generate the stream program, check its tensors and kernels, run it with
 * random bytes in "in": every byte read once, and with write_back written
 * once to the same place of "out". */
static void stream_on(const char *cfgname, uint64_t bytes, int write_back, int cores)
{
    chip_config cfg;
    tu_config(cfgname, &cfg);
    cc_gen_opts o = {cores, 1};
    char err[256] = "";
    isa_program *p = shapes_stream(&cfg, bytes, write_back, &o, err, sizeof err);
    if (!p)
        fprintf(stderr, "\n  %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    check_structure(&cfg, p);
    const int n = cores ? cores : cfg.cores;
    const uint64_t total = bytes * (uint64_t)n;
    CU_ASSERT_EQUAL(cores_working(p), n);
    check_idle_cores(p, 0);
    const isa_tensor *ti = tensor(p, "in"), *to = NULL;
    CU_ASSERT_EQUAL(ti->role, ISA_ROLE_INPUT);
    CU_ASSERT_EQUAL(ti->bytes, total);
    if (write_back) {
        CU_ASSERT_PTR_NOT_NULL_FATAL(p->graph);
        CU_ASSERT_STRING_EQUAL(p->graph, "%out = aten.clone(%in)\n");
        to = tensor(p, "out");
        CU_ASSERT_EQUAL(to->role, ISA_ROLE_OUTPUT);
        CU_ASSERT_EQUAL(to->bytes, total);
        CU_ASSERT(to->dram_off >= ti->dram_off + ti->bytes);
    } else {
        CU_ASSERT_PTR_NULL(p->graph);
        CU_ASSERT_EQUAL(p->ntensors, 1u);
    }

    uint8_t *in = malloc(total), *out = malloc(total);
    CU_ASSERT_FATAL(in && out);
    for (uint64_t i = 0; i < total; i++) {
        rng_state = rng_state * 1664525u + 1013904223u;
        in[i] = (uint8_t)(rng_state >> 24);
    }
    sim *s = sim_create(&cfg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(sim_dram_write(s, DRAM_BASE + ti->dram_off, in, total), 0);
    sim_stats *st = calloc(1, sizeof *st);
    CU_ASSERT_FATAL(st != NULL);
    if (run(s, p, st) == 0) {
        CU_ASSERT_EQUAL(st->dram_bytes_read, total);
        CU_ASSERT_EQUAL(st->dram_bytes_written, write_back ? total : 0);
        CU_ASSERT_EQUAL(st->insns > 0, 1);
        if (write_back) {
            CU_ASSERT_EQUAL(sim_dram_read(s, DRAM_BASE + to->dram_off, out, total), 0);
            CU_ASSERT_EQUAL(memcmp(in, out, total), 0);
        }
    }
    free(st);
    sim_destroy(s);
    free(in);
    free(out);
    isa_program_free(p);
}

static void test_stream_with_write_back_copies_its_input_exactly(void)
{
    stream_on("spyre-4core", 1 << 20, 1, 0);
    stream_on("spyre-4core", 300 * 1024 + 128, 1, 3); /* chunks that do not divide the slice */
    stream_on("spyre", 1 << 20, 1, 0);
    stream_on("spyre", 128, 1, 1);
}

static void test_stream_without_write_back_only_reads(void)
{
    stream_on("spyre-4core", 1 << 20, 0, 0);
    stream_on("spyre", 640 * 1024, 0, 4);
}

static void test_bad_options_fail_with_message(void)
{
    chip_config cfg;
    tu_config("spyre-4core", &cfg);
    const cc_gen_opts bad[] = {{-1, 1}, {5, 1}, {0, 2}, {0, -1}};
    const char *want[] = {"cores=-1", "cores=5", "lx_plan=2", "lx_plan=-1"};
    for (int i = 0; i < 4; i++) {
        char err[256] = "";
        CU_ASSERT_PTR_NULL(cc_gen_gemm_opts(&cfg, 64, 64, 64, &bad[i], err, sizeof err));
        CU_ASSERT(strstr(err, "gemm") && strstr(err, want[i]));
        err[0] = 0;
        CU_ASSERT_PTR_NULL(cc_gen_softmax_opts(&cfg, 64, 64, &bad[i], err, sizeof err));
        CU_ASSERT(strstr(err, "softmax") && strstr(err, want[i]));
        err[0] = 0;
        CU_ASSERT_PTR_NULL(shapes_stream(&cfg, 4096, 1, &bad[i], err, sizeof err));
        CU_ASSERT(strstr(err, "stream") && strstr(err, want[i]));
    }
    char err[256] = "";
    CU_ASSERT_PTR_NULL(shapes_stream(&cfg, 0, 1, NULL, err, sizeof err));
    CU_ASSERT(strstr(err, "multiple of the 128-byte stick") != NULL);
    err[0] = 0;
    CU_ASSERT_PTR_NULL(shapes_stream(&cfg, 1000, 0, NULL, err, sizeof err));
    CU_ASSERT(strstr(err, "multiple of the 128-byte stick") != NULL);
    err[0] = 0;
    CU_ASSERT_PTR_NULL(shapes_stream(&cfg, 256ull << 20, 1, NULL, err, sizeof err)); /* 2 GB of a 1 GB DRAM */
    CU_ASSERT(strstr(err, "DRAM") != NULL);
}

/* ---- the emitters' checks ---- */

/* The emitters check what they emit as isa_check does: a DMA with a count
 * or stride out of its field at any of its four loop levels, or a ring
 * transfer with one at either of its two, fails to emit, naming the
 * operand; the same in range is emitted. */
static void test_emitters_check_every_loop_level(void)
{
    chip_config cfg;
    tu_config("spyre-4core", &cfg);
    static const struct {
        int ring, level;
        int64_t n, ds;
        const char *want; /* NULL: in range, emitted */
    } cases[] = {
        {0, 3, 65535, -(1ll << 31), NULL}, {0, 2, 65536, 0, "operand n2"}, {0, 3, 0, 0, "operand n3"},
        {0, 3, 1, 1ll << 31, "operand ds3"}, {1, 1, 65535, (1ll << 31) - 1, NULL}, {1, 1, 65536, 0, "operand n1"},
        {1, 0, 1, -(1ll << 31) - 1, "operand ds0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        isa_program *p = isa_program_new(cfg.cores);
        char err[256] = "";
        cc_emit e;
        cc_emit_begin(&e, &cfg, p, 0, err, sizeof err);
        cc_kernel_begin(&e, "k");
        cc_dma_shape sh = {1, cases[i].ring ? 2 : 4, {1, 1, 1, 1}, {0}, {0}};
        sh.n[cases[i].level] = cases[i].n;
        sh.ds[cases[i].level] = cases[i].ds;
        if (cases[i].ring)
            cc_emit_ring(&e, ISA_OP_RING_SEND, 1, ISA_TOK_NONE, cc_abs(0), cc_abs(0), &sh);
        else
            cc_emit_dma(&e, ISA_OP_DMA_LD, cc_abs(0), cc_abs(0), &sh);
        CU_ASSERT_EQUAL(cc_emit_failed(&e), cases[i].want != NULL);
        CU_ASSERT_EQUAL(p->cores[0].n, cases[i].want ? 0u : 1u);
        if (cases[i].want && !strstr(err, cases[i].want)) {
            fprintf(stderr, "case %zu: %s\n", i, err);
            CU_FAIL("the message names the operand");
        }
        isa_program_free(p);
    }
}

/* ---- GEMM operand panels shared over the ring ---- */

/* MACs done / what every PT of every core could do in the run's cycles. */
static double mac_utilization(const chip_config *cfg, const sim_stats *st)
{
    double peak = st->cycles * cfg->cores * cfg->corelets * cfg->pt_rows * cfg->pt_cols * cfg->pt_lanes;
    return peak > 0 ? (double)st->macs / peak : 0;
}

/* 1024^3 on the 32-core chip: every core works, the result validates, A
 * and B are read from DRAM once (4 MB; it was 24 MB with every core loading
 * its own panels), C written once, and the MAC rate is 4x what it was
 * (0.105 before, 0.438 measured now; the bound is the DRAM traffic and the
 * first block's wait for all of B, see gen_gemm.c). */
static void test_gemm_1024_cube_shares_panels_over_the_ring(void)
{
    chip_config cfg;
    tu_config("spyre", &cfg);
    const uint64_t operands = 2ull * 1024 * 1024 * 2, result = 1024ull * 1024 * 2;
    CU_ASSERT_EQUAL(gemm_on_opts("spyre", 1024, 1024, 1024, NULL), cfg.cores);
    CU_ASSERT(gemm_stats.dram_bytes_read <= operands + operands / 20);
    CU_ASSERT_EQUAL(gemm_stats.dram_bytes_written, result);
    double u = mac_utilization(&cfg, &gemm_stats);
    if (u < 0.43)
        fprintf(stderr, "\n  gemm 1024^3 mac_utilization %.4f", u);
    CU_ASSERT(u >= 0.43);
    char err[256] = "";
    isa_program *p = cc_gen_gemm(&cfg, 1024, 1024, 1024, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    int senders = 0;
    for (int c = 0; c < p->ncores; c++)
        senders += has_op(&p->cores[c], ISA_OP_RING_SEND);
    CU_ASSERT_EQUAL(senders, cfg.cores);
    isa_program_free(p);
}

/* The hand-shaped GEMM's odd shapes on the 32-core chip read their
 * operands about once and are faster than with private panels (cycles
 * before: 6210, 89913, 68312). */
static void test_gemm_odd_shapes_share_panels(void)
{
    const struct {
        int64_t M, N, K;
        double before;
    } cases[] = {{100, 70, 130, 6210}, {64, 64, 4096, 89913}, {8192, 64, 256, 68312}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t M = cases[i].M, N = cases[i].N, K = cases[i].K;
        uint64_t operands = (uint64_t)(M * ((K + 63) / 64) + K * ((N + 63) / 64)) * 128;
        gemm_with(shapes_gemm, "spyre", M, N, K, NULL);
        CU_ASSERT(gemm_stats.dram_bytes_read <= operands + operands / 20);
        CU_ASSERT(gemm_stats.cycles < cases[i].before);
        CU_ASSERT(gemm_stats.macs == (uint64_t)(M * N * K));
    }
}

/* be_fmt, the plans' notes' formatter (no printf: be_diag.c), puts what
 * snprintf puts: %.0f's ties to even, -0, past 2^53 (through vsnprintf),
 * every cut of a line of all its conversions, a format it does not know. */
static void test_the_notes_formatter_puts_what_snprintf_puts(void)
{
    const double xs[] = {0, -0.0, -0.4, 0.5, 1.5, 2.5, -2.5, 3.4999, 39803.5, 1e15 + 0.5, 9007199254740993.0, -1e300, INFINITY};
    char a[64], b[64];
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        snprintf(a, sizeof a, "estimate %.0f cycles", xs[i]);
        be_fmt(b, sizeof b, "estimate %.0f cycles", xs[i]);
        CU_ASSERT_STRING_EQUAL(a, b);
    }
    for (size_t cap = 0; cap < sizeof a; cap++) {
        memset(a, 'x', sizeof a);
        memset(b, 'x', sizeof b);
        snprintf(a, cap, "k %" PRId64 " in %s%%%d %lld", (int64_t)-12345, "abc", -7, (long long)INT64_MIN);
        be_fmt(b, cap, "k %" PRId64 " in %s%%%d %lld", (int64_t)-12345, "abc", -7, (long long)INT64_MIN);
        CU_ASSERT(!memcmp(a, b, sizeof a));
    }
    snprintf(a, sizeof a, "%5.2f|%x", 1.25, 255);
    be_fmt(b, sizeof b, "%5.2f|%x", 1.25, 255);
    CU_ASSERT_STRING_EQUAL(a, b);
}

int main(void)
{
    static const tu_test tests[] = {
        {"the notes' formatter puts what snprintf puts", test_the_notes_formatter_puts_what_snprintf_puts},
        {"gemm 100x70x130: uneven edges on both configs", test_gemm_100x70x130_uneven_edges},
        {"gemm 64x64x4096: long K in a loop", test_gemm_64x64x4096_long_k},
        {"gemm 8192x64x256: tall and skinny", test_gemm_8192x64x256_tall_skinny},
        {"gemm tiny shapes and single sticks", test_gemm_tiny_and_single_stick},
        {"gemm 1024^3 computes the product on both configs", test_gemm_1024_cube},
        {"hand-shaped gemm 1024^3 uses every core with compact streams", test_gemm_1024_cube_uses_every_core_compactly},
        {"hand-shaped gemm prefers the largest K chunk its cost model does not penalise", test_gemm_prefers_the_largest_k_chunk},
        {"gemm too small for the chip leaves idle cores halting", test_gemm_small_leaves_idle_cores_halting},
        {"gemm bad shapes fail with a message", test_gemm_bad_shapes_fail_with_message},
        {"budget errors name the resource (LX, tokens)", test_budget_errors_name_the_resource},
        {"softmax 37x200 on both configs", test_softmax_37x200},
        {"softmax 512x1024 and uneven chunks", test_softmax_512x1024_loops},
        {"softmax wide rows and a single element", test_softmax_wide_rows_and_single_row},
        {"softmax bad shapes fail with a message", test_softmax_bad_shapes_fail_with_message},
        {"kernels cover each working instruction once, halt in none",
         test_kernels_cover_each_working_instruction_once},
        {"the disassembly of compiled kernels reassembles", test_disassembly_of_compiled_kernels_reassembles},
        {"softmax with intermediates in DRAM validates on both configs",
         test_softmax_with_intermediates_in_dram_validates},
        {"softmax in DRAM moves more bytes and is not faster", test_softmax_in_dram_moves_more_bytes_and_is_not_faster},
        {"a core limit uses exactly that many cores", test_core_limit_uses_exactly_that_many_cores},
        {"stream with write-back copies its input exactly", test_stream_with_write_back_copies_its_input_exactly},
        {"stream without write-back only reads", test_stream_without_write_back_only_reads},
        {"bad options fail with a message", test_bad_options_fail_with_message},
        {"the emitters check every loop level", test_emitters_check_every_loop_level},
        {"gemm 1024^3 shares operand panels over the ring", test_gemm_1024_cube_shares_panels_over_the_ring},
        {"hand-shaped gemm odd shapes share panels and read operands once", test_gemm_odd_shapes_share_panels},
        {NULL, NULL},
    };
    return tu_run("compiler", tests);
}
