/* test_dram.c: the LPDDR5 timing model (sim/dram.c): address map and
 * segmentation, row hit / miss / conflict latencies, channel overlap,
 * turnaround, refresh, the calibrated streaming bandwidths, determinism
 * and host cost.  Expected latencies are written from the configuration's
 * timings so that the tests say which JEDEC terms each case pays. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dram.h"
#include "testutil.h"

static sim_config cfg;
static double tck;

#define NEAR(a, b) CU_ASSERT_DOUBLE_EQUAL((a), (b), 1e-6)

static sim_dram *fresh(void)
{
    sim_dram *d = sim_dram_new(&cfg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    return d;
}

/* Bytes a test access moves on its channel: one interleave granule. */
static uint64_t gran(void)
{
    return cfg.dram_interleave_bytes;
}

static uint64_t bursts(uint64_t bytes)
{
    return bytes / cfg.dram_burst_bytes;
}

/* Address of the k-th granule of channel c (k counts along the channel). */
static uint64_t chan_addr(int c, uint64_t k)
{
    return (k * (uint64_t)cfg.dram_channels + (uint64_t)c) * gran();
}

/* A granule of channel c in the same bank as chan_addr(c, 0) but another
 * row (the map rotates banks by row, so search for one). */
static uint64_t other_row_same_bank(const sim_dram *d, int c)
{
    sim_dram_loc a = sim_dram_map(d, chan_addr(c, 0));
    uint64_t per_row = cfg.dram_row_bytes / gran();
    for (uint64_t k = per_row;; k += per_row) {
        sim_dram_loc b = sim_dram_map(d, chan_addr(c, k));
        if (b.bank_group == a.bank_group && b.bank == a.bank && b.row != a.row)
            return chan_addr(c, k);
    }
}

/* Latency of a lone granule on a bank group with nothing else in flight:
 * the data of one bank group streams at one burst per tCCD. */
static double stream_ns(uint64_t bytes)
{
    double per = fmax(cfg.dram_ccd, cfg.dram_burst_tck);
    return (double)bursts(bytes) * per * tck;
}

/* ---- address map ---- */

static void test_map_interleaves_channels_then_columns_then_banks(void)
{
    sim_dram *d = fresh();
    uint64_t g = gran(), C = (uint64_t)cfg.dram_channels, R = cfg.dram_row_bytes;
    int nbg = cfg.dram_bank_groups, nbank = nbg * cfg.dram_banks_per_group;
    sim_dram_loc l = sim_dram_map(d, 0);
    CU_ASSERT_EQUAL(l.channel, 0);
    CU_ASSERT_EQUAL(l.row, 0);
    CU_ASSERT_EQUAL(sim_dram_map(d, g - 1).channel, 0);
    CU_ASSERT_EQUAL(sim_dram_map(d, g).channel, 1);
    CU_ASSERT_EQUAL(sim_dram_map(d, g * (C - 1)).channel, (int)C - 1);
    /* the next granule of channel 0 continues its row */
    l = sim_dram_map(d, g * C);
    CU_ASSERT_EQUAL(l.channel, 0);
    CU_ASSERT_EQUAL(l.column, g);
    CU_ASSERT_EQUAL(l.bank_group, 0);
    /* a full row later: next bank group, then next bank */
    l = sim_dram_map(d, R * C);
    CU_ASSERT_EQUAL(l.bank_group, 1);
    CU_ASSERT_EQUAL(l.bank, 0);
    l = sim_dram_map(d, R * C * (uint64_t)nbg);
    CU_ASSERT_EQUAL(l.bank_group, 0);
    CU_ASSERT_EQUAL(l.bank, 1);
    /* every bank used once: row 1, rotated by one bank */
    l = sim_dram_map(d, R * C * (uint64_t)nbank);
    CU_ASSERT_EQUAL(l.row, 1);
    CU_ASSERT_EQUAL(l.bank_group, 1);
    CU_ASSERT_EQUAL(l.bank, 0);
    sim_dram_free(d);
}

