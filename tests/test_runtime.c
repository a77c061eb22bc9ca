/* test_runtime.c: the runtime: the DRAM allocator, program loading, the
 * host <-> device layout conversion (checked byte by byte in device DRAM),
 * inputs (seeded random data, files), validation tolerances, running a
 * small hand-built program end to end on the simulator, and where tensors
 * live (weights resident across launches, activations per launch,
 * eviction on a small DRAM). */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cc.h"
#include "rt.h"
#include "rt_internal.h" /* rt_compare_values: a check line from values and tolerances */
#include "testutil.h"

#define CFG4 SPYRE_SOURCE_DIR "/chip/configs/spyre-4core.cfg"
#define GB (1024ull * 1024 * 1024)
#define U 0x1p-10 /* DL16 unit roundoff */

static char err[1024];

/* A device of the configuration file cfg, asserting it opens. */
static rt_device *open_cfg(const char *cfg)
{
    err[0] = 0;
    rt_device *dev = rt_open(cfg, err, sizeof err);
    if (!dev)
        fprintf(stderr, "rt_open: %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    return dev;
}

static rt_device *open4(void)
{
    return open_cfg(CFG4);
}

/* The tensor name of prog, read into back, is the n values of src rounded
 * to DL16. */
static void expect_dl16_of(rt_program *prog, const char *name, const float *src, int n, float *back)
{
    CU_ASSERT_EQUAL(rt_read_tensor(prog, name, back, err, sizeof err), 0);
    int same = 0;
    for (int i = 0; i < n; i++)
        same += back[i] == isa_dl16_round(src[i]);
    CU_ASSERT_EQUAL(same, n);
}

/* ---- building programs in memory ---- */

typedef struct {
    const char *name;
    isa_role role;
    isa_dtype_dev dt;
    int rank;
    int64_t shape[ISA_MAX_RANK];
    int stick_dim; /* -1: the last dim */
} tspec;

/* A one-core program whose tensors follow each other in DRAM, each
 * starting on a 128-byte boundary. */
static isa_program *build(const tspec *ts, int n, const char *graph)
{
    isa_program *p = isa_program_new(1);
    snprintf(p->config, sizeof p->config, "spyre-4core");
    p->lx_bytes = 262144;
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        int k = isa_program_add_tensor(p, ts[i].name, ts[i].role, ISA_HT_F32, ts[i].dt, ts[i].rank,
                                       ts[i].shape, off);
        isa_tensor *t = &p->tensors[k];
        if (ts[i].stick_dim >= 0)
            t->stick_dim = ts[i].stick_dim;
        t->bytes = isa_tensor_device_bytes(t, p->stick_bytes);
        off += (t->bytes + 127) / 128 * 128;
    }
    p->dram_bytes = off ? off : 128;
    p->graph = graph ? strdup(graph) : NULL;
    return p;
}

static rt_program *load(rt_device *dev, isa_program *p)
{
    err[0] = 0;
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    if (!prog)
        fprintf(stderr, "rt_load_program: %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    return prog;
}

static float *randoms(uint64_t seed, const char *name, size_t n, float scale)
{
    float *v = malloc(n * sizeof *v);
    rt_random_uniform(seed, name, v, n);
    for (size_t i = 0; i < n; i++)
        v[i] *= scale;
    return v;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* ---- launches at several refresh phases ---- */

/* rt_launch_phases' means are those of launches made one by one at
 * phases k tREFI / 4 (a 512^3 GEMM on every core of spyre-4core, whose
 * reads meet the refresh at some phases but not others, so a mean that
 * took phase 0 only would differ), and it leaves the device's phase as
 * it found it. */
static void test_launch_phases_means_the_launches_at_each_phase(void)
{
    rt_device *dev = open4();
    const chip_config *cfg = rt_config(dev);
    cc_gen_opts every = {cfg->cores, 1};
    isa_program *p = cc_gen_gemm_opts(cfg, 512, 512, 512, &every, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    rt_program *prog = load(dev, p);
    sim_options o = {.values = 0, .refresh_phase_ns = 123};
    sim_set_options(rt_sim(dev), &o);
    rt_run_result *res = malloc(sizeof *res);
    double cycles[4], span0[4];
    for (int k = 0; k < 4; k++) {
        o.refresh_phase_ns = k * cfg->dram_trefi_ns / 4;
        sim_set_options(rt_sim(dev), &o);
        CU_ASSERT_EQUAL_FATAL(rt_launch(prog, res), 0);
        cycles[k] = res->stats.cycles;
        span0[k] = res->stats.kernels[0].core_span;
    }
    o.refresh_phase_ns = 123;
    sim_set_options(rt_sim(dev), &o);
    rt_phase_means m;
    CU_ASSERT_EQUAL_FATAL(rt_launch_phases(prog, 4, res, &m), 0);
    CU_ASSERT_EQUAL(m.phases, 4);
    CU_ASSERT_EQUAL(m.nkernels, res->stats.nkernels);
    CU_ASSERT_DOUBLE_EQUAL(m.cycles, (cycles[0] + cycles[1] + cycles[2] + cycles[3]) / 4, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(m.core_span[0], (span0[0] + span0[1] + span0[2] + span0[3]) / 4, 1e-6);
    CU_ASSERT(m.cycles != cycles[0]); /* else this test could not tell a mean from phase 0 */
    CU_ASSERT_EQUAL(sim_get_options(rt_sim(dev))->refresh_phase_ns, 123);
    rt_phase_means_free(&m);
    free(res);
    rt_unload(prog);
    rt_close(dev);
}

/* ---- allocator ---- */

static void test_alloc_aligns_every_block_to_dram_align(void)
{
    rt_device *dev = open4();
    CU_ASSERT_EQUAL(rt_config(dev)->dram_align, 128);
    uint64_t a, b, c;
    CU_ASSERT_EQUAL(rt_alloc(dev, 1, &a, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_alloc(dev, 129, &b, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_alloc(dev, 100, &c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(a % 128, 0);
    CU_ASSERT_EQUAL(b % 128, 0);
    CU_ASSERT_EQUAL(c % 128, 0);
    /* Sizes round up to the alignment: first fit packs them back to back. */
    CU_ASSERT_EQUAL(a, 0);
    CU_ASSERT_EQUAL(b, 128);
    CU_ASSERT_EQUAL(c, 384);
    uint64_t freeb, largest;
    rt_dram_usage(dev, &freeb, &largest);
    CU_ASSERT_EQUAL(freeb, GB - 512);
    CU_ASSERT_EQUAL(largest, GB - 512);
    rt_close(dev);
}

static void test_alloc_reuses_a_freed_block(void)
{
    rt_device *dev = open4();
    uint64_t a, b, c;
    CU_ASSERT_EQUAL(rt_alloc(dev, 4096, &a, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_alloc(dev, 4096, &b, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_free(dev, a), 0);
    CU_ASSERT_EQUAL(rt_alloc(dev, 1000, &c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(c, a); /* first fit takes the hole before b */
    CU_ASSERT_EQUAL(rt_free(dev, c), 0);
    CU_ASSERT_EQUAL(rt_free(dev, c), -1); /* double free is refused */
    CU_ASSERT_EQUAL(rt_free(dev, 12345), -1); /* not a block */
    CU_ASSERT_EQUAL(rt_alloc(dev, 0, &c, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "0 bytes"));
    rt_close(dev);
}

static void test_alloc_coalesces_free_neighbours(void)
{
    rt_device *dev = open4();
    uint64_t blk[4], freeb, largest;
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(rt_alloc(dev, 256 << 20, &blk[i], err, sizeof err), 0);
    rt_dram_usage(dev, &freeb, &largest);
    CU_ASSERT_EQUAL(freeb, 0);
    /* Free 0 and 2, then 1: the three merge into one 768 MiB block. */
    CU_ASSERT_EQUAL(rt_free(dev, blk[0]), 0);
    CU_ASSERT_EQUAL(rt_free(dev, blk[2]), 0);
    rt_dram_usage(dev, &freeb, &largest);
    CU_ASSERT_EQUAL(freeb, 512ull << 20);
    CU_ASSERT_EQUAL(largest, 256ull << 20);
    uint64_t big;
    CU_ASSERT_EQUAL(rt_alloc(dev, 300 << 20, &big, err, sizeof err), -1);
    CU_ASSERT_EQUAL(rt_free(dev, blk[1]), 0);
    rt_dram_usage(dev, &freeb, &largest);
    CU_ASSERT_EQUAL(largest, 768ull << 20);
    CU_ASSERT_EQUAL(rt_alloc(dev, 700 << 20, &big, err, sizeof err), 0);
    CU_ASSERT_EQUAL(big, 0);
    /* Everything freed: the whole DRAM is one block again. */
    CU_ASSERT_EQUAL(rt_free(dev, big), 0);
    CU_ASSERT_EQUAL(rt_free(dev, blk[3]), 0);
    rt_dram_usage(dev, &freeb, &largest);
    CU_ASSERT_EQUAL(freeb, GB);
    CU_ASSERT_EQUAL(largest, GB);
    CU_ASSERT_EQUAL(rt_alloc(dev, GB, &big, err, sizeof err), 0);
    rt_close(dev);
}

static void test_alloc_exhaustion_names_request_and_largest_block(void)
{
    rt_device *dev = open4();
    uint64_t a, b;
    CU_ASSERT_EQUAL(rt_alloc(dev, 2 * GB, &a, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "2147483648 bytes"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "largest free block 1073741824 bytes"));
    CU_ASSERT_EQUAL(rt_alloc(dev, 600ull << 20, &a, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_alloc(dev, 600ull << 20, &b, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot allocate 629145600 bytes"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "largest free block 444596224 bytes"));
    rt_close(dev);
}

/* ---- loading ---- */

static void test_load_refuses_programs_that_do_not_fit_the_chip(void)
{
    rt_device *dev = open4();
    tspec ts[] = {{"X", ISA_ROLE_INPUT, ISA_T_DL16, 2, {4, 64}, -1}};
    isa_program *p = isa_program_new(8);
    p->lx_bytes = 262144;
    snprintf(p->config, sizeof p->config, "spyre");
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "8 cores"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "4 cores"));

    p = build(ts, 1, NULL);
    p->lx_bytes = 2097152;
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "2097152 bytes of LX"));

    p = build(ts, 1, NULL);
    p->stick_bytes = 64;
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "64-byte sticks"));

    p = build(ts, 1, NULL);
    p->tensors[0].bytes = 100;
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "tensor X: records 100 device bytes"));

    p = build(ts, 1, NULL);
    p->dram_bytes = 2 * GB;
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "DRAM"));

    p = build(ts, 1, NULL);
    p->tensors[0].const_off = 0; /* no constant bytes */
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "constant data"));

    uint64_t freeb;
    rt_dram_usage(dev, &freeb, NULL);
    CU_ASSERT_EQUAL(freeb, GB); /* nothing leaked on device */
    CU_ASSERT_PTR_NULL(rt_load(dev, "/nonexistent/prog.elf", err, sizeof err));
    CU_ASSERT_NOT_EQUAL(err[0], 0);
    rt_close(dev);
}

static void test_load_writes_constant_data_in_device_layout(void)
{
    rt_device *dev = open4();
    tspec ts[] = {{"W", ISA_ROLE_WEIGHT, ISA_T_DL16, 2, {10, 70}, -1},
                  {"X", ISA_ROLE_INPUT, ISA_T_DL16, 2, {10, 70}, -1}};
    isa_program *p = build(ts, 2, NULL);
    float *w = randoms(1, "W", 700, 1);
    isa_tensor *t = &p->tensors[0];
    p->consts = calloc(1, t->bytes);
    p->nconsts = t->bytes;
    isa_layout_pack(t, p->stick_bytes, w, p->consts);
    t->const_off = 0;
    rt_program *prog = load(dev, p);
    float back[700];
    expect_dl16_of(prog, "W", w, 700, back);
    int64_t n;
    const float *h = rt_host_tensor(prog, "W", &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    CU_ASSERT_EQUAL(n, 700);
    CU_ASSERT_EQUAL(memcmp(h, back, sizeof back), 0);
    /* Filling inputs leaves constant tensors alone. */
    CU_ASSERT_EQUAL(rt_fill_inputs(prog, 9, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "W", back, err, sizeof err), 0);
    CU_ASSERT_EQUAL(memcmp(h, back, sizeof back), 0);
    CU_ASSERT_PTR_NOT_NULL(rt_host_tensor(prog, "X", NULL));
    free(w);
    rt_close(dev); /* also unloads prog */
}

static void test_load_zeroes_outputs_left_by_an_earlier_program(void)
{
    rt_device *dev = open4();
    tspec ts[] = {{"Y", ISA_ROLE_OUTPUT, ISA_T_F32, 1, {40}, -1}};
    rt_program *prog = load(dev, build(ts, 1, NULL));
    float ones[40], back[40];
    for (int i = 0; i < 40; i++)
        ones[i] = 1;
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "Y", ones, ISA_HT_F32, err, sizeof err), 0);
    uint64_t base = rt_program_base(prog);
    rt_unload(prog);
    prog = load(dev, build(ts, 1, NULL));
    CU_ASSERT_EQUAL(rt_program_base(prog), base);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "Y", back, err, sizeof err), 0);
    int zeros = 0;
    for (int i = 0; i < 40; i++)
        zeros += back[i] == 0;
    CU_ASSERT_EQUAL(zeros, 40);
    rt_close(dev);
}

