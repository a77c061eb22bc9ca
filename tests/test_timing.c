/* test_timing.c: the simulator's time: latency models, overlap of units
 * and cores, determinism, timing-only runs, hazard and deadlock detection,
 * the trace and the statistics files. */
#include <CUnit/CUnit.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"
#include "sim.h"
#include "testutil.h"

static chip_config cfg4;

static isa_insn *load(isa_program *p, int core, int64_t lx, int64_t dram, int64_t sticks)
{
    isa_insn *in = tu_emit(p, core, ISA_OP_DMA_LD);
    isa_set_off(&in->d, lx);
    isa_set_off(&in->a, dram);
    isa_set(in, run, sticks);
    return in;
}

/* Run and return cycles, or -1 on a fault (message in f). */
static double run_cycles(isa_program *p, sim_fault *f)
{
    sim *s = sim_create(&cfg4);
    sim_stats *st = malloc(sizeof *st);
    double c = sim_run(s, p, 0, st, f) ? -1 : st->cycles;
    free(st);
    sim_destroy(s);
    return c;
}

/* Halt every core of p, run it and free it: its cycles, -1 on a fault. */
static double halt_run_free(isa_program *p)
{
    tu_halt_all(p);
    sim_fault f;
    double c = run_cycles(p, &f);
    isa_program_free(p);
    return c;
}

static void test_pt_latency_counts_passes_of_rows_and_k(void)
{
    isa_program *p = tu_prog_new(cfg4.cores, 4 << 20);
    isa_insn *mm = tu_emit(p, 0, ISA_OP_PT_MM);
    mm->m = 64;
    mm->nn = 64;
    mm->k = 128;
    mm->a.off = 0;
    mm->as[0] = 64 * 128;
    mm->b.off = 0x10000;
    mm->d.off = 0x20000;
    tu_halt_all(p);
    sim_fault f;
    double passes = 64.0 / cfg4.pt_rows, cols = ceil(64.0 / (cfg4.pt_cols * cfg4.pt_lanes));
    CU_ASSERT_DOUBLE_EQUAL(run_cycles(p, &f),
                           cfg4.pt_issue_cycles + cfg4.pt_fill_cycles + passes * cols * 128 * cfg4.pt_k_step_cycles, 1e-9);
    isa_program_free(p);
}

static double sfp_cycles(int op)
{
    isa_program *p = tu_prog_new(cfg4.cores, 4 << 20);
    isa_insn *in = tu_emit(p, 0, op);
    in->n[0] = 100;
    in->as[0] = 128;
    in->ds[0] = 128;
    in->d.off = 0x10000;
    return halt_run_free(p);
}