static void test_access_splits_into_row_segments(void)
{
    sim_dram *d = fresh();
    uint64_t g = gran(), C = (uint64_t)cfg.dram_channels, R = cfg.dram_row_bytes;
    CU_ASSERT_EQUAL(sim_dram_segments(d, 0, 0), 0);
    CU_ASSERT_EQUAL(sim_dram_segments(d, 0, 1), 1);
    CU_ASSERT_EQUAL(sim_dram_segments(d, 0, g), 1);
    CU_ASSERT_EQUAL(sim_dram_segments(d, g / 2, g), 2);         /* straddles two channels */
    CU_ASSERT_EQUAL(sim_dram_segments(d, 0, g * C), C);          /* one granule per channel */
    CU_ASSERT_EQUAL(sim_dram_segments(d, 0, R * C), C);          /* one full row per channel */
    CU_ASSERT_EQUAL(sim_dram_segments(d, 0, 65536), 65536 / (R * C) * C);
    CU_ASSERT_EQUAL(sim_dram_segments(d, 0, 1 << 20), (1 << 20) / R);
    /* a row boundary inside every channel's share: two segments each */
    uint64_t per_row = R / g;
    CU_ASSERT_EQUAL(sim_dram_segments(d, (per_row - 1) * g * C, 2 * g * C), 2 * C);
    /* the model schedules exactly those segments */
    sim_dram_access(d, 0, (per_row - 1) * g * C, 2 * g * C, 0);
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->segments, 2 * C);
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->row_misses, 2 * C);
    sim_dram_free(d);
}

/* ---- bank timing ---- */

static void test_row_hit_is_faster_than_miss_by_trcd_and_conflict_by_trp(void)
{
    sim_dram *d = fresh();
    int c = cfg.dram_channels - 1; /* refreshes last: no refresh before tREFI */
    uint64_t b = gran();
    double data = stream_ns(b);
    /* precharged bank: ACT, tRCD, RD, CL, data */
    double miss = sim_dram_access(d, 0, chan_addr(c, 0), b, 0);
    NEAR(miss, (cfg.dram_rcd + cfg.dram_cl) * tck + data);
    /* same row, long after: RD, CL, data */
    double t = 1000;
    double hit = sim_dram_access(d, t, chan_addr(c, 1), b, 0) - t;
    NEAR(hit, cfg.dram_cl * tck + data);
    NEAR(miss - hit, cfg.dram_rcd * tck);
    /* same bank, other row: PRE, tRP, ACT, tRCD, RD, CL, data */
    t = 2000;
    double conflict = sim_dram_access(d, t, other_row_same_bank(d, c), b, 0) - t;
    NEAR(conflict - hit, (cfg.dram_rp + cfg.dram_rcd) * tck);
    const sim_dram_stats *st = sim_dram_get_stats(d);
    CU_ASSERT_EQUAL(st->row_misses, 1);
    CU_ASSERT_EQUAL(st->row_hits, 1);
    CU_ASSERT_EQUAL(st->row_conflicts, 1);
    sim_dram_free(d);
}

static void test_same_bank_other_row_waits_for_precharge_and_activate(void)
{
    sim_dram *d = fresh();
    int c = cfg.dram_channels - 1;
    uint64_t b = gran();
    double first = sim_dram_access(d, 0, chan_addr(c, 0), b, 0);
    double second = sim_dram_access(d, 0, other_row_same_bank(d, c), b, 0);
    /* PRE waits tRTP after the last RD command (its data ends one burst
     * after CL), then tRP, ACT, tRCD, RD, CL and the data */
    double last_rd = first - cfg.dram_burst_tck * tck - cfg.dram_cl * tck;
    double pre = last_rd + cfg.dram_rtp * tck;
    NEAR(second, pre + (cfg.dram_rp + cfg.dram_rcd + cfg.dram_cl) * tck + stream_ns(b));
    /* a write keeps the row until tWR after its data */
    sim_dram_reset(d);
    first = sim_dram_access(d, 0, chan_addr(c, 0), b, 1);
    second = sim_dram_access(d, 0, other_row_same_bank(d, c), b, 1);
    NEAR(second, first + (cfg.dram_wr + cfg.dram_rp + cfg.dram_rcd + cfg.dram_cwl) * tck + stream_ns(b));
    sim_dram_free(d);
}