/* ---- layout ---- */

/* Write random values to one tensor of the given spec, over DRAM dirtied
 * with 0xab bytes, then check: the read-back equals the values rounded to
 * the device type; every element sits at the byte offset the layout gives
 * (isa_layout_offset), decoded from raw DRAM; every other byte is zero. */
static void round_trip(const tspec *ts, isa_host_dtype hdt)
{
    rt_device *dev = open4();
    rt_program *prog = load(dev, build(ts, 1, NULL));
    const isa_tensor *t = &rt_program_isa(prog)->tensors[0];
    size_t n = (size_t)rt_tensor_elems(t);
    uint64_t addr = rt_program_base(prog) + t->dram_off;
    uint8_t *raw = malloc(t->bytes + 1);
    memset(raw, 0xab, t->bytes);
    CU_ASSERT_EQUAL(sim_dram_write(rt_sim(dev), addr, raw, t->bytes), 0);

    float *v = randoms(5, ts->name, n, 3);
    uint16_t *h16 = malloc(n * sizeof *h16 + 1);
    for (size_t i = 0; i < n && hdt != ISA_HT_F32; i++) { /* the values the host really has */
        h16[i] = hdt == ISA_HT_F16 ? isa_f16_from_f32(v[i]) : isa_bf16_from_f32(v[i]);
        v[i] = hdt == ISA_HT_F16 ? isa_f16_to_f32(h16[i]) : isa_bf16_to_f32(h16[i]);
    }
    CU_ASSERT_EQUAL(rt_write_tensor(prog, ts->name, hdt != ISA_HT_F32 ? (void *)h16 : (void *)v, hdt, err,
                                    sizeof err), 0);
    float *back = malloc(n * sizeof *back + 1);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, ts->name, back, err, sizeof err), 0);
    size_t same = 0;
    for (size_t i = 0; i < n; i++)
        same += back[i] == (t->dev_dtype == ISA_T_F32 ? v[i] : isa_dl16_round(v[i]));
    CU_ASSERT_EQUAL(same, n);
    int64_t cnt;
    const float *host = rt_host_tensor(prog, ts->name, &cnt);
    CU_ASSERT_EQUAL((size_t)cnt, n);
    CU_ASSERT(host && memcmp(host, v, n * sizeof *v) == 0);

    /* Raw device bytes. */
    CU_ASSERT_EQUAL(sim_dram_read(rt_sim(dev), addr, raw, t->bytes), 0);
    uint8_t *used = calloc(1, t->bytes + 1);
    int64_t idx[ISA_MAX_RANK] = {0};
    size_t at_offset = 0, es = t->dev_dtype == ISA_T_F32 ? 4 : 2;
    for (size_t i = 0; i < n; i++) {
        uint64_t off = isa_layout_offset(t, 128, idx);
        CU_ASSERT_FATAL(off + es <= t->bytes);
        float got;
        if (es == 4) {
            memcpy(&got, raw + off, 4);
        } else {
            uint16_t hb = (uint16_t)(raw[off] | raw[off + 1] << 8);
            got = isa_dl16_to_f32(hb);
        }
        at_offset += got == back[i];
        memset(used + off, 1, es);
        for (int d = t->rank - 1; d >= 0; d--) { /* row-major increment */
            if (++idx[d] < t->shape[d])
                break;
            idx[d] = 0;
        }
    }
    CU_ASSERT_EQUAL(at_offset, n);
    size_t padding = 0, padding_zero = 0, elems_used = 0;
    for (uint64_t b = 0; b < t->bytes; b++) {
        elems_used += used[b];
        if (!used[b]) {
            padding++;
            padding_zero += raw[b] == 0;
        }
    }
    CU_ASSERT_EQUAL(elems_used, n * es); /* no two elements share bytes */
    CU_ASSERT_EQUAL(padding_zero, padding);
    free(used);
    free(back);
    free(h16);
    free(v);
    free(raw);
    rt_close(dev);
}

static void test_layout_round_trip_2d_not_multiple_of_64(void)
{
    tspec a = {"A", ISA_ROLE_INPUT, ISA_T_DL16, 2, {100, 70}, -1};
    round_trip(&a, ISA_HT_F32);
    tspec b = {"B", ISA_ROLE_INPUT, ISA_T_F32, 2, {33, 45}, -1};
    round_trip(&b, ISA_HT_F32);
}

static void test_layout_round_trip_1d_and_scalar(void)
{
    tspec a = {"V", ISA_ROLE_INPUT, ISA_T_DL16, 1, {1000}, -1};
    round_trip(&a, ISA_HT_F32);
    tspec b = {"s", ISA_ROLE_INPUT, ISA_T_DL16, 1, {1}, -1};
    round_trip(&b, ISA_HT_F32);
    tspec c = {"scalar", ISA_ROLE_INPUT, ISA_T_F32, 0, {0}, -1};
    round_trip(&c, ISA_HT_F32);
}

static void test_layout_round_trip_3d_any_stick_dim(void)
{
    tspec a = {"T", ISA_ROLE_INPUT, ISA_T_DL16, 3, {3, 5, 130}, -1};
    round_trip(&a, ISA_HT_F32);
    tspec b = {"T0", ISA_ROLE_INPUT, ISA_T_DL16, 3, {130, 3, 5}, 0};
    round_trip(&b, ISA_HT_F32);
    tspec c = {"T1", ISA_ROLE_INPUT, ISA_T_F32, 3, {3, 70, 5}, 1};
    round_trip(&c, ISA_HT_F32);
    tspec d = {"R6", ISA_ROLE_INPUT, ISA_T_DL16, 6, {2, 3, 1, 2, 67, 3}, 4};
    round_trip(&d, ISA_HT_F32);
}

static void test_layout_round_trip_fp16_host_input(void)
{
    tspec a = {"H", ISA_ROLE_INPUT, ISA_T_DL16, 2, {100, 70}, -1};
    round_trip(&a, ISA_HT_F16);
    tspec b = {"H3", ISA_ROLE_INPUT, ISA_T_F32, 3, {3, 5, 130}, 1};
    round_trip(&b, ISA_HT_F16);
}

/* bf16 host data: exact in fp32, and in DL16 (7 fraction bits of 9). */
static void test_layout_round_trip_bf16_host_input(void)
{
    tspec a = {"B", ISA_ROLE_INPUT, ISA_T_DL16, 2, {100, 70}, -1};
    round_trip(&a, ISA_HT_BF16);
    tspec b = {"B3", ISA_ROLE_INPUT, ISA_T_F32, 3, {3, 5, 130}, 1};
    round_trip(&b, ISA_HT_BF16);
}

/* Hand-computed offsets: the layout of isa.h, independently of
 * isa_layout_offset, checked in raw device DRAM. */