static void test_sfp_cost_is_per_stick_and_higher_for_transcendentals(void)
{
    double add = sfp_cycles(ISA_OP_SFP_RELU), ex = sfp_cycles(ISA_OP_SFP_EXP);
    CU_ASSERT_DOUBLE_EQUAL(add, cfg4.sfp_issue_cycles + 100 * cfg4.sfp_simple_cycles, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(ex, cfg4.sfp_issue_cycles + 100 * cfg4.sfp_complex_cycles, 1e-9);
    CU_ASSERT(ex > add);
}

/* Cycles for one core, or two cores at once, each loading `sticks`. */
static double dma_cycles(int cores, int64_t sticks)
{
    isa_program *p = tu_prog_new(cfg4.cores, 4 << 20);
    for (int c = 0; c < cores; c++)
        load(p, 2 * c, 0, (int64_t)c << 20, sticks);
    return halt_run_free(p);
}

static void test_small_dmas_on_two_cores_overlap(void)
{
    double t1 = dma_cycles(1, 4), t2 = dma_cycles(2, 4);
    CU_ASSERT(t1 > cfg4.dma_issue_cycles);
    CU_ASSERT(t2 >= t1);
    CU_ASSERT(t2 < 1.2 * t1); /* latency-bound: they run side by side */
}

static void test_large_dmas_share_dram_bandwidth(void)
{
    double t1 = dma_cycles(1, 512), t2 = dma_cycles(2, 512);
    double gbs1 = 65536.0 / (t1 / cfg4.clock_ghz); /* bytes per ns = GB/s */
    CU_ASSERT(gbs1 > 100 && gbs1 < 205); /* one 64 KB load streams near the DRAM rate */
    CU_ASSERT(t2 > 1.7 * t1);             /* two of them split it */
}

static void test_token_makes_pt_wait_for_dma(void)
{
    sim_fault f;
    isa_program *a = tu_prog_new(cfg4.cores, 4 << 20);
    load(a, 0, 0, 0, 512);
    tu_halt_all(a);
    double dma = run_cycles(a, &f);
    isa_program *b = tu_prog_new(cfg4.cores, 4 << 20);
    load(b, 0, 0, 0, 512);
    tu_sync(b, 0, ISA_OP_SIG, ISA_U_DMAI, 3);
    tu_sync(b, 0, ISA_OP_WAIT, ISA_U_PT0, 3);
    isa_insn *mm = tu_emit(b, 0, ISA_OP_PT_MM);
    mm->m = 64;
    mm->nn = 64;
    mm->k = 64;
    mm->b.off = 0x8000;
    mm->d.off = 0x20000;
    tu_halt_all(b);
    double both = run_cycles(b, &f);
    double pt = cfg4.pt_issue_cycles + cfg4.pt_fill_cycles + 8 * 64 * cfg4.pt_k_step_cycles;
    CU_ASSERT_DOUBLE_EQUAL(both, dma + 2 * cfg4.sync_cycles + pt, 1.0);
    isa_program_free(a);
    isa_program_free(b);
}

/* Cycles of a 64 KB load on core 0 (16 channels, 4 KB each: each channel
 * meets at most one refresh) on chip c, with the launch refresh_phase_ns
 * into the refresh schedule; with set 0 the simulator's own defaults. */
static double load_cycles(const chip_config *c, int set, double phase)
{
    isa_program *p = tu_prog_new(c->cores, 4 << 20);
    load(p, 0, 0, 0, 512);
    tu_halt_all(p);
    sim *s = sim_create(c);
    sim_options o = {.values = 1, .detect_races = 1, .refresh_phase_ns = phase};
    if (set)
        sim_set_options(s, &o);
    sim_stats *st = malloc(sizeof *st);
    sim_fault f;
    double cyc = sim_run(s, p, 0, st, &f) ? -1 : st->cycles;
    free(st);
    sim_destroy(s);
    isa_program_free(p);
    return cyc;
}

static void test_refresh_phase_moves_when_a_refresh_meets_the_reads(void)
{
    chip_config off = cfg4; /* no refresh within the run */
    off.dram_trefi_ns = 1e8;
    const double none = load_cycles(&off, 0, 0), at0 = load_cycles(&cfg4, 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(load_cycles(&cfg4, 1, 0), at0, 0); /* phase 0 is the default schedule */
    /* one refresh on a channel costs at most tRFC plus closing and reopening its rows */
    const double one = (cfg4.dram_trfc_ns + (cfg4.dram_rp_all + cfg4.dram_rcd + cfg4.dram_cl) * cfg4.dram_tck_ns) *
                       cfg4.clock_ghz;
    double lo = INFINITY, hi = 0;
    for (int k = 0; k < 64; k++) {
        double c = load_cycles(&cfg4, 1, k * cfg4.dram_trefi_ns / 64);
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
        CU_ASSERT(c >= none && c <= none + one);
    }
    CU_ASSERT(hi > lo + cfg4.dram_trfc_ns * cfg4.clock_ghz / 2); /* some phase puts a refresh in the reads' way */
    CU_ASSERT_DOUBLE_EQUAL(lo, none, 0);                        /* and some none */
    /* a phase outside one interval is a fault, not a silent wrap */
    CU_ASSERT_EQUAL(load_cycles(&cfg4, 1, cfg4.dram_trefi_ns), -1);
    CU_ASSERT_EQUAL(load_cycles(&cfg4, 1, -1), -1);
}

/* A small GEMM on every core of spyre-4core. */
static isa_program *small_gemm(void)
{
    char err[256];
    cc_gen_opts every = {cfg4.cores, 1};
    isa_program *p = cc_gen_gemm_opts(&cfg4, 200, 130, 300, &every, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

static void fill_inputs(sim *s, const isa_program *p)
{
    for (size_t t = 0; t < p->ntensors; t++) {
        const isa_tensor *ten = &p->tensors[t];
        if (ten->role != ISA_ROLE_INPUT)
            continue;
        uint16_t *buf = malloc(ten->bytes);
        for (uint64_t i = 0; i < ten->bytes / 2; i++)
            buf[i] = isa_dl16_from_f32((float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f);
        sim_dram_write(s, ten->dram_off, buf, ten->bytes);
        free(buf);
    }
}

static void test_same_program_same_cycles_and_bits(void)
{
    isa_program *p = small_gemm();
    int c = isa_program_find_tensor(p, "C");
    const isa_tensor *C = &p->tensors[c];
    uint8_t *out[2];
    double cycles[2];
    for (int r = 0; r < 2; r++) {
        sim *s = sim_create(&cfg4);
        fill_inputs(s, p);
        sim_stats *st = malloc(sizeof *st);
        sim_fault f;
        CU_ASSERT_EQUAL_FATAL(sim_run(s, p, 0, st, &f), 0);
        cycles[r] = st->cycles;
        out[r] = malloc(C->bytes);
        sim_dram_read(s, C->dram_off, out[r], C->bytes);
        free(st);
        sim_destroy(s);
    }
    CU_ASSERT_EQUAL(cycles[0], cycles[1]);
    CU_ASSERT(cycles[0] > 0);
    CU_ASSERT_EQUAL(memcmp(out[0], out[1], C->bytes), 0);
    free(out[0]);
    free(out[1]);
    isa_program_free(p);
}

static void test_timing_only_run_has_the_same_time_and_traffic(void)
{
    isa_program *p = small_gemm();
    sim_stats *st[2];
    for (int r = 0; r < 2; r++) {
        sim *s = sim_create(&cfg4);
        sim_options o = {.values = r == 0, .detect_races = 1, .trace = SIM_TRACE_OFF};
        sim_set_options(s, &o);
        st[r] = malloc(sizeof *st[r]);
        sim_fault f;
        CU_ASSERT_EQUAL_FATAL(sim_run(s, p, 0, st[r], &f), 0);
        sim_destroy(s);
    }
    CU_ASSERT_EQUAL(st[0]->cycles, st[1]->cycles);
    CU_ASSERT_EQUAL(st[0]->macs, st[1]->macs);
    CU_ASSERT_EQUAL(st[0]->dram_bytes_read, st[1]->dram_bytes_read);
    CU_ASSERT(st[0]->macs >= 200ull * 130 * 300);
    free(st[0]);
    free(st[1]);
    isa_program_free(p);
}

static void expect_fault(isa_program *p, int core, const char *a, const char *b)
{
    sim_fault f;
    CU_ASSERT_EQUAL(run_cycles(p, &f), -1);
    CU_ASSERT_EQUAL(f.core, core);
    if (!strstr(f.msg, a) || !strstr(f.msg, b))
        fprintf(stderr, "\nfault '%s' lacks '%s' or '%s'\n", f.msg, a, b);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, a));
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, b));
    isa_program_free(p);
}

static isa_program *dma_then_exp(int ordered)
{
    isa_program *p = tu_prog_new(cfg4.cores, 4 << 20);
    load(p, 1, 0x400, 0, 2);
    if (ordered) {
        tu_sync(p, 1, ISA_OP_SIG, ISA_U_DMAI, 0);
        tu_sync(p, 1, ISA_OP_WAIT, ISA_U_SFP0, 0);
    }
    isa_insn *ex = tu_emit(p, 1, ISA_OP_SFP_EXP);
    ex->a.off = 0x480;
    ex->d.off = 0x1000;
    tu_halt_all(p);
    return p;
}

static void test_unordered_dma_and_sfp_on_same_lx_is_a_race(void)
{
    expect_fault(dma_then_exp(0), 1, "race: core 1 sfp0 #1 reads core 1's LX", "dmai #0 wrote");
}

static void test_token_ordering_removes_the_race(void)
{
    isa_program *p = dma_then_exp(1);
    sim_fault f;
    CU_ASSERT(run_cycles(p, &f) > 0);
    isa_program_free(p);
}

/* Core 0 stores, core 3 loads the same DRAM; between them on every core
 * nothing (0), a barrier (ISA_OP_BAR) or a fence (ISA_OP_FENCE). */
static isa_program *store_then_load(int between)
{
    isa_program *p = tu_prog_new(cfg4.cores, 4 << 20);
    isa_insn *st = tu_emit(p, 0, ISA_OP_DMA_ST);
    st->d.off = 0x3000;
    st->run = 4;
    if (between)
        for (int c = 0; c < p->ncores; c++)
            tu_emit(p, c, between);
    load(p, 3, 0, 0x3100, 1);
    tu_halt_all(p);
    return p;
}

static void test_cores_sharing_dram_without_barrier_race(void)
{
    expect_fault(store_then_load(0), 3, "race: core 3 dmai", "reads DRAM");
    isa_program *p = store_then_load(ISA_OP_BAR);
    sim_fault f;
    CU_ASSERT(run_cycles(p, &f) > 0);
    isa_program_free(p);
}

/* A fence orders only its own core's units: the load of another core's
 * store is still a race (a kernel boundary across cores needs a bar). */
static void test_a_fence_does_not_order_other_cores(void)
{
    expect_fault(store_then_load(ISA_OP_FENCE), 3, "race: core 3 dmai", "that core 0 dmao #0 wrote, with no token, fence or barrier");
}

/* Two 100-stick SFP ops on the two corelets of core 0: they overlap, but
 * with a fence between them the second is dispatched sync_cycles after
 * the first completes. */
static double sfp_pair_cycles(int fence)
{
    isa_program *p = tu_prog_new(cfg4.cores, 4 << 20);
    for (int c = 0; c < 2; c++) {
        if (c && fence)
            tu_emit(p, 0, ISA_OP_FENCE);
        isa_insn *in = tu_emit(p, 0, ISA_OP_SFP_RELU);
        isa_set(in, c, c);
        in->n[0] = 100;
        in->as[0] = in->ds[0] = 128;
        in->a.off = c * 0x10000;
        in->d.off = 0x20000 + c * 0x10000;
    }
    return halt_run_free(p);
}

static void test_a_fence_holds_dispatch_until_the_cores_units_are_idle(void)
{
    const double one = cfg4.sfp_issue_cycles + 100 * cfg4.sfp_simple_cycles;
    CU_ASSERT_DOUBLE_EQUAL(sfp_pair_cycles(0), cfg4.seq_issue_cycles + one, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(sfp_pair_cycles(1), 2 * one + cfg4.sync_cycles, 1e-9);
}

static void test_race_check_off_after_a_checked_run_reports_nothing(void)
{
    sim *s = sim_create(&cfg4);
    sim_stats *st = malloc(sizeof *st);
    sim_fault f;
    isa_program *clean = dma_then_exp(1), *racy = dma_then_exp(0);
    CU_ASSERT_EQUAL(sim_run(s, clean, 0, st, &f), 0);
    sim_options off = {.values = 1, .detect_races = 0, .trace = SIM_TRACE_OFF};
    sim_set_options(s, &off);
    CU_ASSERT_EQUAL(sim_run(s, racy, 0, st, &f), 0);
    sim_options on = {.values = 1, .detect_races = 1, .trace = SIM_TRACE_OFF};
    sim_set_options(s, &on);
    CU_ASSERT_EQUAL(sim_run(s, racy, 0, st, &f), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, "race"));
    CU_ASSERT_EQUAL(sim_run(s, clean, 0, st, &f), 0);
    isa_program_free(clean);
    isa_program_free(racy);
    free(st);
    sim_destroy(s);
}

static void test_disjoint_bytes_of_one_stick_do_not_race(void)
{
    /* two SFP units write different elements of one stick concurrently */
    isa_program *p = tu_prog_new(cfg4.cores, 4 << 20);
    for (int c = 0; c < 2; c++) {
        isa_insn *r = tu_emit(p, 0, ISA_OP_SFP_RMAX);
        isa_set(r, c, c);
        r->flags = ISA_F_LANES;
        r->a.off = 0x800 * c;
        r->d.off = 0x4000 + 2 * c;
    }
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT(run_cycles(p, &f) > 0);
    isa_program_free(p);
}

static void test_deadlock_lists_every_waiting_unit(void)
{
    isa_program *p = tu_prog_new(cfg4.cores, 4 << 20);
    tu_sync(p, 2, ISA_OP_WAIT, ISA_U_DMAI, 1);
    tu_sync(p, 2, ISA_OP_SIG, ISA_U_DMAI, 2);
    tu_sync(p, 2, ISA_OP_WAIT, ISA_U_PT0, 2);
    tu_sync(p, 2, ISA_OP_SIG, ISA_U_PT0, 1);
    tu_halt_all(p);
    sim_fault f;
    CU_ASSERT_EQUAL(run_cycles(p, &f), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, "deadlock"));
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, "core 2 dmai #0 waits on token 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(f.msg, "core 2 pt0 #2 waits on token 2"));
    isa_program_free(p);
}