static void test_accesses_to_different_channels_overlap(void)
{
    sim_dram *d = fresh();
    uint64_t b = gran();
    double lone = (cfg.dram_rcd + cfg.dram_cl) * tck + stream_ns(b);
    double a = sim_dram_access(d, 0, chan_addr(1, 0), b, 0);
    double e = sim_dram_access(d, 0, chan_addr(2, 0), b, 0);
    NEAR(a, lone);
    NEAR(e, lone); /* fully parallel, not lone + lone */
    /* the same two on one channel share its data bus and ACT slots */
    sim_dram_reset(d);
    a = sim_dram_access(d, 0, chan_addr(1, 0), b, 0);
    e = sim_dram_access(d, 0, chan_addr(1, cfg.dram_row_bytes / b), b, 0); /* next bank group */
    CU_ASSERT(e > a);
    sim_dram_free(d);
}

static void test_write_then_read_pays_turnaround(void)
{
    sim_dram *d = fresh();
    int c = cfg.dram_channels - 1;
    uint64_t b = gran(), other_bg = cfg.dram_row_bytes / b;
    /* read after read of an open row: RD at arrival, CL, data */
    sim_dram_access(d, 0, chan_addr(c, 0), b, 0);
    double t = 1000;
    double rr = sim_dram_access(d, t, chan_addr(c, 1), b, 0) - t;
    NEAR(rr, cfg.dram_cl * tck + stream_ns(b));
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->turnarounds, 0);
    /* read right after a write to the same bank group: tWTR_L first */
    t = 2000;
    double w = sim_dram_access(d, t, chan_addr(c, 2), b, 1);
    double wr = sim_dram_access(d, w, chan_addr(c, 3), b, 0) - w;
    NEAR(wr - rr, cfg.dram_wtr_l * tck);
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->turnarounds, 2);
    /* to another bank group (its row open already): tWTR_S */
    sim_dram_access(d, 3000, chan_addr(c, other_bg), b, 0);
    w = sim_dram_access(d, 3500, chan_addr(c, 4), b, 1);
    wr = sim_dram_access(d, w, chan_addr(c, other_bg + 1), b, 0) - w;
    NEAR(wr - rr, cfg.dram_wtr_s * tck);
    sim_dram_free(d);
}

static void test_refresh_delays_an_access_in_its_window(void)
{
    sim_dram *d = fresh();
    int c = 0;
    uint64_t b = gran();
    double due = cfg.dram_trefi_ns * (c + 1) / cfg.dram_channels;
    double lone = (cfg.dram_rcd + cfg.dram_cl) * tck + stream_ns(b);
    /* data that starts before the refresh is due is not delayed */
    double t = due - 100;
    NEAR(sim_dram_access(d, t, chan_addr(c, 0), b, 0) - t, lone);
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->refreshes, 0);
    /* arriving inside tRFC: waits for the refresh, which closed the row */
    t = due + 10;
    NEAR(sim_dram_access(d, t, chan_addr(c, 1), b, 0), due + cfg.dram_trfc_ns + lone);
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->refreshes, 1);
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->row_misses, 2);
    /* other channels are not blocked by channel 0's refresh */
    NEAR(sim_dram_access(d, t, chan_addr(c + 1, 0), b, 0) - t, lone);
    /* after a long idle stretch the refreshes it held cost nothing */
    t = due + 100.5 * cfg.dram_trefi_ns;
    NEAR(sim_dram_access(d, t, chan_addr(c, 2), b, 0) - t, lone);
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->refreshes, 101);
    sim_dram_free(d);
}

static void test_earlier_arrival_never_goes_back_in_time(void)
{
    sim_dram *d = fresh();
    int c = cfg.dram_channels - 1;
    uint64_t b = gran();
    double a = sim_dram_access(d, 500, chan_addr(c, 0), b, 0);
    /* a little out of order: same bank, other row, arriving "before" */
    double e = sim_dram_access(d, 450, other_row_same_bank(d, c), b, 0);
    CU_ASSERT(e > a);
    CU_ASSERT(e - 450 > (cfg.dram_rp + cfg.dram_rcd + cfg.dram_cl) * tck + stream_ns(b));
    sim_dram_free(d);
}

/* ---- streaming ---- */

/* `streams` DMA engines, each walking its own slice of a 256 MB region in
 * `acc`-byte accesses and issuing the next when the previous completes
 * (the controller sees them in arrival order).  Stream i writes when
 * write_every > 0 and i % write_every == write_every - 1.  Returns GB/s. */