static void test_layout_puts_elements_where_isa_h_says(void)
{
    rt_device *dev = open4();
    tspec ts[] = {{"A", ISA_ROLE_INPUT, ISA_T_DL16, 2, {100, 70}, -1},
                  {"T", ISA_ROLE_INPUT, ISA_T_F32, 3, {130, 3, 5}, 0}};
    rt_program *prog = load(dev, build(ts, 2, NULL));
    const isa_program *p = rt_program_isa(prog);
    /* A: 2 sticks of 64 DL16 per row -> device (2, 100, 64), 25600 bytes. */
    CU_ASSERT_EQUAL(p->tensors[0].bytes, 2 * 100 * 128);
    /* T: stick dim 0 of 130 fp32 -> device (5, 3, 5, 32), 5 * 15 * 128 bytes. */
    CU_ASSERT_EQUAL(p->tensors[1].bytes, 5 * 15 * 128);
    CU_ASSERT_EQUAL(p->tensors[1].dram_off, 25600);

    float *a = calloc(7000, sizeof *a), *tv = calloc(1950, sizeof *tv);
    a[5 * 70 + 66] = 1.5f;   /* (5, 66): group 1, row 5, lane 2 */
    a[99 * 70 + 69] = -2.0f; /* (99, 69): group 1, row 99, lane 5 */
    a[0] = 0.25f;            /* (0, 0): group 0, row 0, lane 0 */
    tv[(100 * 3 + 2) * 5 + 3] = 7.0f; /* (100, 2, 3): group 3, row 13, lane 4 */
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "A", a, ISA_HT_F32, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "T", tv, ISA_HT_F32, err, sizeof err), 0);

    uint64_t base = rt_program_base(prog);
    uint8_t raw[25600];
    CU_ASSERT_EQUAL(sim_dram_read(rt_sim(dev), base, raw, sizeof raw), 0);
    uint16_t h;
    memcpy(&h, raw + ((1 * 100 + 5) * 64 + 2) * 2, 2);
    CU_ASSERT_EQUAL(h, isa_dl16_from_f32(1.5f));
    memcpy(&h, raw + ((1 * 100 + 99) * 64 + 5) * 2, 2);
    CU_ASSERT_EQUAL(h, isa_dl16_from_f32(-2.0f));
    memcpy(&h, raw, 2);
    CU_ASSERT_EQUAL(h, isa_dl16_from_f32(0.25f));
    int nonzero = 0;
    for (size_t i = 0; i < sizeof raw; i++)
        nonzero += raw[i] != 0;
    CU_ASSERT(nonzero <= 6); /* just the three values */

    float f;
    CU_ASSERT_EQUAL(sim_dram_read(rt_sim(dev), base + 25600 + ((3 * 15 + 13) * 32 + 4) * 4, &f, 4), 0);
    CU_ASSERT_EQUAL(f, 7.0f);
    int64_t idx[3] = {100, 2, 3};
    CU_ASSERT_EQUAL(isa_layout_offset(&p->tensors[1], 128, idx), ((3 * 15 + 13) * 32 + 4) * 4);
    int64_t ia[2] = {99, 69};
    CU_ASSERT_EQUAL(isa_layout_offset(&p->tensors[0], 128, ia), ((1 * 100 + 99) * 64 + 5) * 2);
    free(a);
    free(tv);
    rt_close(dev);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_layout_1024x1024_converts_in_milliseconds(void)
{
    for (int sd = 1; sd >= 0; sd--) {
        isa_tensor t;
        memset(&t, 0, sizeof t);
        t.rank = 2;
        t.shape[0] = t.shape[1] = 1024;
        t.stick_dim = sd;
        t.dev_dtype = ISA_T_DL16;
        t.bytes = isa_tensor_device_bytes(&t, 128);
        float *v = randoms(3, "perf", 1 << 20, 1), *back = malloc(sizeof(float) << 20);
        void *dev = malloc(t.bytes);
        double t0 = now_ms();
        isa_layout_pack(&t, 128, v, dev);
        double t1 = now_ms();
        isa_layout_unpack(&t, 128, dev, back);
        double t2 = now_ms();
        printf("\n    1024x1024 DL16 stick_dim %d: pack %.2f ms, unpack %.2f ms ", sd, t1 - t0, t2 - t1);
        CU_ASSERT(t1 - t0 < 250 && t2 - t1 < 250); /* generous for sanitizer builds */
        size_t same = 0;
        for (size_t i = 0; i < 1u << 20; i++)
            same += back[i] == isa_dl16_round(v[i]);
        CU_ASSERT_EQUAL(same, 1u << 20);
        free(v);
        free(back);
        free(dev);
    }
}

static void test_write_and_read_name_unknown_tensors(void)
{
    rt_device *dev = open4();
    tspec ts[] = {{"A", ISA_ROLE_INPUT, ISA_T_DL16, 2, {2, 2}, -1}};
    rt_program *prog = load(dev, build(ts, 1, NULL));
    float v[4] = {0};
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "Q", v, ISA_HT_F32, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no tensor Q"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "A (input)"));
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "Q", v, err, sizeof err), -1);
    rt_close(dev);
}

/* ---- inputs ---- */

static void test_random_fill_is_seeded_and_reproducible(void)
{
    float a[1000], b[1000], c[1000], d[1000];
    rt_random_uniform(42, "A", a, 1000);
    rt_random_uniform(42, "A", b, 1000);
    rt_random_uniform(43, "A", c, 1000);
    rt_random_uniform(42, "B", d, 1000);
    CU_ASSERT_EQUAL(memcmp(a, b, sizeof a), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(a, c, sizeof a), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(a, d, sizeof a), 0);
    /* The documented generator, computed independently (splitmix64 on
     * 42 ^ fnv1a64("A"), top 24 bits). */
    CU_ASSERT_EQUAL(a[0], 0x1.203ee4p-1f);
    CU_ASSERT_EQUAL(a[1], 0x1.def7ep-3f);
    CU_ASSERT_EQUAL(a[2], 0x1.39e184p-1f);
    CU_ASSERT_EQUAL(a[3], 0x1.f8f508p-2f);
    double sum = 0, lo = 1, hi = -1;
    for (int i = 0; i < 1000; i++) {
        sum += a[i];
        lo = fmin(lo, a[i]);
        hi = fmax(hi, a[i]);
    }
    CU_ASSERT(lo >= -1 && hi < 1 && lo < -0.9 && hi > 0.9);
    CU_ASSERT(fabs(sum / 1000) < 0.1);
}

static void test_fill_inputs_writes_inputs_and_weights_only(void)
{
    rt_device *dev = open4();
    tspec ts[] = {{"X", ISA_ROLE_INPUT, ISA_T_DL16, 2, {10, 70}, -1},
                  {"W", ISA_ROLE_WEIGHT, ISA_T_F32, 1, {50}, -1},
                  {"Y", ISA_ROLE_OUTPUT, ISA_T_DL16, 2, {10, 70}, -1}};
    rt_program *p1 = load(dev, build(ts, 3, NULL));
    rt_program *p2 = load(dev, build(ts, 3, NULL));
    CU_ASSERT_EQUAL(rt_fill_inputs(p1, 7, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_fill_inputs(p2, 7, err, sizeof err), 0);
    int64_t n;
    const float *x1 = rt_host_tensor(p1, "X", &n), *x2 = rt_host_tensor(p2, "X", NULL);
    CU_ASSERT_EQUAL(n, 700);
    CU_ASSERT_FATAL(x1 && x2);
    CU_ASSERT_EQUAL(memcmp(x1, x2, 700 * sizeof *x1), 0);
    float ref[700], back[700];
    rt_random_uniform(7, "X", ref, 700);
    CU_ASSERT_EQUAL(memcmp(x1, ref, sizeof ref), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(p1, "X", back, err, sizeof err), 0);
    int same = 0;
    for (int i = 0; i < 700; i++)
        same += back[i] == isa_dl16_round(ref[i]);
    CU_ASSERT_EQUAL(same, 700);
    float w[50];
    CU_ASSERT_EQUAL(rt_read_tensor(p1, "W", w, err, sizeof err), 0);
    CU_ASSERT_EQUAL(memcmp(w, rt_host_tensor(p1, "W", NULL), sizeof w), 0);
    CU_ASSERT_PTR_NULL(rt_host_tensor(p1, "Y", NULL));
    CU_ASSERT_EQUAL(rt_fill_inputs(p2, 8, err, sizeof err), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(rt_host_tensor(p2, "X", NULL), x1, 700 * sizeof *x1), 0);
    rt_close(dev);
}

static void test_fill_rounds_fp16_host_tensors_to_fp16(void)
{
    rt_device *dev = open4();
    isa_program *p = build((tspec[]){{"X", ISA_ROLE_INPUT, ISA_T_F32, 1, {300}, -1}}, 1, NULL);
    p->tensors[0].host_dtype = ISA_HT_F16;
    rt_program *prog = load(dev, p);
    CU_ASSERT_EQUAL(rt_fill_inputs(prog, 1, err, sizeof err), 0);
    float raw[300], back[300];
    rt_random_uniform(1, "X", raw, 300);
    const float *h = rt_host_tensor(prog, "X", NULL);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "X", back, err, sizeof err), 0);
    int ok = 0, changed = 0;
    for (int i = 0; i < 300; i++) {
        float r = isa_f16_to_f32(isa_f16_from_f32(raw[i]));
        ok += h[i] == r && back[i] == r;
        changed += r != raw[i];
    }
    CU_ASSERT_EQUAL(ok, 300);
    CU_ASSERT(changed > 200); /* 24-bit randoms rarely fit in fp16 */
    rt_close(dev);
}

