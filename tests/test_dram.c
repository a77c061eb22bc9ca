/* test_dram.c: the LPDDR5 timing model (sim/dram.c): address map and
 * segmentation, row hit / miss / conflict latencies, channel overlap,
 * turnaround, refresh, posted writes (write buffer, watermarks, drain),
 * the calibrated streaming bandwidths, determinism and host cost.
 * Expected latencies are written from the configuration's timings so that
 * the tests say which JEDEC terms each case pays.  The bank-timing tests
 * of writes use `direct`, the configuration without a write buffer, where
 * a write is scheduled when it arrives and returns when its data is in
 * DRAM. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dram.h"
#include "testutil.h"

static chip_config cfg, direct;
static double tck;

#define NEAR(a, b) CU_ASSERT_DOUBLE_EQUAL((a), (b), 1e-6)

static sim_dram *fresh(void)
{
    sim_dram *d = sim_dram_new(&cfg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    return d;
}

/* Writes not posted: scheduled on arrival, done when in DRAM. */
static sim_dram *fresh_direct(void)
{
    sim_dram *d = sim_dram_new(&direct);
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

/* A granule of the last channel's first row read or written at t0, then
 * one of another row of the same bank at t1: the end of the first access
 * in *first, that of the second returned. */
static double row_conflict(sim_dram *d, double t0, double t1, int write, double *first)
{
    int c = cfg.dram_channels - 1;
    *first = sim_dram_access(d, t0, chan_addr(c, 0), gran(), write);
    return sim_dram_access(d, t1, other_row_same_bank(d, c), gran(), write);
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
    uint64_t b = gran();
    double first, second = row_conflict(d, 0, 0, 0, &first);
    /* PRE waits tRTP after the last RD command (its data ends one burst
     * after CL), then tRP, ACT, tRCD, RD, CL and the data */
    double last_rd = first - cfg.dram_burst_tck * tck - cfg.dram_cl * tck;
    double pre = last_rd + cfg.dram_rtp * tck;
    NEAR(second, pre + (cfg.dram_rp + cfg.dram_rcd + cfg.dram_cl) * tck + stream_ns(b));
    /* a write keeps the row until tWR after its data */
    sim_dram_free(d);
    d = fresh_direct();
    second = row_conflict(d, 0, 0, 1, &first);
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
    sim_dram_reset(d, 0);
    a = sim_dram_access(d, 0, chan_addr(1, 0), b, 0);
    e = sim_dram_access(d, 0, chan_addr(1, cfg.dram_row_bytes / b), b, 0); /* next bank group */
    CU_ASSERT(e > a);
    sim_dram_free(d);
}

static void test_write_then_read_pays_turnaround(void)
{
    sim_dram *d = fresh_direct();
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

static void test_refresh_phase_moves_every_channels_due_time_earlier(void)
{
    sim_dram *d = fresh();
    const double step = cfg.dram_trefi_ns / cfg.dram_channels; /* channel c is due at step * (c + 1) */
    uint64_t b = gran();
    double lone = (cfg.dram_rcd + cfg.dram_cl) * tck + stream_ns(b);
    /* phase step - 50: channel 0 due at 50 ns, channel 1 at step + 50 */
    sim_dram_reset(d, step - 50);
    NEAR(sim_dram_access(d, 60, chan_addr(0, 0), b, 0), 50 + cfg.dram_trfc_ns + lone);
    NEAR(sim_dram_access(d, 60, chan_addr(1, 0), b, 0) - 60, lone);
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->refreshes, 1);
    /* phase step: channel 0's due time (0) moves a whole interval on, to tREFI */
    sim_dram_reset(d, step);
    NEAR(sim_dram_access(d, 10, chan_addr(0, 0), b, 0) - 10, lone);
    double t = cfg.dram_trefi_ns + 10;
    NEAR(sim_dram_access(d, t, chan_addr(0, 1), b, 0), cfg.dram_trefi_ns + cfg.dram_trfc_ns + lone);
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->refreshes, 1);
    sim_dram_free(d);
}