static double stream_bw(sim_dram *d, int streams, uint64_t acc, int write_every)
{
    enum { MAXS = 64 };
    const uint64_t region = 256ull << 20;
    double next[MAXS];
    uint64_t pos[MAXS], left[MAXS], slice = region / (uint64_t)streams;
    for (int i = 0; i < streams; i++) {
        next[i] = 0;
        pos[i] = (uint64_t)i * slice;
        left[i] = slice / acc;
    }
    double end = 0;
    uint64_t moved = 0;
    for (;;) {
        int s = -1;
        for (int i = 0; i < streams; i++)
            if (left[i] && (s < 0 || next[i] < next[s]))
                s = i;
        if (s < 0)
            break;
        int w = write_every > 0 && s % write_every == write_every - 1;
        next[s] = sim_dram_access(d, next[s], pos[s], acc, w);
        end = fmax(end, next[s]);
        pos[s] += acc;
        left[s]--;
        moved += acc;
    }
    return (double)moved / end;
}

static double read_bw_64k, mixed_bw_64k, write_bw_64k, read_bw_4k, mixed_bw_4k;

static void test_streaming_reads_reach_measured_150_gbs(void)
{
    sim_dram *d = fresh();
    read_bw_64k = stream_bw(d, 32, 65536, 0);
    const sim_dram_stats *st = sim_dram_get_stats(d);
    CU_ASSERT_EQUAL(st->bytes_read, 256ull << 20);
    CU_ASSERT_EQUAL(st->bytes_written, 0);
    CU_ASSERT(st->refreshes > 0);
    CU_ASSERT_DOUBLE_EQUAL(read_bw_64k, 150, 15);
    /* below the 204.8 GB/s nominal peak, as on the chip */
    CU_ASSERT(read_bw_64k < (double)cfg.dram_channels * cfg.dram_burst_bytes / (cfg.dram_burst_tck * tck));
    sim_dram_reset(d);
    write_bw_64k = stream_bw(d, 32, 65536, 1);
    CU_ASSERT_DOUBLE_EQUAL(write_bw_64k, 150, 15);
    sim_dram_free(d);
}

static void test_balanced_read_write_reaches_measured_105_gbs(void)
{
    sim_dram *d = fresh();
    mixed_bw_64k = stream_bw(d, 32, 65536, 2);
    const sim_dram_stats *st = sim_dram_get_stats(d);
    CU_ASSERT_EQUAL(st->bytes_read, 128ull << 20);
    CU_ASSERT_EQUAL(st->bytes_written, 128ull << 20);
    CU_ASSERT(st->mix_ns > 0);
    CU_ASSERT_DOUBLE_EQUAL(mixed_bw_64k, 105, 10.5);
    sim_dram_free(d);
}

static void test_streaming_bandwidth_does_not_hinge_on_access_size(void)
{
    sim_dram *d = fresh();
    read_bw_4k = stream_bw(d, 32, 4096, 0);
    CU_ASSERT_DOUBLE_EQUAL(read_bw_4k, 150, 15);
    sim_dram_reset(d);
    mixed_bw_4k = stream_bw(d, 32, 4096, 2);
    CU_ASSERT_DOUBLE_EQUAL(mixed_bw_4k, 105, 10.5);
    sim_dram_free(d);
    printf("\n  streaming 32 x 64 KB: read %.1f, write %.1f, balanced %.1f GB/s;"
           " 32 x 4 KB: read %.1f, balanced %.1f GB/s\n",
           read_bw_64k, write_bw_64k, mixed_bw_64k, read_bw_4k, mixed_bw_4k);
}

static void test_bus_busy_time_accounts_every_burst(void)
{
    sim_dram *d = fresh();
    sim_dram_access(d, 0, 0, 1 << 20, 0);
    const sim_dram_stats *st = sim_dram_get_stats(d);
    double busy = 0;
    for (int c = 0; c < cfg.dram_channels; c++)
        busy += st->busy_ns[c];
    NEAR(busy, (double)bursts(1 << 20) * cfg.dram_burst_tck * tck);
    NEAR(st->busy_ns[0], st->busy_ns[cfg.dram_channels - 1]);
    sim_dram_free(d);
}

/* ---- determinism and cost ---- */

static void run_mix(sim_dram *d, double *out, int n)
{
    uint64_t x = 12345;
    double t = 0;
    for (int i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t addr = (x >> 20) % (1ull << 30);
        uint64_t bytes = 128 + (x >> 50) % 8192;
        out[i] = sim_dram_access(d, t, addr, bytes, (int)(x >> 63));
        t += (double)((x >> 40) % 50);
    }
}