static void test_input_file_loads_raw_fp32_and_checks_size(void)
{
    rt_device *dev = open4();
    tspec ts[] = {{"X", ISA_ROLE_INPUT, ISA_T_F32, 2, {3, 4}, -1},
                  {"Y", ISA_ROLE_OUTPUT, ISA_T_F32, 2, {3, 4}, -1}};
    rt_program *prog = load(dev, build(ts, 2, NULL));
    char path[1024], arg[1100];
    tu_tmpfile(".f32", path, sizeof path);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    for (int i = 0; i < 12; i++) { /* little-endian fp32, written byte by byte */
        float v = (float)i * 0.5f - 1;
        uint32_t u;
        memcpy(&u, &v, 4);
        for (int b = 0; b < 4; b++)
            fputc((int)(u >> (8 * b)) & 0xff, f);
    }
    fclose(f);
    snprintf(arg, sizeof arg, "X=%s", path);
    CU_ASSERT_EQUAL(rt_input_arg(prog, arg, err, sizeof err), 0);
    float back[12];
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "X", back, err, sizeof err), 0);
    CU_ASSERT_EQUAL(back[0], -1.0f);
    CU_ASSERT_EQUAL(back[7], 2.5f);
    CU_ASSERT_EQUAL(back[11], 4.5f);

    /* Wrong size: the message names the file size and what the shape needs. */
    f = fopen(path, "ab");
    fputc(0, f);
    fclose(f);
    CU_ASSERT_EQUAL(rt_input_arg(prog, arg, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "has 49 bytes"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "(3, 4) needs 48 bytes"));
    CU_ASSERT_EQUAL(rt_load_input_file(prog, "X", "/nonexistent.f32", err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot open"));
    CU_ASSERT_EQUAL(rt_input_arg(prog, "X", err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "NAME=FILE"));
    snprintf(arg, sizeof arg, "Y=%s", path);
    CU_ASSERT_EQUAL(rt_input_arg(prog, arg, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "not an input"));
    snprintf(arg, sizeof arg, "Z=%s", path);
    CU_ASSERT_EQUAL(rt_input_arg(prog, arg, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no tensor Z"));
    remove(path);
    /* a FIFO or device blocked or read forever; refused before any read */
    char dir[1024], fifo[1100];
    tu_tmpdir(dir, sizeof dir);
    tu_fifo(dir, "x.f32", fifo, sizeof fifo);
    alarm(10);
    CU_ASSERT_EQUAL(rt_load_input_file(prog, "X", fifo, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "x.f32: not a regular file"));
    CU_ASSERT_EQUAL(rt_load_input_file(prog, "X", "/dev/zero", err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "/dev/zero: not a regular file"));
    alarm(0);
    tu_rmtree(dir);
    rt_close(dev);
}

/* ---- validation ---- */

/* A device-like matmul: inputs rounded to DL16, products summed in fp32
 * in k order; the output is rounded to DL16 when written. */
/* Write v (fp32) as the output name and check the program's outputs,
 * asserting rt_check returns want; its n results. */
static rt_check_result *write_and_check(rt_program *prog, const char *name, const float *v, int want, int *n)
{
    rt_check_result *r;
    CU_ASSERT_EQUAL(rt_write_tensor(prog, name, v, ISA_HT_F32, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_check(prog, &r, n, err, sizeof err), want);
    return r;
}

/* The count values of the output name, v, scaled by factor: the check
 * fails, with fewer than max_within elements within tolerance. */
static void expect_scaled_output_fails(rt_program *prog, const char *name, float *v, int count, float factor,
                                       int max_within)
{
    for (int i = 0; i < count; i++)
        v[i] *= factor;
    int n;
    rt_check_result *r = write_and_check(prog, name, v, 1, &n);
    CU_ASSERT(r[0].within < max_within);
    free(r);
}

static void device_mm(const float *a, const float *b, float *c, int M, int K, int N)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float s = 0;
            for (int k = 0; k < K; k++)
                s += isa_dl16_round(a[i * K + k]) * isa_dl16_round(b[k * N + j]);
            c[i * N + j] = s;
        }
}

static void test_check_mm_passes_rounded_and_fails_wrong_output(void)
{
    rt_device *dev = open4();
    enum { M = 64, K = 100, N = 70 };
    tspec ts[] = {{"A", ISA_ROLE_INPUT, ISA_T_DL16, 2, {M, K}, -1},
                  {"B", ISA_ROLE_WEIGHT, ISA_T_DL16, 2, {K, N}, -1},
                  {"C", ISA_ROLE_OUTPUT, ISA_T_DL16, 2, {M, N}, -1}};
    rt_program *prog = load(dev, build(ts, 3, "# a matmul\n%C = aten.mm(%A, %B)\n"));
    CU_ASSERT_EQUAL(rt_fill_inputs(prog, 11, err, sizeof err), 0);
    static float c[M * N];
    device_mm(rt_host_tensor(prog, "A", NULL), rt_host_tensor(prog, "B", NULL), c, M, K, N);

    int n;
    char line[512];
    rt_check_result *r = write_and_check(prog, "C", c, 0, &n);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_STRING_EQUAL(r[0].name, "C");
    CU_ASSERT_STRING_EQUAL(r[0].op, "aten.mm");
    CU_ASSERT_EQUAL(r[0].line, 2);
    CU_ASSERT_EQUAL(r[0].count, M * N);
    CU_ASSERT_EQUAL(r[0].within, M * N);
    CU_ASSERT(r[0].ok);
    CU_ASSERT(r[0].max_abs_err > 0 && r[0].max_abs_err < 0.05);
    rt_check_format(&r[0], line, sizeof line);
    CU_ASSERT(strncmp(line, "check C: max_abs_err=", 21) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, " (4480/4480) worst_err_over_tol="));
    CU_ASSERT(ends_with(line, " ok"));
    CU_ASSERT_PTR_NULL(strstr(line, "vacuous"));
    CU_ASSERT(r[0].worst_ratio > 0 && r[0].worst_ratio <= 1);
    free(r);

    /* One element off by 0.25: exactly that one fails, and is the worst. */
    float good = c[3 * N + 17];
    c[3 * N + 17] += 0.25f;
    r = write_and_check(prog, "C", c, 1, &n);
    CU_ASSERT_FALSE(r[0].ok);
    CU_ASSERT_EQUAL(r[0].within, M * N - 1);
    CU_ASSERT_EQUAL(r[0].worst, 3 * N + 17);
    rt_check_format(&r[0], line, sizeof line);
    CU_ASSERT(ends_with(line, " MISMATCH"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "(4479/4480)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "worst[3,17]="));
    free(r);

    /* A NaN fails even though no other element is off. */
    c[3 * N + 17] = good;
    c[0] = NAN;
    r = write_and_check(prog, "C", c, 1, &n);
    CU_ASSERT_EQUAL(r[0].nans, 1);
    CU_ASSERT_EQUAL(r[0].within, M * N - 1);
    rt_check_format(&r[0], line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "nan=1"));
    free(r);

    /* A 5% scale error fails most elements. */
    c[0] = 0;
    device_mm(rt_host_tensor(prog, "A", NULL), rt_host_tensor(prog, "B", NULL), c, M, K, N);
    expect_scaled_output_fails(prog, "C", c, M * N, 1.05f, M * N / 2);
    rt_close(dev);
}

/* The mm tolerance at one element, exactly: C = a*b for 1x1 operands,
 * with an fp32 output so the written value is the tested value. */
static void test_check_mm_tolerance_is_the_documented_formula(void)
{
    rt_device *dev = open4();
    tspec ts[] = {{"A", ISA_ROLE_INPUT, ISA_T_DL16, 2, {1, 1}, -1},
                  {"B", ISA_ROLE_INPUT, ISA_T_DL16, 2, {1, 1}, -1},
                  {"C", ISA_ROLE_OUTPUT, ISA_T_F32, 2, {1, 1}, -1}};
    rt_program *prog = load(dev, build(ts, 3, "%C = aten.mm(%A, %B)"));
    float a = 0.75f, b = -0.5f;
    CU_ASSERT_EQUAL(rt_set_input(prog, "A", &a, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "B", &b, err, sizeof err), 0);
    double ref = -0.375, ab = 0.375;
    double tol = 2 * U * (1 + U) * ab + U * fabs(ref) + 1 * 0x1p-23 * ab + 0x1p-30;
    float inside = (float)(ref - 0.99 * tol), outside = (float)(ref - 1.01 * tol);
    rt_check_result *r;
    int n;
    char line[512];
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "C", &inside, ISA_HT_F32, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), 0);
    CU_ASSERT(fabs(r[0].worst_tol - tol) < 1e-9);
    /* the line says how much of its tolerance the worst element used */
    CU_ASSERT(fabs(r[0].worst_ratio - 0.99) < 1e-4);
    rt_check_format(&r[0], line, sizeof line);
    CU_ASSERT(ends_with(line, " (1/1) worst_err_over_tol=0.99 ok"));
    free(r);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "C", &outside, ISA_HT_F32, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), 1);
    CU_ASSERT(fabs(r[0].max_abs_err - 1.01 * tol) < 1e-6);
    CU_ASSERT(fabs(r[0].max_rel_err - 1.01 * tol / 0.375) < 1e-5);
    free(r);
    rt_close(dev);
}

/* A device-like softmax: DL16 input, sub, exp, fp32 sum, reciprocal and
 * multiply, each rounded to DL16. */
static void device_softmax(const float *x, float *y, int rows, int n)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float m = -INFINITY, s = 0;
        for (int j = 0; j < n; j++)
            m = fmaxf(m, isa_dl16_round(xr[j]));
        for (int j = 0; j < n; j++) {
            y[r * n + j] = isa_dl16_round(expf(isa_dl16_round(isa_dl16_round(xr[j]) - m)));
            s += y[r * n + j];
        }
        float rs = isa_dl16_round(1.0f / s);
        for (int j = 0; j < n; j++)
            y[r * n + j] = isa_dl16_round(y[r * n + j] * rs);
    }
}

static void test_check_softmax_passes_rounded_and_fails_wrong_output(void)
{
    rt_device *dev = open4();
    enum { R = 8, N = 130 };
    tspec ts[] = {{"X", ISA_ROLE_INPUT, ISA_T_DL16, 2, {R, N}, -1},
                  {"Y", ISA_ROLE_OUTPUT, ISA_T_DL16, 2, {R, N}, -1}};
    rt_program *prog = load(dev, build(ts, 2, "%Y = aten._softmax(%X, -1, False)"));
    float *x = randoms(3, "X", R * N, 4), y[R * N];
    CU_ASSERT_EQUAL(rt_set_input(prog, "X", x, err, sizeof err), 0);
    device_softmax(x, y, R, N);
    int n;
    char line[512];
    rt_check_result *r = write_and_check(prog, "Y", y, 0, &n);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT(r[0].ok);
    CU_ASSERT(r[0].max_abs_err > 0);
    rt_check_format(&r[0], line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, " (1040/1040) worst_err_over_tol="));
    CU_ASSERT(ends_with(line, " ok"));
    free(r);

    /* Normalised by a sum 10% off: every element fails (with inputs in
     * [-4, 4) the tolerance is at most u (8 + 16 + 8) = 3.1% of y). */
    expect_scaled_output_fails(prog, "Y", y, R * N, 1.1f, R * N / 10);
    free(x);
    rt_close(dev);
}

static void test_check_softmax_tolerance_is_the_documented_formula(void)
{
    rt_device *dev = open4();
    tspec ts[] = {{"X", ISA_ROLE_INPUT, ISA_T_F32, 2, {1, 2}, -1},
                  {"Y", ISA_ROLE_OUTPUT, ISA_T_F32, 2, {1, 2}, -1}};
    rt_program *prog = load(dev, build(ts, 2, "%Y = aten._softmax(%X, 1, False)"));
    float x[2] = {1, -1};
    CU_ASSERT_EQUAL(rt_set_input(prog, "X", x, err, sizeof err), 0);
    /* max|x| = 1, max|x - m| = 2: tol_i = u y_i (2 + 4 + 8) + 2^-30. */
    double y0 = exp(1.0) / (exp(1.0) + exp(-1.0)), y1 = 1 - y0;
    double t0 = U * y0 * 14 + 0x1p-30, t1 = U * y1 * 14 + 0x1p-30;
    float in[2] = {(float)(y0 + 0.98 * t0), (float)(y1 - 0.98 * t1)};
    float out[2] = {(float)y0, (float)(y1 - 1.02 * t1)};
    rt_check_result *r;
    int n;
    r = write_and_check(prog, "Y", in, 0, &n);
    free(r);
    r = write_and_check(prog, "Y", out, 1, &n);
    CU_ASSERT_EQUAL(r[0].within, 1);
    CU_ASSERT_EQUAL(r[0].worst, 1);
    CU_ASSERT(fabs(r[0].worst_tol - t1) < 1e-9);
    free(r);
    rt_close(dev);
}

static void expect_check_error(const char *graph, int fill, const char *msg)
{
    rt_device *dev = open4();
    tspec ts[] = {{"A", ISA_ROLE_INPUT, ISA_T_DL16, 2, {4, 3}, -1},
                  {"B", ISA_ROLE_INPUT, ISA_T_DL16, 2, {3, 5}, -1},
                  {"C", ISA_ROLE_OUTPUT, ISA_T_DL16, 2, {4, 5}, -1}};
    rt_program *prog = load(dev, build(ts, 3, graph));
    if (fill)
        CU_ASSERT_EQUAL(rt_fill_inputs(prog, 1, err, sizeof err), 0);
    rt_check_result dummy, *r = &dummy;
    int n = 99;
    err[0] = 0;
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), -1);
    CU_ASSERT_PTR_NULL(r);
    CU_ASSERT_EQUAL(n, 0);
    if (!strstr(err, msg))
        fprintf(stderr, "\n    expected '%s' in '%s'\n", msg, err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, msg));
    rt_close(dev);
}