typedef struct {
    double ts, end;
} slice;

static int by_ts(const void *a, const void *b)
{
    const slice *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Checks the trace parses, has X slices (on the cores' unit tracks and,
 * on the chip's, the posted writes' drain), no two on one track overlap
 * and the last ends at the run's cycles; returns the number of slices. */
static int check_trace(const char *path, double cycles)
{
    cJSON *j = tu_read_json(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    cJSON *ev = cJSON_GetObjectItem(j, "traceEvents");
    CU_ASSERT_FATAL(cJSON_IsArray(ev));
    enum { TRACKS = 4 * ISA_NUNITS + 1 };
    double last = 0;
    slice *tr[TRACKS] = {0};
    int n[TRACKS] = {0}, total = 0, counters = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const char *ph = cJSON_GetStringValue(cJSON_GetObjectItem(e, "ph"));
        CU_ASSERT_PTR_NOT_NULL_FATAL(ph);
        if (!strcmp(ph, "C"))
            counters++;
        if (strcmp(ph, "X"))
            continue;
        int pid = cJSON_GetObjectItem(e, "pid")->valueint, tid = cJSON_GetObjectItem(e, "tid")->valueint;
        CU_ASSERT_FATAL(pid >= 0 && pid <= 4 && tid >= 0 && tid < (pid < 4 ? ISA_NUNITS : 1));
        int k = pid * ISA_NUNITS + tid;
        tr[k] = realloc(tr[k], (size_t)(n[k] + 1) * sizeof(slice));
        double ts = cJSON_GetObjectItem(e, "ts")->valuedouble, dur = cJSON_GetObjectItem(e, "dur")->valuedouble;
        CU_ASSERT(dur >= 0);
        tr[k][n[k]++] = (slice){ts, ts + dur};
        last = ts + dur > last ? ts + dur : last;
        total++;
    }
    int overlaps = 0;
    for (int k = 0; k < TRACKS; k++) {
        if (n[k])
            qsort(tr[k], (size_t)n[k], sizeof(slice), by_ts);
        for (int i = 1; i < n[k]; i++)
            if (tr[k][i].ts < tr[k][i - 1].end - 1e-9 * (1 + tr[k][i].ts))
                overlaps++;
        free(tr[k]);
    }
    CU_ASSERT_EQUAL(overlaps, 0);
    CU_ASSERT(counters > 0);
    CU_ASSERT_DOUBLE_EQUAL(last * cfg4.clock_ghz * 1000, cycles, 0.01);
    cJSON_Delete(j);
    return total;
}

static void test_trace_parses_and_slices_on_a_track_never_overlap(void)
{
    isa_program *p = small_gemm();
    int slices[2];
    for (int lvl = 0; lvl < 2; lvl++) {
        sim *s = sim_create(&cfg4);
        sim_options o = {.values = 1, .detect_races = 1, .trace = lvl ? SIM_TRACE_KERNEL : SIM_TRACE_INSN};
        sim_set_options(s, &o);
        sim_stats *st = malloc(sizeof *st);
        sim_fault f;
        CU_ASSERT_EQUAL_FATAL(sim_run(s, p, 0, st, &f), 0);
        char path[512], err[256];
        tu_tmpfile(".json", path, sizeof path);
        CU_ASSERT_EQUAL_FATAL(sim_write_trace(s, p, path, err, sizeof err), 0);
        slices[lvl] = check_trace(path, st->cycles);
        remove(path);
        if (lvl == 0)
            CU_ASSERT(slices[0] >= (int)st->insns); /* every unit instruction, plus waits and signals */
        free(st);
        sim_destroy(s);
    }
    CU_ASSERT(slices[0] > 0);
    CU_ASSERT(slices[1] > 0);
    CU_ASSERT(slices[1] < slices[0]); /* a slice per kernel per unit, not per instruction */
    isa_program_free(p);
}

static void test_stats_json_has_the_documented_keys(void)
{
    isa_program *p = small_gemm();
    sim *s = sim_create(&cfg4);
    sim_stats *st = malloc(sizeof *st);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(sim_run(s, p, 0, st, &f), 0);
    char path[512], err[256];
    tu_tmpfile(".json", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(sim_write_stats_json(st, &cfg4, path, err, sizeof err), 0);
    cJSON *j = tu_read_json(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItem(j, "cycles")->valuedouble, st->cycles, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItem(j, "time_us")->valuedouble, st->cycles / (cfg4.clock_ghz * 1000), 1e-3);
    double util = cJSON_GetObjectItem(j, "mac_utilization")->valuedouble;
    CU_ASSERT(util > 0 && util <= 1);
    CU_ASSERT_EQUAL((uint64_t)cJSON_GetObjectItem(j, "dram_bytes_read")->valuedouble, st->dram_bytes_read);
    CU_ASSERT_EQUAL((uint64_t)cJSON_GetObjectItem(j, "dram_bytes_written")->valuedouble, st->dram_bytes_written);
    CU_ASSERT(st->dram_bytes_written >= 200ull * 130 * 2);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(j, "cores")), cfg4.cores);
    CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItem(j, "dram_bus_data")->valuedouble, sim_stats_dram_bus(st, &cfg4, 0), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItem(j, "dram_bus_mix")->valuedouble, sim_stats_dram_bus(st, &cfg4, 1), 1e-6);
    cJSON_Delete(j);
    remove(path);
    free(st);
    sim_destroy(s);
    isa_program_free(p);
}