static void test_earlier_arrival_never_goes_back_in_time(void)
{
    sim_dram *d = fresh();
    /* a little out of order: same bank, other row, arriving "before" */
    double a, e = row_conflict(d, 500, 450, 0, &a);
    CU_ASSERT(e > a);
    CU_ASSERT(e - 450 > (cfg.dram_rp + cfg.dram_rcd + cfg.dram_cl) * tck + stream_ns(gran()));
    sim_dram_free(d);
}

/* ---- posted writes ---- */

/* Bytes of one channel's write buffer, and of all of them. */
static uint64_t wbuf(void)
{
    return (uint64_t)cfg.dram_write_buffer_bytes;
}

static void test_lone_write_is_acknowledged_and_drains_like_a_direct_one(void)
{
    sim_dram *d = fresh(), *e = fresh_direct();
    int c = cfg.dram_channels - 1;
    uint64_t b = gran();
    CU_ASSERT_EQUAL(sim_dram_drain_time(d), 0); /* nothing written yet */
    double t = 100, ack = cfg.dram_write_ack_ns;
    NEAR(sim_dram_access(d, t, chan_addr(c, 0), b, 1), t + ack);
    /* nothing else arrives: it goes to DRAM on the idle bus when it is in
     * the buffer, exactly as a direct write arriving then */
    double direct_end = sim_dram_access(e, t + ack, chan_addr(c, 0), b, 1);
    NEAR(direct_end - (t + ack), (cfg.dram_rcd + cfg.dram_cwl) * tck + stream_ns(b));
    NEAR(sim_dram_drain_time(d), direct_end);
    NEAR(sim_dram_drain_time(e), direct_end); /* not posted: its data end */
    /* asking does not change the model: it drains the same way later */
    NEAR(sim_dram_drain_time(d), direct_end);
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->segments, 0);
    double r = sim_dram_access(d, 1000, chan_addr(c, 1), b, 0);
    double r_direct = sim_dram_access(e, 1000, chan_addr(c, 1), b, 0);
    NEAR(r, r_direct);
    NEAR(sim_dram_drain_time(d), direct_end);
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->segments, 2);
    sim_dram_free(d);
    sim_dram_free(e);
}

/* The smallest write buffer on one channel: one entry of 32 bytes in all,
 * half the 64-byte alignment of the buffers (aligned_alloc's size must be
 * a multiple of it: ASan refused the model's creation).  Its lone write is
 * posted and drains as a direct one does. */
static void test_one_entry_write_buffer_on_one_channel(void)
{
    chip_config one = cfg, one_direct;
    one.dram_channels = 1;
    one.dram_row_bytes = one.dram_interleave_bytes = one.dram_write_buffer_bytes = one.dram_burst_bytes;
    one_direct = one;
    one_direct.dram_write_buffer_bytes = 0;
    CU_ASSERT_PTR_NULL_FATAL(sim_dram_config_error(&one));
    sim_dram *d = sim_dram_new(&one), *e = sim_dram_new(&one_direct);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    const uint64_t b = one.dram_burst_bytes;
    const double t = 100, ack = one.dram_write_ack_ns;
    NEAR(sim_dram_access(d, t, 0, b, 1), t + ack);
    const double direct_end = sim_dram_access(e, t + ack, 0, b, 1);
    NEAR(sim_dram_drain_time(d), direct_end);
    sim_dram_free(d);
    sim_dram_free(e);
}

/* The case that motivated the buffer: a 2 KB store arriving while a 256 KB
 * load streams is done in the write-ack latency instead of after the load,
 * and a load queued after it is not delayed by it (read priority). */