static void test_check_reports_graph_errors_with_line_numbers(void)
{
    expect_check_error(NULL, 1, "no graph");
    expect_check_error("# comment\n%C = aten.add(%A, %B)\n", 1, "reference: unsupported op aten.add at graph line 2");
    expect_check_error("C = aten.mm(A, B)", 1, "cannot parse graph line 1");
    expect_check_error("%C = aten.mm(%A, %Q)", 1, "unknown tensor %Q at graph line 1");
    expect_check_error("%C = aten.mm(%A, %B)", 0, "tensor A (graph line 1) has no host data");
    expect_check_error("%C = aten.mm(%B, %A)", 1, "shapes do not multiply at graph line 1");
    expect_check_error("%C = aten.mm(%A)", 1, "aten.mm takes 2 arguments");
    expect_check_error("%C = aten._softmax(%A, 0, False)", 1, "unsupported op aten._softmax over dim 0");
    expect_check_error("%C = aten._softmax(%A, -1, False)", 1, "output C has shape (4, 5) but graph line 1 computes shape (4, 3)");
    expect_check_error("%D = aten.mm(%A, %B)", 1, "output C is not computed by the graph");
}

/* Values flow by name from one line to the next. */
static void test_check_chains_graph_lines(void)
{
    rt_device *dev = open4();
    tspec ts[] = {{"A", ISA_ROLE_INPUT, ISA_T_F32, 2, {2, 3}, -1},
                  {"B", ISA_ROLE_INPUT, ISA_T_F32, 2, {3, 4}, -1},
                  {"Y", ISA_ROLE_OUTPUT, ISA_T_F32, 2, {2, 4}, -1}};
    rt_program *prog = load(dev, build(ts, 3, "%T = aten.mm(%A, %B)\n%Y = aten._softmax(%T, -1, False)\n"));
    float a[6] = {1, 0, 0, 0, 1, 0}, b[12] = {0, 1, 2, 3, 1, 1, 1, 1, 0, 0, 0, 0};
    CU_ASSERT_EQUAL(rt_set_input(prog, "A", a, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "B", b, err, sizeof err), 0);
    /* T = [[0 1 2 3], [1 1 1 1]]; Y = softmax rows. */
    double s = 1 + exp(1) + exp(2) + exp(3);
    float y[8] = {(float)(1 / s), (float)(exp(1) / s), (float)(exp(2) / s), (float)(exp(3) / s),
                  0.25f, 0.25f, 0.25f, 0.25f};
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "Y", y, ISA_HT_F32, err, sizeof err), 0);
    rt_check_result *r;
    int n;
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), 0);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT(r[0].ok && r[0].max_abs_err < 1e-6);
    CU_ASSERT_EQUAL(r[0].line, 2);
    free(r);
    rt_close(dev);
}

/* ---- end to end on the simulator ---- */

/* One core: X -> LX by dma.ld, token 0 from dmai to dmao, LX -> Y by
 * dma.st.  X and Y are 100x70 DL16: 200 sticks each. */
static isa_program *copy_program(int64_t load_from)
{
    tspec ts[] = {{"X", ISA_ROLE_INPUT, ISA_T_DL16, 2, {100, 70}, -1},
                  {"Y", ISA_ROLE_OUTPUT, ISA_T_DL16, 2, {100, 70}, -1}};
    isa_program *p = build(ts, 2, NULL);
    int64_t sticks = (int64_t)(p->tensors[0].bytes / 128);
    isa_insn in;
    isa_insn_init(&in, ISA_OP_DMA_LD);
    in.d.off = 0;
    isa_set_off(&in.a, load_from);
    isa_set(&in, run, sticks);
    isa_stream_push(&p->cores[0], &in);
    isa_insn_init(&in, ISA_OP_SIG);
    in.u = ISA_U_DMAI;
    in.tok = 0;
    isa_stream_push(&p->cores[0], &in);
    isa_insn_init(&in, ISA_OP_WAIT);
    in.u = ISA_U_DMAO;
    in.tok = 0;
    isa_stream_push(&p->cores[0], &in);
    isa_insn_init(&in, ISA_OP_DMA_ST);
    isa_set_off(&in.d, (int64_t)p->tensors[1].dram_off);
    in.a.off = 0;
    isa_set(&in, run, sticks);
    isa_stream_push(&p->cores[0], &in);
    isa_insn_init(&in, ISA_OP_HALT);
    isa_stream_push(&p->cores[0], &in);
    return p;
}

static void test_launch_runs_a_dma_copy_on_the_simulator(void)
{
    rt_device *dev = open4();
    /* Through the ELF container, as a user would. */
    isa_program *p = copy_program(0);
    char path[1024];
    tu_tmpfile(".elf", path, sizeof path);
    if (isa_elf_write(p, path, err, sizeof err))
        fprintf(stderr, "isa_elf_write: %s\n", err);
    isa_program_free(p);
    rt_program *prog = rt_load(dev, path, err, sizeof err);
    if (!prog)
        fprintf(stderr, "rt_load: %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    remove(path);
    CU_ASSERT_EQUAL(rt_fill_inputs(prog, 5, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL(rt_wait(prog, &res), -1); /* not launched yet */
    int rc = rt_launch(prog, &res);
    char line[768];
    rt_run_format(&res, line, sizeof line);
    if (rc)
        fprintf(stderr, "\n    %s\n", line);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(res.status, RT_RUN_OK);
    CU_ASSERT(strncmp(line, "run: ok", 7) == 0);
    CU_ASSERT_EQUAL(res.stats.dram_bytes_read, 25600);
    CU_ASSERT_EQUAL(res.stats.dram_bytes_written, 25600);
    float y[7000];
    expect_dl16_of(prog, "Y", rt_host_tensor(prog, "X", NULL), 7000, y);
    rt_run_result again;
    CU_ASSERT_EQUAL(rt_wait(prog, &again), 0);
    CU_ASSERT_EQUAL(again.stats.dram_bytes_read, 25600);
    rt_unload(prog);
    rt_close(dev);
}

/* The runtime keeps an input's device bytes between launches (packing is
 * most of staging): a launch after rt_write_tensor reads the new values,
 * one after none the same ones. */
static void test_launch_uploads_the_inputs_written_since_the_last(void)
{
    rt_device *dev = open4();
    rt_program *prog = load(dev, copy_program(0));
    float *v = randoms(7, "X", 7000, 1.0f), *w = randoms(8, "X", 7000, 3.0f), y[7000];
    rt_run_result res;
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "X", v, ISA_HT_F32, err, sizeof err), 0);
    for (int k = 0; k < 2; k++) { /* the first launch finds the region staged at load, the second stages it */
        CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
        expect_dl16_of(prog, "Y", v, 7000, y);
    }
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "X", w, ISA_HT_F32, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    expect_dl16_of(prog, "Y", w, 7000, y);
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    expect_dl16_of(prog, "Y", w, 7000, y);
    free(v);
    free(w);
    rt_unload(prog);
    rt_close(dev);
}

/* A launch that finds a kept input's device bytes where the last one left
 * them need not write them again, but once anything else has written
 * there (here the host, junk over the input's bytes) it must: every
 * launch reads the input's values, and counts its upload. */
static void test_launch_writes_a_kept_input_again_once_its_device_bytes_were_overwritten(void)
{
    rt_device *dev = open4();
    rt_program *prog = load(dev, copy_program(0));
    float *v = randoms(7, "X", 7000, 1.0f), y[7000];
    uint64_t at, up[3];
    CU_ASSERT_EQUAL_FATAL(rt_tensor_addr(prog, "X", &at, err, sizeof err), 0); /* staged at load */
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "X", v, ISA_HT_F32, err, sizeof err), 0);
    static uint8_t junk[100 * 2 * 128]; /* X in device layout: 100 rows of two 128-byte sticks */
    memset(junk, 0x55, sizeof junk);
    rt_run_result res;
    for (int k = 0; k < 3; k++) {
        if (k == 2)
            CU_ASSERT_EQUAL(sim_dram_write(rt_sim(dev), at, junk, sizeof junk), 0);
        CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
        expect_dl16_of(prog, "Y", v, 7000, y);
        up[k] = res.xfer.bytes_uploaded;
    }
    CU_ASSERT_EQUAL(up[1], sizeof junk); /* the second launch stages the region: counted */
    CU_ASSERT_EQUAL(up[2], sizeof junk);
    free(v);
    rt_unload(prog);
    rt_close(dev);
}

static void test_launch_reports_a_fault_with_core_unit_and_index(void)
{
    rt_device *dev = open4();
    isa_program *p = copy_program(0);
    int64_t outside = (int64_t)p->dram_bytes; /* the load reads past the segment */
    isa_set_off(&p->cores[0].insns[0].a, outside);
    rt_program *prog = load(dev, p);
    rt_run_result res;
    CU_ASSERT_EQUAL(rt_launch(prog, &res), -1);
    CU_ASSERT_EQUAL(res.status, RT_RUN_FAULT);
    CU_ASSERT_EQUAL(res.fault.core, 0);
    CU_ASSERT_EQUAL(res.fault.unit, ISA_U_DMAI);
    CU_ASSERT_EQUAL(res.fault.index, 0);
    char line[768];
    rt_run_format(&res, line, sizeof line);
    CU_ASSERT(strncmp(line, "run: FAULT core 0 unit dmai insn 0: ", 36) == 0);
    CU_ASSERT_EQUAL(rt_wait(prog, NULL), -1);
    rt_close(dev);
}

/* ---- where tensors live: weights resident, activations per run, eviction ---- */

#define CFG_SMALL SPYRE_SOURCE_DIR "/chip/configs/spyre-smalldram.cfg"
#define MM_M 8   /* rows of X and Y */
#define MM_K 256 /* columns of X, rows of W */

static rt_device *open_small(void)
{
    rt_device *dev = open_cfg(CFG_SMALL);
    CU_ASSERT_EQUAL(rt_config(dev)->dram_bytes, 1 << 20);
    return dev;
}

/* Y = X x W on the 4 cores: X (8, 256) input, W (256, n) weight in the
 * weights region [0, 256 n 2), Y (8, n) output after X.  Core c computes
 * the columns [c n/4, (c+1) n/4): whole 64-column groups, contiguous in
 * device layout, so it loads X and its part of W with one dma.ld each, runs
 * one pt.mm and stores its part of Y with one dma.st. */