/* The DRAM bus time the report gives is the bursts the bytes moved take
 * (every access here is whole sticks, so whole bursts; a GEMM's last
 * writes may still wait in the write buffers), none of it for read/write
 * interleaving when only reads run; its share of the run is that time
 * over the run's time on every channel. */
static void test_dram_bus_time_is_the_bursts_the_bytes_take(void)
{
    const double burst_ns = cfg4.dram_burst_tck * cfg4.dram_tck_ns;
    isa_program *ps[2] = {tu_prog_new(cfg4.cores, 4 << 20), small_gemm()};
    load(ps[0], 0, 0, 0, 512);
    tu_halt_all(ps[0]);
    for (int i = 0; i < 2; i++) {
        sim *s = sim_create(&cfg4);
        sim_stats *st = malloc(sizeof *st);
        sim_fault f;
        CU_ASSERT_EQUAL_FATAL(sim_run(s, ps[i], 0, st, &f), 0);
        const double bytes = (double)(st->dram_bytes_read + st->dram_bytes_written);
        CU_ASSERT(bytes >= 65536);
        if (i == 0) {
            CU_ASSERT_DOUBLE_EQUAL(st->dram_data_ns, bytes / cfg4.dram_burst_bytes * burst_ns, 1e-6 * st->dram_data_ns);
            CU_ASSERT_EQUAL(st->dram_mix_ns, 0);
        } else { /* writes still in the controllers' buffers at the end are not on the bus yet */
            CU_ASSERT(st->dram_data_ns <= bytes / cfg4.dram_burst_bytes * burst_ns * (1 + 1e-9));
            CU_ASSERT(st->dram_data_ns >= (double)st->dram_bytes_read / cfg4.dram_burst_bytes * burst_ns * (1 - 1e-9));
        }
        const double share = sim_stats_dram_bus(st, &cfg4, 0), run_ns = st->cycles / cfg4.clock_ghz;
        CU_ASSERT_DOUBLE_EQUAL(share, st->dram_data_ns / (run_ns * cfg4.dram_channels), 1e-9);
        CU_ASSERT(share > 0 && share < 1);
        CU_ASSERT_DOUBLE_EQUAL(sim_stats_dram_bus(st, &cfg4, 1), st->dram_mix_ns / (run_ns * cfg4.dram_channels), 1e-9);
        free(st);
        sim_destroy(s);
        isa_program_free(ps[i]);
    }
}