static void test_small_write_during_large_read_is_posted(void)
{
    const uint64_t big = 256 << 10, small = 2048;
    const uint64_t rd0 = 0, rd1 = 1 << 20, wr = 8 << 20;
    double ack = cfg.dram_write_ack_ns;
    sim_dram *d = fresh(), *e = fresh_direct(), *f = fresh();
    double r0 = sim_dram_access(d, 0, rd0, big, 0);
    double w = sim_dram_access(d, 100, wr, small, 1);
    double r1 = sim_dram_access(d, 200, rd1, big, 0);
    NEAR(w, 100 + ack);
    /* without a write buffer the store waits for the load's data */
    sim_dram_access(e, 0, rd0, big, 0);
    double w_direct = sim_dram_access(e, 100, wr, small, 1);
    CU_ASSERT(w_direct > r0 * 0.9);
    /* the second load finishes as if the store had not been there */
    sim_dram_access(f, 0, rd0, big, 0);
    NEAR(sim_dram_access(f, 200, rd1, big, 0), r1);
    /* the store drains once the loads are done */
    double drain = sim_dram_drain_time(d);
    CU_ASSERT(drain > r1);
    CU_ASSERT(drain < r1 + 200);
    printf("\n  2 KB store during a 256 KB load: done at %.0f ns posted, %.0f ns direct (load done at %.0f)\n", w,
           w_direct, r0);
    sim_dram_free(d);
    sim_dram_free(e);
    sim_dram_free(f);
}

/* A store of four buffers' worth per channel waits until all but about a
 * buffer per channel has gone out; one that fits is acknowledged at once. */
static void test_write_burst_larger_than_buffer_blocks_until_drain(void)
{
    sim_dram *d = fresh();
    uint64_t C = (uint64_t)cfg.dram_channels, fits = C * wbuf() / 2, big = 4 * C * wbuf();
    double ack = cfg.dram_write_ack_ns;
    NEAR(sim_dram_access(d, 0, 0, fits, 1), ack);
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->write_stalls, 0);
    sim_dram_reset(d, 0);
    double done = sim_dram_access(d, 0, 0, big, 1);
    const sim_dram_stats *st = sim_dram_get_stats(d);
    CU_ASSERT(st->write_stalls > 0);
    CU_ASSERT(st->write_stall_ns > 0);
    /* the bus time of what had to leave the buffer first, at peak rate (an
     * entry's room is free once its data starts to go out) */
    double peak = (double)C * cfg.dram_burst_bytes / (cfg.dram_burst_tck * tck); /* bytes per ns */
    CU_ASSERT(done > (double)(big - C * (wbuf() + cfg.dram_row_bytes)) / peak);
    /* and the rest drains after it */
    double drain = sim_dram_drain_time(d);
    CU_ASSERT(drain > done);
    CU_ASSERT(drain > (double)big / peak);
    /* through the buffer the burst takes about as long as written directly.
     * The last rows go out only when nothing needs their room, so they may
     * meet a refresh the direct schedule postponed, and the very last one
     * streams alone in its bank group (one burst per tCCD_L). */
    sim_dram *e = fresh_direct();
    double direct = sim_dram_access(e, 0, 0, big, 1);
    double slack = cfg.dram_trfc_ns + (cfg.dram_wr + cfg.dram_rp_all + cfg.dram_rcd + cfg.dram_cwl) * tck +
                   (double)bursts(cfg.dram_row_bytes) * cfg.dram_ccd * tck;
    CU_ASSERT(drain > direct - 0.05 * direct);
    CU_ASSERT(drain < direct + slack);
    printf("\n  %llu KB store: done at %.0f ns, in DRAM at %.0f ns (direct: %.0f ns)\n",
           (unsigned long long)(big >> 10), done, drain, direct);
    sim_dram_free(e);
    sim_dram_free(d);
}

/* Past the high watermark the controller drains writes ahead of reads, and
 * a read arriving afterwards waits for their bus time, exactly as behind a
 * direct write of what was drained; the writes still waiting in the buffer
 * do not delay it. */