static isa_program *mm_weights_program(int64_t n)
{
    const int64_t sb = 128, gq = n / 64 / 4; /* W column groups per core */
    CU_ASSERT_FATAL(n % 256 == 0);
    isa_program *p = isa_program_new(4);
    snprintf(p->config, sizeof p->config, "spyre-4core");
    p->lx_bytes = 262144;
    int64_t xs[2] = {MM_M, MM_K}, ws[2] = {MM_K, n}, ys[2] = {MM_M, n};
    int w = isa_program_add_tensor(p, "W", ISA_ROLE_WEIGHT, ISA_HT_F32, ISA_T_DL16, 2, ws, 0);
    p->weight_bytes = p->tensors[w].bytes;
    int x = isa_program_add_tensor(p, "X", ISA_ROLE_INPUT, ISA_HT_F32, ISA_T_DL16, 2, xs, p->weight_bytes);
    int y = isa_program_add_tensor(p, "Y", ISA_ROLE_OUTPUT, ISA_HT_F32, ISA_T_DL16, 2, ys,
                                   p->tensors[x].dram_off + p->tensors[x].bytes);
    CU_ASSERT_EQUAL(p->dram_bytes, p->tensors[y].dram_off + p->tensors[y].bytes);
    const int64_t x_lx = 0, w_lx = MM_M * MM_K * 2, y_lx = w_lx + gq * MM_K * sb;
    for (int c = 0; c < 4; c++) {
        isa_insn *in = tu_emit(p, c, ISA_OP_DMA_LD);
        isa_set_off(&in->d, x_lx);
        isa_set_off(&in->a, (int64_t)p->tensors[x].dram_off);
        isa_set(in, run, (int64_t)(p->tensors[x].bytes / sb));
        in = tu_emit(p, c, ISA_OP_DMA_LD);
        isa_set_off(&in->d, w_lx);
        isa_set_off(&in->a, c * gq * MM_K * sb);
        isa_set(in, run, gq * MM_K);
        tu_sync(p, c, ISA_OP_SIG, ISA_U_DMAI, 0);
        tu_sync(p, c, ISA_OP_WAIT, ISA_U_PT0, 0);
        in = tu_emit(p, c, ISA_OP_PT_MM);
        isa_set_off(&in->d, y_lx);
        isa_set_off(&in->a, x_lx);
        isa_set_off(&in->b, w_lx);
        in->m = MM_M;
        isa_set(in, nn, n / 4);
        in->k = MM_K;
        in->ds[0] = MM_M * sb;
        in->as[0] = MM_M * sb;
        in->bs[0] = MM_K * sb;
        tu_sync(p, c, ISA_OP_SIG, ISA_U_PT0, 1);
        tu_sync(p, c, ISA_OP_WAIT, ISA_U_DMAO, 1);
        in = tu_emit(p, c, ISA_OP_DMA_ST);
        isa_set_off(&in->d, (int64_t)p->tensors[y].dram_off + c * gq * MM_M * sb);
        isa_set_off(&in->a, y_lx);
        isa_set(in, run, gq * MM_M);
    }
    tu_halt_all(p);
    p->graph = strdup("%Y = aten.mm(%X, %W)");
    return p;
}

/* Launch, expect success, and validate Y against the host reference. */
static void launch_and_check(rt_program *prog, rt_run_result *res)
{
    char line[1024];
    int rc = rt_launch(prog, res);
    rt_run_format(res, line, sizeof line);
    if (rc)
        fprintf(stderr, "\n    %s\n", line);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    rt_check_result *r = NULL;
    int n = 0;
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), 0);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT(n == 1 && r[0].ok && r[0].count == MM_M * (int64_t)rt_program_isa(prog)->tensors[2].shape[1]);
    free(r);
}

static uint64_t tensor_bytes(const rt_program *prog, const char *name)
{
    const isa_program *p = rt_program_isa(prog);
    return p->tensors[isa_program_find_tensor(p, name)].bytes;
}

static void test_weights_stay_resident_across_launches(void)
{
    rt_device *dev = open4();
    rt_program *prog = load(dev, mm_weights_program(1280));
    const uint64_t wb = tensor_bytes(prog, "W"), xb = tensor_bytes(prog, "X"), yb = tensor_bytes(prog, "Y");
    CU_ASSERT_EQUAL(wb, 655360);
    CU_ASSERT_EQUAL(rt_program_isa(prog)->weight_bytes, wb);
    CU_ASSERT(rt_weights_resident(prog));
    CU_ASSERT_EQUAL(rt_fill_inputs(prog, 3, err, sizeof err), 0);

    /* First launch: the weights written after load, X, and Y back. */
    rt_run_result res;
    launch_and_check(prog, &res);
    CU_ASSERT_EQUAL(res.xfer.weight_bytes_uploaded, wb);
    CU_ASSERT_EQUAL(res.xfer.bytes_uploaded, wb + xb);
    CU_ASSERT_EQUAL(res.xfer.bytes_downloaded, yb);
    CU_ASSERT_EQUAL(res.xfer.weights_evicted, 0);
    CU_ASSERT_EQUAL(res.xfer.weights_restored, 0);
    CU_ASSERT_EQUAL(res.stats.dram_bytes_read, 4 * xb + wb); /* every core reads X and its part of W */

    /* Second launch with a new X: no weight byte moves, and it validates. */
    float *x = randoms(99, "X", MM_M * MM_K, 1);
    CU_ASSERT_EQUAL(rt_set_input(prog, "X", x, err, sizeof err), 0);
    launch_and_check(prog, &res);
    CU_ASSERT_EQUAL(res.xfer.weight_bytes_uploaded, 0);
    CU_ASSERT_EQUAL(res.xfer.bytes_uploaded, xb);
    CU_ASSERT_EQUAL(res.xfer.bytes_downloaded, yb);
    char line[1024];
    rt_run_format(&res, line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, " uploaded=4096 weights_uploaded=0 downloaded=20480 evicted=0 (0 bytes) "
                                        "restored=0 (0 bytes)"));

    /* W is still in device DRAM, in device layout. */
    uint64_t addr;
    CU_ASSERT_EQUAL_FATAL(rt_tensor_addr(prog, "W", &addr, err, sizeof err), 0);
    const float *w = rt_host_tensor(prog, "W", NULL);
    uint16_t h;
    int64_t idx[2] = {200, 1000};
    CU_ASSERT_EQUAL(sim_dram_read(rt_sim(dev), addr + isa_layout_offset(&rt_program_isa(prog)->tensors[0], 128, idx),
                                  &h, 2), 0);
    CU_ASSERT_EQUAL(h, isa_dl16_from_f32(w[200 * 1280 + 1000]));
    free(x);
    rt_close(dev);
}

static void test_activations_are_freed_after_each_launch(void)
{
    rt_device *dev = open4();
    uint64_t free0, free1, free2, free3;
    rt_dram_usage(dev, &free0, NULL);
    rt_program *prog = load(dev, mm_weights_program(256));
    const isa_program *p = rt_program_isa(prog);
    const uint64_t wb = p->weight_bytes, ab = p->dram_bytes - p->weight_bytes;
    CU_ASSERT_EQUAL(wb % 128, 0);
    CU_ASSERT_EQUAL(ab % 128, 0);
    /* After load: both regions (activations until the first launch). */
    rt_dram_usage(dev, &free1, NULL);
    CU_ASSERT_EQUAL(free1, free0 - wb - ab);
    CU_ASSERT_NOT_EQUAL(rt_program_base(prog), UINT64_MAX);
    CU_ASSERT_EQUAL(rt_fill_inputs(prog, 4, err, sizeof err), 0);
    rt_run_result res;
    launch_and_check(prog, &res);
    /* After a launch only the weights stay. */
    rt_dram_usage(dev, &free2, NULL);
    CU_ASSERT_EQUAL(free2, free0 - wb);
    CU_ASSERT_EQUAL(rt_program_base(prog), UINT64_MAX);
    uint64_t addr;
    CU_ASSERT_EQUAL(rt_tensor_addr(prog, "Y", &addr, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "tensor Y is not in device DRAM"));
    CU_ASSERT_EQUAL(rt_tensor_addr(prog, "W", &addr, err, sizeof err), 0);

    /* Y reads back from its host copy: exactly what the device computed. */
    float y1[MM_M * 256], y2[MM_M * 256];
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "Y", y1, err, sizeof err), 0);
    int64_t cnt;
    const float *hy = rt_host_tensor(prog, "Y", &cnt);
    CU_ASSERT_EQUAL(cnt, MM_M * 256);
    CU_ASSERT(hy && memcmp(hy, y1, sizeof y1) == 0);
    /* An input written between launches reads back in device precision. */
    float *x = randoms(5, "X", MM_M * MM_K, 1), xb[MM_M * MM_K];
    CU_ASSERT_EQUAL(rt_set_input(prog, "X", x, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "X", xb, err, sizeof err), 0);
    int same = 0;
    for (int i = 0; i < MM_M * MM_K; i++)
        same += xb[i] == isa_dl16_round(x[i]);
    CU_ASSERT_EQUAL(same, MM_M * MM_K);

    launch_and_check(prog, &res);
    rt_dram_usage(dev, &free3, NULL);
    CU_ASSERT_EQUAL(free3, free2);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "Y", y2, err, sizeof err), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(y1, y2, sizeof y1), 0); /* the new X went up */
    rt_unload(prog);
    rt_dram_usage(dev, &free3, NULL);
    CU_ASSERT_EQUAL(free3, free0);
    free(x);
    rt_close(dev);
}

/* Two programs whose weights do not fit together: run in turn, each launch
 * evicts the other's weights and restores its own, and every run
 * validates. */
/* A timing-only launch counts its inputs' upload and its outputs' download
 * but moves none of their values (it reads none and writes none, and its
 * activation region lasts one run): the same transfer figures and cycles
 * as a launch with values, and a launch with values after it still
 * computes the right outputs, of new inputs too (the timing-only launch
 * neither waited for nor forgot the PT workers' converted operands: it
 * writes no LX bytes). */
static void test_a_timing_only_launch_counts_the_inputs_it_does_not_write(void)
{
    rt_device *dev = open4();
    rt_program *prog = load(dev, mm_weights_program(256));
    const isa_program *p = rt_program_isa(prog);
    const uint64_t xb = p->tensors[1].bytes;
    CU_ASSERT_EQUAL(rt_fill_inputs(prog, 5, err, sizeof err), 0);
    rt_run_result with, without, again;
    launch_and_check(prog, &with);
    sim_options o = {.values = 0};
    rt_set_options(dev, &o);
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &without), 0);
    CU_ASSERT_EQUAL(without.xfer.bytes_uploaded, xb);
    CU_ASSERT_EQUAL(without.xfer.bytes_uploaded, with.xfer.bytes_uploaded - with.xfer.weight_bytes_uploaded);
    CU_ASSERT(with.xfer.bytes_downloaded > 0);
    CU_ASSERT_EQUAL(without.xfer.bytes_downloaded, with.xfer.bytes_downloaded);
    CU_ASSERT_EQUAL(without.stats.cycles, with.stats.cycles);
    o.values = 1;
    o.detect_races = 1;
    rt_set_options(dev, &o);
    launch_and_check(prog, &again);
    CU_ASSERT_EQUAL(again.stats.cycles, with.stats.cycles);
    o.values = 0;
    rt_set_options(dev, &o);
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &without), 0);
    CU_ASSERT_EQUAL(without.stats.cycles, with.stats.cycles);
    CU_ASSERT_EQUAL(rt_fill_inputs(prog, 6, err, sizeof err), 0);
    o.values = 1;
    rt_set_options(dev, &o);
    launch_and_check(prog, &again);
    rt_close(dev);
}