/* A kernel's core_span is the longest one core ran it: named per core
 * (one name per core, so each entry's end - start is that core's own
 * span) the same program gives the same timing, and the largest of those
 * spans is the shared name's core_span, at most its end - start. */
static void test_kernel_core_span_is_the_longest_core_span(void)
{
    isa_program *p = small_gemm();
    sim *s = sim_create(&cfg4);
    sim_stats *st = malloc(sizeof *st);
    sim_fault f;
    double longest = 0;
    p->nkernels = 0;
    for (int c = 0; c < p->ncores; c++) {
        char name[32];
        snprintf(name, sizeof name, "core%d", c);
        isa_program_add_kernel(p, name, c, 0, (long)p->cores[c].n - 1);
    }
    CU_ASSERT_EQUAL_FATAL(sim_run(s, p, 0, st, &f), 0);
    const double cycles = st->cycles;
    for (int k = 0; k < st->nkernels; k++) {
        const sim_kernel_stats *ks = &st->kernels[k];
        CU_ASSERT_DOUBLE_EQUAL(ks->core_span, ks->end - ks->start, 1e-9);
        longest = ks->core_span > longest ? ks->core_span : longest;
    }
    p->nkernels = 0;
    for (int c = 0; c < p->ncores; c++)
        isa_program_add_kernel(p, "all", c, 0, (long)p->cores[c].n - 1);
    CU_ASSERT_EQUAL_FATAL(sim_run(s, p, 0, st, &f), 0);
    CU_ASSERT_EQUAL(st->cycles, cycles);
    const sim_kernel_stats *all = sim_stats_kernel(st, "all");
    CU_ASSERT_PTR_NOT_NULL_FATAL(all);
    CU_ASSERT(longest > 0);
    CU_ASSERT_DOUBLE_EQUAL(all->core_span, longest, 1e-9);
    CU_ASSERT(all->core_span <= all->end - all->start);
    free(st);
    sim_destroy(s);
    isa_program_free(p);
}