static void test_reads_after_a_drain_see_its_bus_time(void)
{
    int c = cfg.dram_channels - 1;
    uint64_t C = (uint64_t)cfg.dram_channels, R = cfg.dram_row_bytes, per_row = R / gran(), rows = wbuf() / R;
    double ack = cfg.dram_write_ack_ns, t = 100;
    /* fill the buffers with whole rows (a row of every channel per write):
     * the last one passes the high watermark and the oldest rows down to
     * the low watermark are drained */
    uint64_t drained = 0, wait = 0;
    for (uint64_t i = 0; i < rows; i++) {
        wait += R;
        if ((double)wait > cfg.dram_write_high_pct / 100 * (double)wbuf())
            while ((double)wait > cfg.dram_write_low_pct / 100 * (double)wbuf())
                wait -= R, drained += R;
    }
    CU_ASSERT_FATAL(drained > 0);
    sim_dram *d = fresh(), *e = fresh_direct(), *f = fresh();
    for (uint64_t i = 0; i < rows; i++)
        NEAR(sim_dram_access(d, t, i * R * C, R * C, 1), t + ack);
    CU_ASSERT_EQUAL(sim_dram_get_stats(d)->write_drains, C);
    uint64_t rd = chan_addr(c, rows * per_row + per_row / 2); /* another row */
    double r = sim_dram_access(d, t + ack, rd, gran(), 0);
    for (uint64_t i = 0; i < drained / R; i++)
        sim_dram_access(e, t + ack, i * R * C, R * C, 1);
    NEAR(r, sim_dram_access(e, t + ack, rd, gran(), 0));
    /* so it ends after the drained data and its own have crossed the bus,
     * well after the same read on the idle channel */
    CU_ASSERT(r >= t + ack + (double)bursts(drained + gran()) * cfg.dram_burst_tck * tck);
    double idle = sim_dram_access(f, t + ack, rd, gran(), 0);
    CU_ASSERT(r - idle > (double)bursts(drained) / 2 * cfg.dram_burst_tck * tck);
    sim_dram_free(d);
    sim_dram_free(e);
    sim_dram_free(f);
}

/* ---- streaming ---- */

/* `streams` DMA engines, each walking its own slice of a 256 MB region in
 * `acc`-byte accesses and issuing the next when the previous completes
 * (the controller sees them in arrival order).  Stream i writes when
 * write_every > 0 and i % write_every == write_every - 1.  Returns GB/s
 * over the whole transfer: until the last byte of every access is in DRAM,
 * which for posted writes is the drain time, not the last completion. */
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
    double drain = sim_dram_drain_time(d);
    CU_ASSERT(write_every == 0 ? drain == 0 : drain > 0);
    return (double)moved / fmax(end, drain);
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
    sim_dram_reset(d, 0);
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
    sim_dram_reset(d, 0);
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

/* Random reads and writes; with ask, sim_dram_drain_time after each
 * (which must not change anything). */
static void run_mix(sim_dram *d, double *out, int n, int ask)
{
    uint64_t x = 12345;
    double t = 0;
    for (int i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t addr = (x >> 20) % (1ull << 30);
        uint64_t bytes = 128 + (x >> 50) % 8192;
        out[i] = sim_dram_access(d, t, addr, bytes, (int)(x >> 63));
        if (ask)
            CU_ASSERT(sim_dram_drain_time(d) >= 0);
        t += (double)((x >> 40) % 50);
    }
}