static void test_small_dram_evicts_and_restores_weights(void)
{
    rt_device *dev = open_small();
    rt_program *g[2];
    g[0] = load(dev, mm_weights_program(1280));
    const uint64_t wb = rt_program_isa(g[0])->weight_bytes, xb = tensor_bytes(g[0], "X");
    CU_ASSERT_EQUAL(rt_fill_inputs(g[0], 10, err, sizeof err), 0);
    rt_run_result res;
    launch_and_check(g[0], &res);
    CU_ASSERT_EQUAL(res.xfer.weights_evicted, 0);

    /* Loading the second evicts the first's weights. */
    g[1] = load(dev, mm_weights_program(1280));
    CU_ASSERT_FALSE(rt_weights_resident(g[0]));
    CU_ASSERT_TRUE(rt_weights_resident(g[1]));
    CU_ASSERT_EQUAL(rt_fill_inputs(g[1], 11, err, sizeof err), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(rt_host_tensor(g[0], "W", NULL), rt_host_tensor(g[1], "W", NULL), 4096), 0);
    launch_and_check(g[1], &res);
    CU_ASSERT_EQUAL(res.xfer.weights_evicted, 1);
    CU_ASSERT_EQUAL(res.xfer.weight_bytes_evicted, wb);
    CU_ASSERT_EQUAL(res.xfer.weights_restored, 0);

    /* A weight read while evicted: its host copy in device precision. */
    uint64_t addr;
    CU_ASSERT_EQUAL(rt_tensor_addr(g[0], "W", &addr, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "weights are evicted"));
    float *w0 = malloc(wb * 2);
    const float *h0 = rt_host_tensor(g[0], "W", NULL);
    CU_ASSERT_EQUAL(rt_read_tensor(g[0], "W", w0, err, sizeof err), 0);
    size_t same = 0;
    for (size_t i = 0; i < wb / 2; i++)
        same += w0[i] == isa_dl16_round(h0[i]);
    CU_ASSERT_EQUAL(same, wb / 2);
    free(w0);

    for (int round = 0; round < 2; round++)
        for (int k = 0; k < 2; k++) {
            launch_and_check(g[k], &res);
            CU_ASSERT_TRUE(rt_weights_resident(g[k]));
            CU_ASSERT_FALSE(rt_weights_resident(g[1 - k]));
            CU_ASSERT_EQUAL(res.xfer.weights_evicted, 1);
            CU_ASSERT_EQUAL(res.xfer.weight_bytes_evicted, wb);
            CU_ASSERT_EQUAL(res.xfer.weights_restored, 1);
            CU_ASSERT_EQUAL(res.xfer.weight_bytes_restored, wb);
            CU_ASSERT_EQUAL(res.xfer.weight_bytes_uploaded, wb);
            CU_ASSERT_EQUAL(res.xfer.bytes_uploaded, wb + xb); /* X comes back from its host copy too */
            char line[1024];
            rt_run_format(&res, line, sizeof line);
            CU_ASSERT_PTR_NOT_NULL(strstr(line, "evicted=1 (655360 bytes) restored=1 (655360 bytes)"));
        }
    rt_transfer_stats tot;
    rt_device_transfers(dev, &tot);
    CU_ASSERT_EQUAL(tot.weights_evicted, 5);
    CU_ASSERT_EQUAL(tot.weights_restored, 4);
    CU_ASSERT_EQUAL(tot.weight_bytes_restored, 4 * wb);
    rt_close(dev);
}

/* Run A, B, C, A, B, C with room for two programs' weights: returns the
 * number of restorations, and the victims of the first two evictions made
 * by launches (program index, -1 for none) in victim[]. */
static int run_cycle(int with_schedule, int victim[2])
{
    rt_device *dev = open_small();
    rt_program *g[3];
    for (int i = 0; i < 3; i++) {
        g[i] = load(dev, mm_weights_program(768));
        CU_ASSERT_EQUAL(rt_fill_inputs(g[i], 20 + (uint64_t)i, err, sizeof err), 0);
    }
    /* Loading C evicted A (the least recently used; no schedule yet). */
    CU_ASSERT_FALSE(rt_weights_resident(g[0]));
    if (with_schedule)
        CU_ASSERT_EQUAL(rt_set_schedule(dev, g, 3, err, sizeof err), 0);
    int restored = 0, nv = 0;
    victim[0] = victim[1] = -1;
    for (int step = 0; step < 6; step++) {
        int was[3];
        for (int i = 0; i < 3; i++)
            was[i] = rt_weights_resident(g[i]);
        rt_run_result res;
        launch_and_check(g[step % 3], &res);
        restored += res.xfer.weights_restored;
        for (int i = 0; i < 3; i++)
            if (was[i] && !rt_weights_resident(g[i]) && nv < 2)
                victim[nv++] = i;
    }
    rt_close(dev);
    return restored;
}

static void test_belady_evicts_the_weights_used_furthest_ahead(void)
{
    int v[2];
    /* Schedule A, B, C: launching A evicts C (B runs next), launching C
     * evicts B (A runs next); B and A then find their weights resident. */
    int belady = run_cycle(1, v);
    CU_ASSERT_EQUAL(v[0], 2);
    CU_ASSERT_EQUAL(v[1], 1);
    CU_ASSERT_EQUAL(belady, 3);
    /* Without a schedule, least recently used: launching A evicts B, and
     * every launch then evicts the program that runs next. */
    int lru = run_cycle(0, v);
    CU_ASSERT_EQUAL(v[0], 1);
    CU_ASSERT_EQUAL(v[1], 2);
    CU_ASSERT_EQUAL(lru, 6);
}

static void test_schedule_names_only_loaded_programs(void)
{
    rt_device *dev = open4(), *other = open4();
    rt_program *a = load(dev, mm_weights_program(256)), *b = load(other, mm_weights_program(256));
    rt_program *order[2] = {a, b};
    CU_ASSERT_EQUAL(rt_set_schedule(dev, order, 2, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "entry 1 is not a program loaded on this device"));
    CU_ASSERT_EQUAL(rt_set_schedule(dev, order, 1, err, sizeof err), 0);
    rt_unload(a); /* drops it from the schedule */
    CU_ASSERT_EQUAL(rt_set_schedule(dev, NULL, 0, err, sizeof err), 0);
    rt_close(other);
    rt_close(dev);
}

/* Blocks the runtime cannot evict (rt_alloc) leave no room: a clear error
 * at load, and at launch (which then works once there is room). */
static void test_eviction_reports_when_nothing_can_make_room(void)
{
    rt_device *dev = open_small();
    uint64_t blk, freeb;
    CU_ASSERT_EQUAL(rt_alloc(dev, 512 << 10, &blk, err, sizeof err), 0);
    CU_ASSERT_PTR_NULL(rt_load_program(dev, mm_weights_program(1280), err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "load: weights region: rt_alloc: out of device DRAM: cannot allocate 655360"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no other program's weights are left to evict"));
    CU_ASSERT_EQUAL(rt_free(dev, blk), 0);
    rt_dram_usage(dev, &freeb, NULL);
    CU_ASSERT_EQUAL(freeb, 1 << 20); /* nothing leaked */

    rt_program *g = load(dev, mm_weights_program(1280));
    CU_ASSERT_EQUAL(rt_fill_inputs(g, 1, err, sizeof err), 0);
    rt_run_result res;
    launch_and_check(g, &res);
    rt_dram_usage(dev, &freeb, NULL);
    CU_ASSERT_EQUAL(freeb, (1 << 20) - 655360);
    CU_ASSERT_EQUAL(rt_alloc(dev, freeb - 8192, &blk, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_launch(g, &res), -1);
    CU_ASSERT_EQUAL(res.status, RT_RUN_FAULT);
    CU_ASSERT_EQUAL(res.fault.core, -1);
    char line[1024];
    rt_run_format(&res, line, sizeof line);
    CU_ASSERT(strncmp(line, "run: FAULT: activation region: rt_alloc: out of device DRAM: cannot allocate 24576 ", 83) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "no other program's weights are left to evict"));
    CU_ASSERT_EQUAL(rt_free(dev, blk), 0);
    launch_and_check(g, &res);
    rt_close(dev);
}

/* A weights region in the wrong place is refused at load. */
static void test_load_refuses_tensors_outside_their_region(void)
{
    rt_device *dev = open4();
    isa_program *p = mm_weights_program(256);
    p->tensors[1].role = ISA_ROLE_WEIGHT; /* X, in the activation region */
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "tensor X (weight): [131072, +4096) is not in the weights region"));
    p = mm_weights_program(256);
    p->weight_bytes += 128; /* X now starts inside the weights region */
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "tensor X (input)"));
    p = mm_weights_program(256);
    p->weight_bytes = p->dram_bytes + 128;
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "larger than the DRAM segment"));
    rt_close(dev);
}

/* A tensor table is user input: a tensor that does not start on a stick,
 * two tensors sharing bytes, or a weights region of part of a stick would
 * run and end as a wrong result; the load refuses them, naming them. */
static void test_load_refuses_unaligned_or_overlapping_tensors(void)
{
    rt_device *dev = open4();
    tspec ts[] = {{"X", ISA_ROLE_INPUT, ISA_T_DL16, 2, {4, 64}, -1},
                  {"Y", ISA_ROLE_OUTPUT, ISA_T_DL16, 2, {4, 64}, -1}};
    isa_program *p = build(ts, 2, NULL);
    p->tensors[1].dram_off = 64;
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "tensor Y: DRAM offset 64 is not a multiple of the 128-byte stick"));
    p = build(ts, 2, NULL);
    p->tensors[1].dram_off = 384; /* X is [0, +512) */
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "tensors X [0, +512) and Y [384, +512) overlap in DRAM"));
    p = build(ts, 2, NULL);
    p->tensors[0].dram_off = 512; /* the same bytes, the later one first in the table */
    p->tensors[1].dram_off = 512;
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "overlap in DRAM"));
    p = mm_weights_program(256);
    p->weight_bytes -= 64;
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "is not a whole number of 128-byte sticks"));
    p = build(ts, 2, NULL); /* the same tensors, placed apart: loads */
    rt_unload(load(dev, p));
    rt_close(dev);
}

/* The duplicate-name check sorts: a table of 200,000 tensors with one name
 * given twice is refused at once (pairwise it took minutes). */