/* Per-kernel figures: a kernel name is aggregated over cores, and the
 * kernels' MACs, DRAM bytes and busy cycles add up to the run's. */
static void test_kernel_stats_add_up_to_the_run(void)
{
    isa_program *p = small_gemm();
    p->nkernels = 0;
    for (int c = 0; c < p->ncores; c++) {
        long n = (long)p->cores[c].n;
        CU_ASSERT_FATAL(n >= 2);
        isa_program_add_kernel(p, "first_half", c, 0, n / 2 - 1);
        isa_program_add_kernel(p, "second_half", c, n / 2, n - 1);
    }
    sim *s = sim_create(&cfg4);
    sim_stats *st = malloc(sizeof *st);
    sim_fault f;
    CU_ASSERT_EQUAL_FATAL(sim_run(s, p, 0, st, &f), 0);
    CU_ASSERT_EQUAL_FATAL(st->nkernels, 2);
    const sim_kernel_stats *a = sim_stats_kernel(st, "first_half"), *b = sim_stats_kernel(st, "second_half");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_PTR_NULL(sim_stats_kernel(st, "nope"));
    CU_ASSERT_EQUAL(a->macs + b->macs, st->macs);
    CU_ASSERT_EQUAL(a->dram_bytes + b->dram_bytes, st->dram_bytes_read + st->dram_bytes_written);
    double busy = 0;
    for (int c = 0; c < cfg4.cores; c++)
        for (int u = 0; u < ISA_NUNITS; u++)
            busy += st->unit_busy[c][u];
    CU_ASSERT_DOUBLE_EQUAL(a->busy + b->busy, busy, 1e-6 * busy + 1e-6);
    CU_ASSERT(a->start >= 0 && a->start < a->end && a->end <= st->cycles);
    CU_ASSERT(b->start > a->start && b->start < b->end && b->end <= st->cycles);
    CU_ASSERT(a->insns + b->insns >= st->insns); /* waits and signals count too */
    free(st);
    sim_destroy(s);
    isa_program_free(p);
}