static void test_model_is_deterministic(void)
{
    enum { N = 4000 };
    static double a[N], b[N], c[N];
    sim_dram *d = fresh(), *e = fresh();
    run_mix(d, a, N);
    sim_dram_stats sa = *sim_dram_get_stats(d);
    run_mix(e, b, N);
    sim_dram_reset(d);
    run_mix(d, c, N);
    CU_ASSERT_EQUAL(memcmp(a, b, sizeof a), 0);
    CU_ASSERT_EQUAL(memcmp(a, c, sizeof a), 0);
    CU_ASSERT_EQUAL(memcmp(&sa, sim_dram_get_stats(d), sizeof sa), 0);
    CU_ASSERT_EQUAL(memcmp(&sa, sim_dram_get_stats(e), sizeof sa), 0);
    for (int i = 0; i < N; i++)
        CU_ASSERT_FATAL(a[i] > 0);
    sim_dram_free(d);
    sim_dram_free(e);
}

static void test_megabyte_access_costs_microseconds_of_host_time(void)
{
    sim_dram *d = fresh();
    enum { N = 1000 };
    clock_t t0 = clock();
    double t = 0;
    for (int i = 0; i < N; i++)
        t = sim_dram_access(d, t, (uint64_t)i << 20, 1 << 20, i & 1);
    double per_us = (double)(clock() - t0) / CLOCKS_PER_SEC / N * 1e6;
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->segments, (uint64_t)N * sim_dram_segments(d, 0, 1 << 20));
    CU_ASSERT(per_us < 1000); /* typically tens of microseconds */
    printf("\n  host time per 1 MB access: %.1f us\n", per_us);
    sim_dram_free(d);
}

static void test_bad_configuration_is_named(void)
{
    sim_config c = cfg;
    CU_ASSERT_PTR_NULL(sim_dram_config_error(&c));
    c.dram_row_bytes = 48; /* not a whole number of 32-byte bursts */
    CU_ASSERT_PTR_NOT_NULL(strstr(sim_dram_config_error(&c), "dram_row_bytes"));
    CU_ASSERT_PTR_NULL(sim_dram_new(&c));
    c = cfg;
    c.dram_trfc_ns = c.dram_trefi_ns;
    CU_ASSERT_PTR_NOT_NULL(strstr(sim_dram_config_error(&c), "dram_trefi_ns"));
    CU_ASSERT_PTR_NULL(sim_dram_new(&c));
}

int main(void)
{
    tu_config("spyre", &cfg);
    tck = cfg.dram_tck_ns;
    static const tu_test tests[] = {
        {"map_interleaves_channels_then_columns_then_banks", test_map_interleaves_channels_then_columns_then_banks},
        {"access_splits_into_row_segments", test_access_splits_into_row_segments},
        {"row_hit_is_faster_than_miss_by_trcd_and_conflict_by_trp",
         test_row_hit_is_faster_than_miss_by_trcd_and_conflict_by_trp},
        {"same_bank_other_row_waits_for_precharge_and_activate",
         test_same_bank_other_row_waits_for_precharge_and_activate},
        {"accesses_to_different_channels_overlap", test_accesses_to_different_channels_overlap},
        {"write_then_read_pays_turnaround", test_write_then_read_pays_turnaround},
        {"refresh_delays_an_access_in_its_window", test_refresh_delays_an_access_in_its_window},
        {"earlier_arrival_never_goes_back_in_time", test_earlier_arrival_never_goes_back_in_time},
        {"streaming_reads_reach_measured_150_gbs", test_streaming_reads_reach_measured_150_gbs},
        {"balanced_read_write_reaches_measured_105_gbs", test_balanced_read_write_reaches_measured_105_gbs},
        {"streaming_bandwidth_does_not_hinge_on_access_size", test_streaming_bandwidth_does_not_hinge_on_access_size},
        {"bus_busy_time_accounts_every_burst", test_bus_busy_time_accounts_every_burst},
        {"model_is_deterministic", test_model_is_deterministic},
        {"megabyte_access_costs_microseconds_of_host_time", test_megabyte_access_costs_microseconds_of_host_time},
        {"bad_configuration_is_named", test_bad_configuration_is_named},
        {NULL, NULL},
    };
    return tu_run("dram", tests);
}