static void test_load_finds_a_duplicate_among_many_tensors(void)
{
    rt_device *dev = open4();
    isa_program *p = isa_program_new(1);
    snprintf(p->config, sizeof p->config, "spyre-4core");
    p->lx_bytes = 262144;
    int64_t shape[2] = {1, 64};
    char name[32];
    for (int i = 0; i <= 200000; i++) {
        snprintf(name, sizeof name, "t%d", i == 200000 ? 123 : i);
        isa_program_add_tensor(p, name, ISA_ROLE_INPUT, ISA_HT_F32, ISA_T_DL16, 2, shape, (uint64_t)i * 128);
    }
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "tensor t123 is defined twice"));
    rt_close(dev);
}

/* --check compares every output or refuses: a value the graph computes
 * that the program holds as a weight or an input, or a program without
 * output tensors, is an error naming the tensor, never a silent pass. */
static void test_check_refuses_a_computed_value_held_as_data(void)
{
    rt_device *dev = open4();
    tspec ts[] = {{"A", ISA_ROLE_INPUT, ISA_T_DL16, 2, {4, 64}, -1},
                  {"B", ISA_ROLE_INPUT, ISA_T_DL16, 2, {64, 64}, -1},
                  {"C", ISA_ROLE_WEIGHT, ISA_T_DL16, 2, {4, 64}, -1}};
    const char *graphs[] = {"%C = aten.mm(%A, %B)\n",
                            "input %A: f32[4, 64]\ninput %B: f32[64, 64]\n"
                            "%C: f32[4, 64] = aten.mm.default(%A, %B)\noutput %C\n"};
    for (int i = 0; i < 2; i++) {
        rt_program *prog = load(dev, build(ts, 3, graphs[i]));
        CU_ASSERT_EQUAL_FATAL(rt_fill_inputs(prog, 1, err, sizeof err), 0);
        rt_check_result *r = NULL;
        int n = 0;
        CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), -1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "%C is computed by the graph (line "));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "the program's tensor C is a weight, not an output"));
        free(r);
        rt_unload(prog);
    }
    ts[2].role = ISA_ROLE_SCRATCH;
    rt_program *prog = load(dev, build(ts, 3, graphs[0]));
    CU_ASSERT_EQUAL_FATAL(rt_fill_inputs(prog, 1, err, sizeof err), 0);
    rt_check_result *r = NULL;
    int n = 0;
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no output tensor, so --check has nothing to compare"));
    free(r);
    rt_unload(prog);
    prog = load(dev, build(ts, 3, graphs[1]));
    CU_ASSERT_EQUAL_FATAL(rt_fill_inputs(prog, 1, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "output 0 of the graph, %C (graph line 3), is not an output tensor"));
    free(r);
    rt_unload(prog);
    rt_close(dev);
}

/* Elements whose tolerance is infinite pass, but the check proves nothing
 * of them: the line says how many (ViT-B/16's every output, its bounds
 * infinite after its first encoder block). */
static void test_a_check_with_infinite_tolerances_says_it_is_vacuous(void)
{
    rt_check_result r = {0};
    snprintf(r.name, sizeof r.name, "y");
    r.count = r.within = 4;
    r.vacuous = 3;
    r.ok = 1;
    char line[512];
    rt_check_format(&r, line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, " vacuous=3"));
    CU_ASSERT(ends_with(line, " ok"));
}

/* An index or count whose tolerance is infinite and which differs from
 * its reference is not "ok": the line says how many differ and ends in
 * "vacuous" (an argmax after nan_to_num's replaced infinities, whose
 * reference is float32's largest value). A float output is said vacuous=N
 * alone. */
static void test_an_integer_output_differing_where_vacuous_is_not_ok(void)
{
    float y[3] = {0, 3, 2};
    const float ref[3] = {0, 2, 2};
    double tol[3] = {0, INFINITY, INFINITY};
    rt_refval v = {.rank = 1, .shape = {3}, .val = ref, .tol = tol, .exact = 1};
    char line[512];
    for (int exact = 1; exact >= 0; exact--) {
        rt_check_result r = {0};
        snprintf(r.name, sizeof r.name, "am");
        v.exact = exact;
        rt_compare_values(ISA_HT_F32, y, &v, 3, &r);
        rt_check_format(&r, line, sizeof line);
        CU_ASSERT(r.ok);
        CU_ASSERT_EQUAL(r.differ, exact);
        CU_ASSERT(ends_with(line, exact ? " vacuous=2 differ=1 vacuous" : " vacuous=2 ok"));
    }
}

/* A reference DL16 cannot hold (lgamma(1e10) = 2.2e11 on the host, held as
 * the stand-in 2^29): the stand-ins themselves (2^29, nan_to_num's
 * ISA_DL16_TOP) are it, a value computed on from them from 2^30 on
 * (maximum(2^29, 2e9) = 2e9) is no "ok" but beyond=N vacuous; a small
 * one or of the other sign is a MISMATCH as before. */
static void test_a_value_beyond_dl16_not_held_as_its_stand_in_is_not_ok(void)
{
    const float ref[4] = {2.2e11f, -1e10f, -3.4e38f, 2.2e11f};
    double tol[4] = {1e8, 1e7, 1e35, 1e8};
    rt_refval v = {.rank = 1, .shape = {4}, .val = ref, .tol = tol};
    const float held[4] = {ISA_DL16_BIG, -ISA_DL16_TOP, -ISA_DL16_BIG, ISA_DL16_BIG};
    const float computed[4] = {2e9f, -ISA_DL16_BIG, -ISA_DL16_INF, ISA_DL16_BIG};
    const float wrong[4] = {2e9f, 5.0f, -ISA_DL16_BIG, ISA_DL16_BIG};
    const float *y[3] = {held, computed, wrong};
    const int beyond[3] = {0, 2, 1}, ok[3] = {1, 1, 0};
    const char *ends[3] = {" ok", " beyond=2 vacuous", " MISMATCH"};
    char line[512];
    for (int k = 0; k < 3; k++) {
        rt_check_result r = {0};
        snprintf(r.name, sizeof r.name, "m");
        rt_compare_values(ISA_HT_F32, y[k], &v, 4, &r);
        rt_check_format(&r, line, sizeof line);
        CU_ASSERT_EQUAL(r.ok, ok[k]);
        CU_ASSERT_EQUAL(r.beyond, beyond[k]);
        CU_ASSERT(ends_with(line, ends[k]));
        if (!ends_with(line, ends[k]))
            fprintf(stderr, "%s\n", line);
    }
}

int main(void)
{
    static const tu_test tests[] = {
        {"launch phases means the launches at each phase", test_launch_phases_means_the_launches_at_each_phase},
        {"alloc aligns every block to dram_align", test_alloc_aligns_every_block_to_dram_align},
        {"a check with infinite tolerances says it is vacuous", test_a_check_with_infinite_tolerances_says_it_is_vacuous},
        {"an integer output differing where vacuous is not ok", test_an_integer_output_differing_where_vacuous_is_not_ok},
        {"a value beyond DL16 not held as its stand-in is not ok", test_a_value_beyond_dl16_not_held_as_its_stand_in_is_not_ok},
        {"a timing-only launch counts the inputs it does not write",
         test_a_timing_only_launch_counts_the_inputs_it_does_not_write},
        {"alloc reuses a freed block", test_alloc_reuses_a_freed_block},
        {"alloc coalesces free neighbours", test_alloc_coalesces_free_neighbours},
        {"alloc exhaustion names request and largest block", test_alloc_exhaustion_names_request_and_largest_block},
        {"load refuses programs that do not fit the chip", test_load_refuses_programs_that_do_not_fit_the_chip},
        {"load writes constant data in device layout", test_load_writes_constant_data_in_device_layout},
        {"load zeroes outputs left by an earlier program", test_load_zeroes_outputs_left_by_an_earlier_program},
        {"layout round trip 2-D not multiple of 64", test_layout_round_trip_2d_not_multiple_of_64},
        {"layout round trip 1-D and scalar", test_layout_round_trip_1d_and_scalar},
        {"layout round trip 3-D any stick_dim", test_layout_round_trip_3d_any_stick_dim},
        {"layout round trip fp16 host input", test_layout_round_trip_fp16_host_input},
        {"layout round trip of a bf16 host input", test_layout_round_trip_bf16_host_input},
        {"layout puts elements where isa.h says", test_layout_puts_elements_where_isa_h_says},
        {"layout 1024x1024 converts in milliseconds", test_layout_1024x1024_converts_in_milliseconds},
        {"write and read name unknown tensors", test_write_and_read_name_unknown_tensors},
        {"random fill is seeded and reproducible", test_random_fill_is_seeded_and_reproducible},
        {"fill inputs writes inputs and weights only", test_fill_inputs_writes_inputs_and_weights_only},
        {"fill rounds fp16 host tensors to fp16", test_fill_rounds_fp16_host_tensors_to_fp16},
        {"input file loads raw fp32 and checks size", test_input_file_loads_raw_fp32_and_checks_size},
        {"check mm passes rounded and fails wrong output", test_check_mm_passes_rounded_and_fails_wrong_output},
        {"check mm tolerance is the documented formula", test_check_mm_tolerance_is_the_documented_formula},
        {"check softmax passes rounded and fails wrong output", test_check_softmax_passes_rounded_and_fails_wrong_output},
        {"check softmax tolerance is the documented formula", test_check_softmax_tolerance_is_the_documented_formula},
        {"check reports graph errors with line numbers", test_check_reports_graph_errors_with_line_numbers},
        {"check chains graph lines", test_check_chains_graph_lines},
        {"launch runs a DMA copy on the simulator", test_launch_runs_a_dma_copy_on_the_simulator},
        {"launch uploads the inputs written since the last", test_launch_uploads_the_inputs_written_since_the_last},
        {"launch writes a kept input again once its device bytes were overwritten",
         test_launch_writes_a_kept_input_again_once_its_device_bytes_were_overwritten},
        {"launch reports a fault with core, unit and index", test_launch_reports_a_fault_with_core_unit_and_index},
        {"weights stay resident across launches", test_weights_stay_resident_across_launches},
        {"activations are freed after each launch", test_activations_are_freed_after_each_launch},
        {"small DRAM evicts and restores weights", test_small_dram_evicts_and_restores_weights},
        {"Belady evicts the weights used furthest ahead", test_belady_evicts_the_weights_used_furthest_ahead},
        {"schedule names only loaded programs", test_schedule_names_only_loaded_programs},
        {"eviction reports when nothing can make room", test_eviction_reports_when_nothing_can_make_room},
        {"load refuses tensors outside their region", test_load_refuses_tensors_outside_their_region},
        {"load refuses unaligned or overlapping tensors", test_load_refuses_unaligned_or_overlapping_tensors},
        {"check refuses a computed value held as data", test_check_refuses_a_computed_value_held_as_data},
        {"load finds a duplicate among many tensors", test_load_finds_a_duplicate_among_many_tensors},
        {NULL, NULL},
    };
    return tu_run("runtime", tests);
}