int main(void)
{
    tu_config("spyre-4core", &cfg4);
    static const tu_test tests[] = {
        {"pt_latency_counts_passes_of_rows_and_k", test_pt_latency_counts_passes_of_rows_and_k},
        {"sfp_cost_is_per_stick_and_higher_for_transcendentals", test_sfp_cost_is_per_stick_and_higher_for_transcendentals},
        {"small_dmas_on_two_cores_overlap", test_small_dmas_on_two_cores_overlap},
        {"large_dmas_share_dram_bandwidth", test_large_dmas_share_dram_bandwidth},
        {"token_makes_pt_wait_for_dma", test_token_makes_pt_wait_for_dma},
        {"refresh_phase_moves_when_a_refresh_meets_the_reads", test_refresh_phase_moves_when_a_refresh_meets_the_reads},
        {"same_program_same_cycles_and_bits", test_same_program_same_cycles_and_bits},
        {"timing_only_run_has_the_same_time_and_traffic", test_timing_only_run_has_the_same_time_and_traffic},
        {"unordered_dma_and_sfp_on_same_lx_is_a_race", test_unordered_dma_and_sfp_on_same_lx_is_a_race},
        {"token_ordering_removes_the_race", test_token_ordering_removes_the_race},
        {"cores_sharing_dram_without_barrier_race", test_cores_sharing_dram_without_barrier_race},
        {"a_fence_does_not_order_other_cores", test_a_fence_does_not_order_other_cores},
        {"a_fence_holds_dispatch_until_the_cores_units_are_idle", test_a_fence_holds_dispatch_until_the_cores_units_are_idle},
        {"disjoint_bytes_of_one_stick_do_not_race", test_disjoint_bytes_of_one_stick_do_not_race},
        {"race_check_off_after_a_checked_run_reports_nothing", test_race_check_off_after_a_checked_run_reports_nothing},
        {"deadlock_lists_every_waiting_unit", test_deadlock_lists_every_waiting_unit},
        {"trace_parses_and_slices_on_a_track_never_overlap", test_trace_parses_and_slices_on_a_track_never_overlap},
        {"stats_json_has_the_documented_keys", test_stats_json_has_the_documented_keys},
        {"dram_bus_time_is_the_bursts_the_bytes_take", test_dram_bus_time_is_the_bursts_the_bytes_take},
        {"kernel_stats_add_up_to_the_run", test_kernel_stats_add_up_to_the_run},
        {"kernel_core_span_is_the_longest_core_span", test_kernel_core_span_is_the_longest_core_span},
        {NULL, NULL},
    };
    return tu_run("timing", tests);
}