static void test_model_is_deterministic(void)
{
    enum { N = 4000 };
    static double a[N], b[N], c[N];
    sim_dram *d = fresh(), *e = fresh();
    run_mix(d, a, N, 0);
    sim_dram_stats sa = *sim_dram_get_stats(d);
    double drain = sim_dram_drain_time(d);
    run_mix(e, b, N, 1);
    sim_dram_reset(d, 0);
    run_mix(d, c, N, 0);
    CU_ASSERT(drain > 0);
    CU_ASSERT_EQUAL(drain, sim_dram_drain_time(d));
    CU_ASSERT_EQUAL(drain, sim_dram_drain_time(e));
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
    enum { N = 1000 };
    double per_us[2];
    for (int posted = 0; posted < 2; posted++) {
        sim_dram *d = posted ? fresh() : fresh_direct();
        clock_t t0 = clock();
        double t = 0;
        for (int i = 0; i < N; i++)
            t = sim_dram_access(d, t, (uint64_t)i << 20, 1 << 20, i & 1);
        sim_dram_drain_time(d);
        per_us[posted] = (double)(clock() - t0) / CLOCKS_PER_SEC / N * 1e6;
        /* every segment scheduled once (posted: but those still buffered) */
        uint64_t segs = sim_dram_get_stats(d)->segments, all = (uint64_t)N * sim_dram_segments(d, 0, 1 << 20);
        if (posted) {
            CU_ASSERT(segs <= all && segs + (uint64_t)cfg.dram_channels * wbuf() / cfg.dram_row_bytes >= all);
        } else {
            CU_ASSERT_EQUAL(segs, all);
        }
        CU_ASSERT(per_us[posted] < 1000); /* typically tens of microseconds */
        sim_dram_free(d);
    }
    printf("\n  host time per 1 MB access: %.1f us direct, %.1f us posted\n", per_us[0], per_us[1]);
}

static void test_bad_configuration_is_named(void)
{
    chip_config c = cfg;
    CU_ASSERT_PTR_NULL(sim_dram_config_error(&c));
    c.dram_row_bytes = 48; /* not a whole number of 32-byte bursts */
    CU_ASSERT_PTR_NOT_NULL(strstr(sim_dram_config_error(&c), "dram_row_bytes"));
    CU_ASSERT_PTR_NULL(sim_dram_new(&c));
    c = cfg;
    c.dram_trfc_ns = c.dram_trefi_ns;
    CU_ASSERT_PTR_NOT_NULL(strstr(sim_dram_config_error(&c), "dram_trefi_ns"));
    CU_ASSERT_PTR_NULL(sim_dram_new(&c));
    c = cfg;
    c.dram_write_buffer_bytes = c.dram_row_bytes + 16; /* not whole bursts */
    CU_ASSERT_PTR_NOT_NULL(strstr(sim_dram_config_error(&c), "dram_write_buffer_bytes"));
    c.dram_write_buffer_bytes = c.dram_row_bytes / 2; /* a row segment would never fit */
    CU_ASSERT_PTR_NOT_NULL(strstr(sim_dram_config_error(&c), "dram_write_buffer_bytes"));
    c.dram_write_buffer_bytes = 0; /* not posted */
    CU_ASSERT_PTR_NULL(sim_dram_config_error(&c));
    c = cfg;
    c.dram_write_low_pct = c.dram_write_high_pct + 1;
    CU_ASSERT_PTR_NOT_NULL(strstr(sim_dram_config_error(&c), "dram_write_low_pct"));
}

int main(void)
{
    tu_config("spyre", &cfg);
    direct = cfg;
    direct.dram_write_buffer_bytes = 0;
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
        {"refresh_phase_moves_every_channels_due_time_earlier",
         test_refresh_phase_moves_every_channels_due_time_earlier},
        {"earlier_arrival_never_goes_back_in_time", test_earlier_arrival_never_goes_back_in_time},
        {"lone_write_is_acknowledged_and_drains_like_a_direct_one",
         test_lone_write_is_acknowledged_and_drains_like_a_direct_one},
        {"one_entry_write_buffer_on_one_channel", test_one_entry_write_buffer_on_one_channel},
        {"small_write_during_large_read_is_posted", test_small_write_during_large_read_is_posted},
        {"write_burst_larger_than_buffer_blocks_until_drain", test_write_burst_larger_than_buffer_blocks_until_drain},
        {"reads_after_a_drain_see_its_bus_time", test_reads_after_a_drain_see_its_bus_time},
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
