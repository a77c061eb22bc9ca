/* dram.c: transaction-level LPDDR5 timing model (dram.h, docs/dram.md).
 *
 * Address map (mixed radix, so no field has to be a power of two):
 *
 *   granule q = addr / interleave      offset o = addr % interleave
 *   channel   = q % channels
 *   local     = (q / channels) * interleave + o     channel-local address
 *   column    = local % row_bytes      r = local / row_bytes
 *   row       = r / banks              (banks = bank_groups * banks_per_group)
 *   slot      = (r % banks + digit sum of row in base banks) % banks
 *   bank group = slot % bank_groups    bank = slot / bank_groups
 *
 * With the shipped values: o = addr[7:0], channel = addr[11:8], the 2 KB of
 * one row are 8 granules addr[14:12], then the slot addr[18:15] (bank group
 * in its low two bits), row above; the slot is rotated by the row's digit
 * sum so that streams whose bases differ by whole rows spread over banks.
 * A contiguous access covers one contiguous range of each channel's local
 * space; cut at row boundaries, each piece is one row segment (one channel,
 * bank and row).
 *
 * Time is in ns (double).  Per channel the model keeps the data bus work
 * pointer, the CAS stream of each bank group, the end of the last read and
 * write data (turnaround), the last four ACTs (tRRD, tFAW) and the next
 * refresh; per bank the open row and the earliest ACT, CAS and PRE.  A
 * segment is planned from that state, the refresh due before it is issued
 * first if needed, and the plan is committed.
 *
 * Writes are posted (unless dram_write_buffer_bytes is 0): each channel
 * has a write buffer, a ring of row segments in arrival order.  A write
 * segment is accepted into it and acknowledged; it is scheduled
 * ("released", as a segment like any other) later, oldest first: into the
 * idle time the channel's reads leave before the next access arrives, when
 * the waiting writes pass the high watermark (then down to the low one),
 * or when a write finds the buffer full of waiting writes.  An entry holds
 * its room until its data starts to go out. */
#include "dram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* max of two times: fmax is a libm call (it must handle NaN, which no time
 * here is), and this model takes tens of them per DRAM access */
static inline double later(double a, double b) { return a > b ? a : b; }
static inline double sooner(double a, double b) { return a < b ? a : b; }

#define LONG_AGO (-1e300) /* a time before every event */

enum { RD = 0, WR = 1 };
enum { HIT, MISS, CONFLICT }; /* open row / bank precharged / other row open */

typedef struct {
    int64_t row;       /* open row, -1 when precharged */
    double act;        /* last ACT */
    double cas_ready;  /* earliest RD/WR to the open row: ACT + tRCD */
    double pre_ready;  /* earliest PRE: ACT + tRAS, RD + tRTP, write data + tWR */
    double act_ready;  /* earliest ACT: ACT + tRC, end of refresh */
    uint64_t hit_call; /* the access (call number) that served a row hit here */
    int64_t hit_row;   /* and its row: pass 2 of that access skips it */
} dram_bank;

typedef struct {
    double bus_free;    /* data bus work scheduled up to here */
    double dir_end[2];  /* end of the last read / write data */
    int last_dir;       /* direction of the last segment, -1 before any */
    int last_write_bg;  /* bank group of the last write (tWTR_L or _S) */
    int act_pos;
    /* posted writes: wq_n entries from wq_head; the first wq_rel are
     * scheduled (released), the rest wait in the buffer */
    uint32_t wq_head, wq_n, wq_rel;
    double acts[4];     /* the last four ACTs, a ring; acts[act_pos] is the oldest */
    double last_act;
    double ref_due;     /* when the next all-bank refresh is due */
    uint64_t wq_occ;    /* bursts held by all entries */
    uint64_t wq_wait;   /* bursts of the entries not yet released */
    double wr_done;     /* latest end of scheduled write data */
    /* its write buffer, wq_cap entries of sim_dram.wq: kept here, where
     * wq_head is, rather than found by a multiplication on every look (the
     * ints above are packed so that a channel stays 128 bytes) */
    struct dram_wentry *wq;
} dram_chan;
_Static_assert(sizeof(dram_chan) == 128, "a channel is two cache lines");

/* Where a row segment lands: bank group, bank (index in the channel), row. */
typedef struct {
    int g, bi;
    int64_t row;
} dram_place;

typedef struct dram_wentry {
    dram_place w;       /* where its row segment lands, found on arrival */
    uint64_t nb;        /* bursts, the buffer space it holds */
    double start;       /* waiting: when it was accepted, and may be released;
                           released: its first data on the bus */
} dram_wentry;
/* a power of two, so an entry's index scales by a shift; two to a line
 * (the rings are line-aligned): a launch walks every channel's ring */
_Static_assert(sizeof(dram_wentry) == 32, "two write buffer entries a cache line");

/* A divisor with its shift when it is a power of two (-1 otherwise): the
 * address map divides by several per segment, and a shift is far cheaper
 * than a 64-bit division. */
typedef struct {
    uint64_t v;
    int sh;
} divisor;

static divisor divisor_of(uint64_t v)
{
    divisor d = {v, -1};
    if (v && !(v & (v - 1)))
        for (d.sh = 0; (1ull << d.sh) != v; d.sh++)
            ;
    return d;
}

static inline uint64_t dv(uint64_t x, divisor d) { return d.sh >= 0 ? x >> d.sh : x / d.v; }
static inline uint64_t md(uint64_t x, divisor d) { return d.sh >= 0 ? x & (d.v - 1) : x % d.v; }

#define PLACED_WAYS 64 /* place_of's answers kept, a power of two */

struct sim_dram {
    /* organisation */
    int nch, nbg, nbpg, nbank; /* nbank: banks per channel */
    uint64_t gran, row_bytes, burst_bytes;
    double burst_bytes_f; /* the same, converted once */
    divisor dgran, dnch, drow, dburst, dnbank, dnbg; /* the same, as divisors */
    /* timings, ns */
    double burst, cl, cwl, rcd, rp, rp_all, ras, rc, wr, rtp, ccd, rrd;
    double wtr_s, wtr_l, faw, rtw, trefi, trfc;
    double switch_bytes, switch_ns; /* read/write batch and the cost of one turn */
    double window;                  /* bus time a waiting segment lends to ready ones */
    /* posted writes (wq_cap 0: writes are scheduled on arrival) */
    uint64_t wq_cap;                /* buffer per channel, bursts (at most as many entries) */
    uint64_t wq_mask;               /* a channel's ring holds wq_mask + 1 entries, the power of two
                                       from wq_cap up: an index wraps by a mask */
    int64_t wq_high, wq_low;        /* watermarks on waiting bursts: a count passes one when it
                                       exceeds it (count_at_most of the configured fraction) */
    double ack;                     /* arrival to acceptance */
    /* state */
    dram_chan *ch;
    dram_bank *bank;    /* nch * nbank */
    double *bg_free;    /* nch * nbg: the bank group's CAS stream is busy up to here */
    dram_wentry *wq;    /* nch * (wq_mask + 1): the write buffers */
    uint64_t call;
    sim_dram_stats st;
    sim_dram *shadow;   /* scratch copy for sim_dram_drain_time */
    /* per value of the low bits, the last local row index placed
     * (place_of) with them, and where */
    uint64_t placed_r[PLACED_WAYS];
    dram_place placed[PLACED_WAYS];
};

typedef struct {
    int kind;
    double act;     /* ACT issued (MISS, CONFLICT) */
    double start;   /* first data on the bus, as far as this segment is concerned */
    double bus_end; /* bus work pointer after it */
    double bg_end;  /* its bank group's CAS stream after it */
    double end;     /* last data */
    double mix;     /* bus time charged for read/write interleaving */
} dram_plan;

/* Bank group, bank (index in the channel) and row of local row index r. */
static void place(const sim_dram *d, uint64_t r, int *g, int *bi, int64_t *row)
{
    const divisor nb = d->dnbank;
    uint64_t rw = dv(r, nb), lin = md(r, nb);
    for (uint64_t x = nb.v > 1 ? rw : 0; x; x = dv(x, nb)) /* rotate by the digit sum of the row */
        lin += md(x, nb);
    lin = md(lin, nb);
    *g = (int)md(lin, d->dnbg);
    *bi = *g * d->nbpg + (int)dv(lin, d->dnbg);
    *row = (int64_t)rw;
}

const char *sim_dram_config_error(const chip_config *cfg)
{
    if (cfg->dram_channels < 1 || cfg->dram_channels > SIM_DRAM_MAX_CHANNELS)
        return "dram_channels must be between 1 and 64";
    if (cfg->dram_bank_groups < 1 || cfg->dram_banks_per_group < 1)
        return "dram_bank_groups and dram_banks_per_group must be positive";
    if (!cfg->dram_burst_bytes || !cfg->dram_interleave_bytes || !cfg->dram_row_bytes)
        return "dram_burst_bytes, dram_interleave_bytes and dram_row_bytes must be positive";
    if (cfg->dram_row_bytes % cfg->dram_burst_bytes)
        return "dram_row_bytes must be a whole number of bursts (dram_burst_bytes)";
    if (cfg->dram_interleave_bytes % cfg->dram_burst_bytes)
        return "dram_interleave_bytes must be a whole number of bursts (dram_burst_bytes)";
    if (!(cfg->dram_tck_ns > 0) || !(cfg->dram_burst_tck > 0))
        return "dram_tck_ns and dram_burst_tck must be positive";
    if (!cfg->dram_rw_switch_bytes)
        return "dram_rw_switch_bytes must be positive";
    double wb = cfg->dram_write_buffer_bytes;
    if (wb != 0 && !(fmod(wb, cfg->dram_burst_bytes) == 0 && wb >= cfg->dram_row_bytes && wb <= 1 << 30))
        return "dram_write_buffer_bytes must be 0 or a whole number of bursts holding at least one row";
    if (!(cfg->dram_write_low_pct <= cfg->dram_write_high_pct))
        return "dram_write_low_pct must not exceed dram_write_high_pct";
    double lat = cfg->dram_cl > cfg->dram_cwl ? cfg->dram_cl : cfg->dram_cwl;
    double wake = cfg->dram_trfc_ns + (cfg->dram_rp_all + cfg->dram_rcd + lat) * cfg->dram_tck_ns;
    if (!(wake < cfg->dram_trefi_ns))
        return "dram_trefi_ns must exceed dram_trfc_ns plus (rp_all + rcd + cl) tCK";
    return NULL;
}

/* The state arrays of d (all NULL on entry); nonzero on out of memory. */
static int alloc_state(sim_dram *d)
{
    size_t n = (size_t)d->nch;
    d->ch = calloc(n, sizeof *d->ch);
    d->bank = calloc(n * (size_t)d->nbank, sizeof *d->bank);
    d->bg_free = calloc(n * (size_t)d->nbg, sizeof *d->bg_free);
    /* aligned_alloc takes whole lines: one channel of one entry is half a line */
    const size_t wq_bytes = (n * (size_t)(d->wq_mask + 1) * sizeof *d->wq + 63) & ~(size_t)63;
    d->wq = d->wq_cap ? aligned_alloc(64, wq_bytes) : NULL;
    if (!d->ch || !d->bank || !d->bg_free || (d->wq_cap && !d->wq))
        return 1;
    if (d->wq)
        memset(d->wq, 0, wq_bytes);
    for (size_t c = 0; c < n; c++)
        d->ch[c].wq = d->wq ? &d->wq[c * (d->wq_mask + 1)] : NULL;
    return 0;
}

/* The largest count that does not exceed w: a count n (below 2^53, so
 * exact as a double) exceeds w exactly when it exceeds this, and the
 * watermark tests of every accept and drained release compare integers
 * (w is not NaN: sim_dram_config_error orders the watermarks). */
static int64_t count_at_most(double w)
{
    if (w < 0)
        return -1;
    if (w >= 0x1p62)
        return INT64_MAX;
    return (int64_t)floor(w);
}

sim_dram *sim_dram_new(const chip_config *cfg)
{
    if (sim_dram_config_error(cfg))
        return NULL;
    sim_dram *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->nch = cfg->dram_channels;
    d->nbg = cfg->dram_bank_groups;
    d->nbpg = cfg->dram_banks_per_group;
    d->nbank = d->nbg * d->nbpg;
    d->gran = cfg->dram_interleave_bytes;
    d->row_bytes = cfg->dram_row_bytes;
    d->burst_bytes = cfg->dram_burst_bytes;
    d->burst_bytes_f = (double)d->burst_bytes;
    d->dgran = divisor_of(d->gran);
    d->dnch = divisor_of((uint64_t)d->nch);
    d->drow = divisor_of(d->row_bytes);
    d->dburst = divisor_of(d->burst_bytes);
    d->dnbank = divisor_of((uint64_t)d->nbank);
    d->dnbg = divisor_of((uint64_t)d->nbg);
    double t = cfg->dram_tck_ns;
    d->burst = cfg->dram_burst_tck * t;
    d->cl = cfg->dram_cl * t;
    d->cwl = cfg->dram_cwl * t;
    d->rcd = cfg->dram_rcd * t;
    d->rp = cfg->dram_rp * t;
    d->rp_all = cfg->dram_rp_all * t;
    d->ras = cfg->dram_ras * t;
    d->rc = cfg->dram_rc * t;
    d->wr = cfg->dram_wr * t;
    d->rtp = cfg->dram_rtp * t;
    d->ccd = cfg->dram_ccd * t;
    d->rrd = cfg->dram_rrd * t;
    d->wtr_s = cfg->dram_wtr_s * t;
    d->wtr_l = cfg->dram_wtr_l * t;
    d->faw = cfg->dram_faw * t;
    d->rtw = cfg->dram_rtw * t;
    d->trefi = cfg->dram_trefi_ns;
    d->trfc = cfg->dram_trfc_ns;
    d->switch_bytes = cfg->dram_rw_switch_bytes;
    d->window = cfg->dram_reorder_bursts * d->burst;
    /* one turn of the bus, averaged over read-to-write and write-to-read */
    d->switch_ns = (d->rtw + d->wtr_s + d->cl) / 2;
    d->wq_cap = (uint64_t)cfg->dram_write_buffer_bytes / cfg->dram_burst_bytes;
    for (d->wq_mask = 0; d->wq_mask + 1 < d->wq_cap; d->wq_mask = 2 * d->wq_mask + 1)
        ;
    d->wq_high = count_at_most(cfg->dram_write_high_pct / 100 * (double)d->wq_cap);
    d->wq_low = count_at_most(cfg->dram_write_low_pct / 100 * (double)d->wq_cap);
    for (int i = 0; i < PLACED_WAYS; i++)
        d->placed_r[i] = UINT64_MAX; /* none yet */
    d->ack = cfg->dram_write_ack_ns;
    if (alloc_state(d) || !(d->shadow = malloc(sizeof *d->shadow))) {
        sim_dram_free(d);
        return NULL;
    }
    sim_dram *sh = d->shadow;
    *sh = *d; /* the parameters; its own state arrays */
    sh->ch = NULL, sh->bank = NULL, sh->bg_free = NULL, sh->wq = NULL, sh->shadow = NULL;
    if (alloc_state(sh)) {
        sim_dram_free(d);
        return NULL;
    }
    sim_dram_reset(d, 0);
    return d;
}

void sim_dram_free(sim_dram *d)
{
    if (!d)
        return;
    if (d->shadow) {
        d->shadow->shadow = NULL;
        sim_dram_free(d->shadow);
    }
    free(d->ch);
    free(d->bank);
    free(d->bg_free);
    free(d->wq);
    free(d);
}

void sim_dram_reset(sim_dram *d, double refresh_phase_ns)
{
    for (int c = 0; c < d->nch; c++) {
        dram_chan *ch = &d->ch[c];
        ch->bus_free = 0;
        ch->dir_end[RD] = ch->dir_end[WR] = LONG_AGO;
        ch->last_dir = -1;
        ch->last_write_bg = -1;
        for (int i = 0; i < 4; i++)
            ch->acts[i] = LONG_AGO;
        ch->act_pos = 0;
        ch->last_act = LONG_AGO;
        /* channels refresh in turn, spread over one interval; the phase
         * moves the whole schedule earlier (phase 0 subtracts nothing) */
        ch->ref_due = d->trefi * (c + 1) / d->nch - refresh_phase_ns;
        if (ch->ref_due <= 0)
            ch->ref_due += d->trefi;
        ch->wq_head = ch->wq_n = ch->wq_rel = 0;
        ch->wq_occ = ch->wq_wait = 0;
        ch->wr_done = LONG_AGO;
    }
    for (int i = 0; i < d->nch * d->nbank; i++) {
        dram_bank *b = &d->bank[i];
        b->row = -1;
        b->act = LONG_AGO;
        b->cas_ready = b->pre_ready = b->act_ready = 0;
        b->hit_call = 0;
        b->hit_row = -1;
    }
    for (int i = 0; i < d->nch * d->nbg; i++)
        d->bg_free[i] = 0;
    d->call = 0;
    memset(&d->st, 0, sizeof d->st);
}

const sim_dram_stats *sim_dram_get_stats(const sim_dram *d)
{
    return &d->st;
}

sim_dram_loc sim_dram_map(const sim_dram *d, uint64_t addr)
{
    uint64_t q = addr / d->gran;
    uint64_t local = q / (uint64_t)d->nch * d->gran + addr % d->gran;
    sim_dram_loc l;
    int bi;
    int64_t row;
    place(d, local / d->row_bytes, &l.bank_group, &bi, &row);
    l.channel = (int)(q % (uint64_t)d->nch);
    l.column = (uint32_t)(local % d->row_bytes);
    l.bank = bi % d->nbpg;
    l.row = (uint64_t)row;
    return l;
}

/* An access's first and last granule, split into a block of nch granules
 * (b) and a channel in it (r), and its offsets in them: what chan_range
 * needs of it for every channel, so that a channel's range costs no
 * division. */
typedef struct {
    uint64_t b0, b1, o0, o1;
    uint64_t r0, r1;
} dram_span;

/* Forced inline: out of line it returned its 48 bytes through memory,
 * once for every access */
static inline __attribute__((always_inline)) dram_span span_of(const sim_dram *d, uint64_t addr, uint64_t bytes)
{
    uint64_t q0 = dv(addr, d->dgran), q1 = dv(addr + bytes - 1, d->dgran);
    dram_span s = {dv(q0, d->dnch), dv(q1, d->dnch), md(addr, d->dgran), md(addr + bytes - 1, d->dgran),
                   md(q0, d->dnch), md(q1, d->dnch)};
    return s;
}

/* The bytes of access sp that live on channel c form one contiguous range
 * [*lo, *hi) of its local space; 0 when there are none.  Channel c's first
 * granule is in the first block unless c lies before the access's first
 * channel there, its last in the last block unless c lies after the last
 * channel there; the block index is the granule's channel-local index. */
static int chan_range(const sim_dram *d, const dram_span *sp, int c, uint64_t *lo, uint64_t *hi)
{
    const uint64_t uc = (uint64_t)c;
    const uint64_t fb = sp->b0 + (uc < sp->r0), after = uc > sp->r1;
    if (fb + after > sp->b1)
        return 0;
    const uint64_t lb = sp->b1 - after;
    *lo = fb * d->gran + (uc == sp->r0 ? sp->o0 : 0);
    *hi = lb * d->gran + (uc == sp->r1 ? sp->o1 + 1 : d->gran);
    return 1;
}

uint64_t sim_dram_segments(const sim_dram *d, uint64_t addr, uint64_t bytes)
{
    uint64_t n = 0, lo, hi;
    if (!bytes)
        return 0;
    const dram_span sp = span_of(d, addr, bytes);
    for (int c = 0; c < d->nch; c++)
        if (chan_range(d, &sp, c, &lo, &hi))
            n += (hi - 1) / d->row_bytes - lo / d->row_bytes + 1;
    return n;
}

/* Earliest ACT at or after x allowed by tRRD and tFAW.  ACTs of a channel
 * are kept in issue order (a later segment never activates before an
 * earlier one). */
static double act_slot(const sim_dram *d, const dram_chan *c, double x)
{
    double a = later(x, c->last_act + d->rrd);
    return later(a, c->acts[c->act_pos] + d->faw);
}

/* Plan a segment of nb bursts in direction dir to row `row` of bank b (in
 * bank group g) arriving at t, on channel c whose bus work pointer is
 * bus_free (a drain keeps it in a register), without changing any state.
 * Forced inline like segment, where GCC would otherwise put it out of line. */
static inline __attribute__((always_inline)) void plan(const sim_dram *d, const dram_chan *c, const dram_bank *b,
                                                       const double *bg_free, int g, int64_t row, double nb, double nbb,
                                                       int dir, double t, double bus_free, dram_plan *p)
{
    double cas;
    p->act = LONG_AGO;
    if (b->row == row) {
        p->kind = HIT;
        cas = later(t, b->cas_ready);
    } else if (b->row < 0) {
        p->kind = MISS;
        p->act = act_slot(d, c, later(t, b->act_ready));
        cas = p->act + d->rcd;
    } else {
        p->kind = CONFLICT;
        double pre = later(t, b->pre_ready);
        p->act = act_slot(d, c, later(pre + d->rp, b->act_ready));
        cas = p->act + d->rcd;
    }
    double s = cas + (dir == WR ? d->cwl : d->cl);
    double other = c->dir_end[!dir];
    p->mix = 0;
    if (other <= t) {
        /* the other direction is done: one JEDEC turnaround */
        if (dir == RD) /* WR data end -> tWTR -> RD command -> CL -> data */
            s = later(s, other + (g == c->last_write_bg ? d->wtr_l : d->wtr_s) + d->cl);
        else /* RD data end -> preamble and bus release -> WR data */
            s = later(s, other + d->rtw);
    } else {
        /* Traffic of the other direction still queued when this arrives is
         * interleaved with it in batches of switch_bytes, each batch turning
         * the bus once: bus time charged to the segment being planned. */
        double pend = (other - t) / d->burst * d->burst_bytes_f;
        double bytes = nb * d->burst_bytes_f;
        p->mix = sooner(bytes, pend) / d->switch_bytes * d->switch_ns;
    }
    p->start = s;
    /* First ready: behind queued work, up to `window` of bus time waiting
     * for this bank is lent to younger requests that are ready (the bus work
     * pointer runs ahead); on an idle bus the data starts when ready. */
    double lo = bus_free > t ? s - d->window : s;
    p->bus_end = later(bus_free, lo) + nbb + p->mix;
    /* one bank group streams one burst per tCCD; other groups fill the bus */
    p->bg_end = later(s, bg_free[g]) + nb * d->ccd;
    p->end = later(later(p->bus_end, p->bg_end), s + nbb);
}

/* Earliest time an all-bank refresh can start on channel c: data done and
 * every open bank precharged. */
static double chan_quiet(const sim_dram *d, int c)
{
    const dram_chan *ch = &d->ch[c];
    double q = later(ch->bus_free, later(ch->dir_end[RD], ch->dir_end[WR]));
    const dram_bank *b = &d->bank[(size_t)c * (size_t)d->nbank];
    for (int i = 0; i < d->nbank; i++)
        if (b[i].row >= 0)
            q = later(q, later(b[i].pre_ready + d->rp_all, b[i].act + d->rc));
    return q;
}

/* Issue the refresh that is due on channel c (for a segment arriving at t). */
static void refresh(sim_dram *d, int c, double t)
{
    dram_chan *ch = &d->ch[c];
    double q = chan_quiet(d, c);
    if (q <= ch->ref_due && t >= ch->ref_due + d->trefi) {
        /* idle through several intervals: those refreshes ended long ago */
        double k = floor((t - ch->ref_due) / d->trefi);
        ch->ref_due += k * d->trefi;
        d->st.refreshes += (uint64_t)k;
    }
    double done = later(ch->ref_due, q) + d->trfc;
    dram_bank *b = &d->bank[(size_t)c * (size_t)d->nbank];
    for (int i = 0; i < d->nbank; i++) {
        b[i].row = -1;
        b[i].act_ready = later(b[i].act_ready, done);
    }
    ch->bus_free = later(ch->bus_free, done); /* the channel is blocked */
    ch->ref_due += d->trefi;
    d->st.refreshes++;
}

/* Where local row index r lands: its channel's accesses and the other
 * channels' shares of the same access mostly name a row named lately, so
 * the answers are kept, one per value of r's low bits (the map does not
 * change).  With one answer a GEMM's alternating streams missed 89% of
 * its accesses' lookups. */
static dram_place place_of(sim_dram *d, uint64_t local)
{
    uint64_t r = dv(local, d->drow);
    const unsigned i = (unsigned)r & (PLACED_WAYS - 1);
    if (r != d->placed_r[i]) {
        place(d, r, &d->placed[i].g, &d->placed[i].bi, &d->placed[i].row);
        d->placed_r[i] = r;
    }
    return d->placed[i];
}

/* The bursts of local range [lo, hi). */
static inline uint64_t bursts(const sim_dram *d, uint64_t lo, uint64_t hi)
{
    return dv(hi - 1, d->dburst) - dv(lo, d->dburst) + 1;
}

/* Bank b of channel ch opened a row at act: its timing constraints and
 * the channel's last four ACTs (tFAW) from it. */
static inline __attribute__((always_inline)) void activated(const sim_dram *d, dram_chan *ch, dram_bank *b, double act)
{
    b->act = act;
    b->act_ready = act + d->rc;
    b->cas_ready = act + d->rcd;
    b->pre_ready = act + d->ras;
    ch->acts[ch->act_pos] = act;
    ch->act_pos = (ch->act_pos + 1) & 3;
    ch->last_act = act;
}

/* Schedule one segment of channel c (its state ch, its bank b at w.bi,
 * its bank groups bg_free): nbf bursts (bursts(lo, hi) of its local range
 * [lo, hi), as a double) taking nbb = nbf * burst of bus time, placed at
 * w (place_of(lo)): callers pass what
 * they found already (a posted write keeps both, an access of whole
 * blocks finds them once for every channel).  Returns its end; *first (if
 * not NULL) is its first data on the bus.  Forced inline into its four
 * callers: a call per segment saved and restored six registers and passed
 * eight arguments, and each caller's constants (the direction, first) fold
 * into its copy. */
static inline __attribute__((always_inline)) double segment_on(sim_dram *d, int c, dram_chan *ch, dram_bank *b,
                                                               double *bg_free, double nbf, double nbb, dram_place w,
                                                               int dir, double t, double *first)
{
    const int g = w.g;
    const int64_t row = w.row;
    dram_plan p;
    for (;;) {
        plan(d, ch, b, bg_free, g, row, nbf, nbb, dir, t, ch->bus_free, &p);
        if (p.start < ch->ref_due)
            break;
        refresh(d, c, t); /* data would start after the due refresh: refresh first */
    }
    if (p.kind != HIT)
        activated(d, ch, b, p.act);
    b->row = row;
    if (dir == RD) /* last RD command = last data burst - CL */
        b->pre_ready = later(b->pre_ready, p.end - d->burst - d->cl + d->rtp);
    else
        b->pre_ready = later(b->pre_ready, p.end + d->wr);
    ch->bus_free = p.bus_end;
    bg_free[g] = p.bg_end;
    ch->dir_end[dir] = later(ch->dir_end[dir], p.end);
    if (dir == WR) {
        ch->last_write_bg = g;
        ch->wr_done = later(ch->wr_done, p.end);
    }
    if (ch->last_dir >= 0 && ch->last_dir != dir)
        d->st.turnarounds++;
    ch->last_dir = dir;

    d->st.segments++;
    if (p.kind == HIT)
        d->st.row_hits++;
    else if (p.kind == MISS)
        d->st.row_misses++;
    else
        d->st.row_conflicts++;
    d->st.busy_ns[c] += nbb;
    d->st.mix_ns += p.mix;
    if (first) /* not before it is ready, nor before its bus work begins */
        *first = later(p.start, p.bus_end - nbb - p.mix);
    return p.end;
}

/* segment_on channel c's state, its bank w.bi and its bank groups */
static inline __attribute__((always_inline)) double segment(sim_dram *d, int c, uint64_t nb, dram_place w, int dir,
                                                            double t, double *first)
{
    /* a small count: as a signed integer it converts to a double in one
     * instruction, where an unsigned 64-bit one takes several */
    const double nbf = (double)(int64_t)nb;
    return segment_on(d, c, &d->ch[c], &d->bank[(size_t)c * (size_t)d->nbank + (size_t)w.bi],
                      &d->bg_free[(size_t)c * (size_t)d->nbg], nbf, nbf * d->burst, w, dir, t, first);
}

/* ---- posted writes ---- */

/* The i-th entry of channel c's write buffer, counting from the oldest.
 * The ring holds at least wq_cap entries, as many as can ever be held. */
static dram_wentry *wq_at(const sim_dram *d, int c, uint32_t i)
{
    const dram_chan *ch = &d->ch[c];
    return &ch->wq[(ch->wq_head + i) & d->wq_mask];
}

/* Schedule the oldest waiting write of channel c as arriving at t. */
static void wq_release(sim_dram *d, int c, double t)
{
    dram_chan *ch = &d->ch[c];
    dram_wentry *e = wq_at(d, c, ch->wq_rel);
    double end = segment(d, c, e->nb, e->w, WR, t, &e->start);
    ch->wq_rel++;
    ch->wq_wait -= e->nb;
    d->st.last_ns = later(d->st.last_ns, end);
}

/* What a drain's releases change of channel c and of the statistics, held
 * in locals over the drain: in memory, every store through a bank or bank
 * group pointer made the compiler load them all again. */
typedef struct {
    double bus_free;                  /* ch->bus_free */
    double end;                       /* the latest end of data released: dir_end[WR], wr_done
                                         and st.last_ns are each the later of theirs and this */
    double busy, mix;                 /* st.busy_ns[c], st.mix_ns */
    uint64_t wait, kinds[3];          /* ch->wq_wait; segments by row outcome */
    uint32_t rel;                     /* ch->wq_rel */
} drain_run;

/* Release channel c's oldest waiting write in a drain: segment() for a
 * write arriving at t, on the running state r. */
static inline __attribute__((always_inline)) void drain_release(sim_dram *d, int c, double t, drain_run *r)
{
    dram_chan *ch = &d->ch[c];
    dram_wentry *e = &ch->wq[(ch->wq_head + r->rel) & d->wq_mask];
    const int g = e->w.g;
    const double nbf = (double)(int64_t)e->nb;
    const double nbb = nbf * d->burst; /* its bus time, multiplied once */
    dram_bank *b = &d->bank[(size_t)c * (size_t)d->nbank + (size_t)e->w.bi];
    double *bg_free = &d->bg_free[(size_t)c * (size_t)d->nbg];
    dram_plan p;
    for (;;) {
        plan(d, ch, b, bg_free, g, e->w.row, nbf, nbb, WR, t, r->bus_free, &p);
        if (p.start < ch->ref_due)
            break;
        ch->bus_free = r->bus_free; /* refresh reads and moves these */
        ch->dir_end[WR] = later(ch->dir_end[WR], r->end);
        refresh(d, c, t);
        r->bus_free = ch->bus_free;
    }
    const int kind = p.kind;
    if (kind != HIT)
        activated(d, ch, b, p.act);
    b->row = e->w.row;
    b->pre_ready = later(b->pre_ready, p.end + d->wr);
    r->bus_free = p.bus_end;
    bg_free[g] = p.bg_end;
    r->end = later(r->end, p.end);
    r->kinds[kind]++;
    r->busy += nbb;
    r->mix += p.mix;
    e->start = later(p.start, p.bus_end - nbb - p.mix);
    r->rel++;
    r->wait -= e->nb;
}

/* A write drain ahead of reads, from t: channel c's waiting writes pass
 * the high watermark; release them down to the low one.  Each release is
 * what wq_release makes, with the state it changes kept in a drain_run
 * (about six releases a drain in the GEMM). */
static void wq_drain(sim_dram *d, int c, double t)
{
    dram_chan *ch = &d->ch[c];
    drain_run r = {ch->bus_free, LONG_AGO, d->st.busy_ns[c], d->st.mix_ns, ch->wq_wait, {0, 0, 0}, ch->wq_rel};
    d->st.write_drains++;
    if (ch->last_dir == RD) /* the first release turns the bus (the drain has one: wait > high >= low) */
        d->st.turnarounds++;
    ch->last_dir = WR;
    while ((int64_t)r.wait > d->wq_low)
        drain_release(d, c, t, &r);
    ch->bus_free = r.bus_free;
    ch->dir_end[WR] = later(ch->dir_end[WR], r.end); /* max: in any order the same */
    ch->wr_done = later(ch->wr_done, r.end);
    ch->last_write_bg = wq_at(d, c, r.rel - 1)->w.g; /* the last released */
    ch->wq_wait = r.wait;
    ch->wq_rel = r.rel;
    d->st.busy_ns[c] = r.busy;
    d->st.mix_ns = r.mix;
    d->st.last_ns = later(d->st.last_ns, r.end);
    d->st.segments += r.kinds[HIT] + r.kinds[MISS] + r.kinds[CONFLICT];
    d->st.row_hits += r.kinds[HIT];
    d->st.row_misses += r.kinds[MISS];
    d->st.row_conflicts += r.kinds[CONFLICT];
}

/* Free, oldest first, the released entries whose data has started to go
 * out by t (the controller moves a write's data to the PHY as its WR
 * commands issue). */
static void wq_retire(sim_dram *d, int c, double t)
{
    dram_chan *ch = &d->ch[c];
    while (ch->wq_rel) {
        dram_wentry *e = wq_at(d, c, 0);
        if (e->start > t)
            break;
        ch->wq_head = (uint32_t)((ch->wq_head + 1) & d->wq_mask);
        ch->wq_n--;
        ch->wq_rel--;
        ch->wq_occ -= e->nb;
    }
}

/* Read priority: waiting writes go to the bus only when the channel has
 * no reads to serve.  Release them, oldest first, from the end of the
 * channel's read data until the bus is busy up to t (the arrival of the
 * next access to the channel: accesses arrive in order, so every read
 * queued before t has been seen).  The last one released may run past t. */
static void wq_idle(sim_dram *d, int c, double t)
{
    dram_chan *ch = &d->ch[c];
    /* the end of the read data is read only when a write waits (most
     * calls find none); the releases do not move it */
    while (ch->wq_rel < ch->wq_n && ch->bus_free < t) {
        double r = later(ch->dir_end[RD], wq_at(d, c, ch->wq_rel)->start); /* waiting: accepted then */
        if (r >= t)
            break;
        wq_release(d, c, r);
    }
}

/* Put a write segment of channel c into its buffer: nb bursts placed at w
 * (bursts and place_of of its local range); it reaches the controller at
 * x.  Returns when it is accepted: at x, or once enough older writes have
 * started to go out to make room.
 *
 * The drains this write forces (buffer full of waiting writes, or waiting
 * writes past the high watermark) are scheduled as arriving with it, at x,
 * even if it then waits for room: the controller reacts when the write
 * arrives, and ACTs and the read/write interleaving are judged from there,
 * as for any access.  A write's data still never goes out before it is in
 * the buffer: the room it waits for is made by an older write whose data
 * starts on the channel's bus pointer, and everything released later is
 * placed at or after that pointer.
 *
 * Forced inline into the access's channel loop: a call per write segment
 * (8 k a launch of the GEMM) saved and restored its registers and passed
 * the place in memory. */
static inline __attribute__((always_inline)) double wq_accept(sim_dram *d, int c, uint64_t nb, dram_place w, double x)
{
    dram_chan *ch = &d->ch[c];
    double arrive = x;
    wq_retire(d, c, x);
    while (ch->wq_occ + nb > d->wq_cap) {
        if (!ch->wq_rel) { /* full of waiting writes: drain the oldest */
            wq_release(d, c, arrive);
            continue;
        }
        x = later(x, wq_at(d, c, 0)->start); /* wait for the oldest in flight */
        wq_retire(d, c, x);
    }
    if (x > arrive) {
        d->st.write_stalls++;
        d->st.write_stall_ns += x - arrive;
    }
    dram_wentry *e = wq_at(d, c, ch->wq_n);
    e->w = w;
    e->nb = nb;
    e->start = x;
    ch->wq_n++;
    ch->wq_occ += nb;
    ch->wq_wait += nb;
    if ((int64_t)ch->wq_wait > d->wq_high)
        wq_drain(d, c, arrive);
    return x;
}

double sim_dram_drain_time(const sim_dram *d)
{
    double t = 0;
    for (int c = 0; c < d->nch; c++) {
        const dram_chan *ch = &d->ch[c];
        t = later(t, ch->wr_done);
        if (ch->wq_rel == ch->wq_n)
            continue;
        /* no further access: every waiting write goes out once the reads
         * are done; play that on a copy of the channel */
        sim_dram *s = d->shadow;
        size_t nb = (size_t)d->nbank, ng = (size_t)d->nbg, nq = (size_t)(d->wq_mask + 1), uc = (size_t)c;
        s->ch[c] = *ch;
        s->ch[c].wq = &s->wq[uc * nq]; /* its own buffer */
        memcpy(&s->bank[uc * nb], &d->bank[uc * nb], nb * sizeof *s->bank);
        memcpy(&s->bg_free[uc * ng], &d->bg_free[uc * ng], ng * sizeof *s->bg_free);
        for (uint32_t i = 0; i < ch->wq_n; i++) { /* its entries, not the whole ring */
            size_t at = uc * nq + ((ch->wq_head + i) & d->wq_mask);
            s->wq[at] = d->wq[at];
        }
        wq_idle(s, c, INFINITY);
        t = later(t, s->ch[c].wr_done);
    }
    return t;
}

/* Channel c's share [lo, hi) of an access (number `call`) arriving at t,
 * in direction dir; the end of its last segment, or t.  one: the share is
 * one row segment, of nb bursts placed at w (an access of whole blocks
 * finds these once for all channels; others leave them to this). */
static inline __attribute__((always_inline)) double chan_access(sim_dram *d, int c, uint64_t call, uint64_t lo,
                                                                uint64_t hi, int dir, double t, int one,
                                                                uint64_t nb, dram_place w)
{
    double done = t;
    if (d->wq_cap) {
        wq_idle(d, c, t);
        if (dir == WR) { /* posted: into the buffer, in address order */
            if (one)
                return wq_accept(d, c, nb, w, t + d->ack);
            for (uint64_t a = lo; a < hi;) {
                uint64_t e = (dv(a, d->drow) + 1) * d->row_bytes;
                if (e > hi)
                    e = hi;
                done = later(done, wq_accept(d, c, bursts(d, a, e), place_of(d, a), t + d->ack));
                a = e;
            }
            return done;
        }
    }
    if (one) /* one row segment: no order to choose */
        return segment(d, c, nb, w, dir, t, NULL);
    dram_bank *banks = &d->bank[(size_t)c * (size_t)d->nbank];
    /* FR-FCFS inside the access: segments whose row is open go first,
     * then the rest, each pass in address order. */
    for (int pass = 0; pass < 2; pass++) {
        for (uint64_t a = lo; a < hi;) {
            uint64_t r = dv(a, d->drow), e = (r + 1) * d->row_bytes;
            if (e > hi)
                e = hi;
            dram_place pw = place_of(d, a);
            dram_bank *b = &banks[pw.bi];
            if (pass == 0 && b->row == pw.row) {
                b->hit_call = call;
                b->hit_row = pw.row;
                done = later(done, segment(d, c, bursts(d, a, e), pw, dir, t, NULL));
            } else if (pass == 1 && !(b->hit_call == call && b->hit_row == pw.row)) {
                done = later(done, segment(d, c, bursts(d, a, e), pw, dir, t, NULL));
            }
            a = e;
        }
    }
    return done;
}

/* whole_access of a read that is one row segment on each channel (the
 * GEMM's every read): the channel's state, its bank and bank groups
 * stepped to from the last channel's, rather than found from c */
static double whole_read(sim_dram *d, uint64_t nb, dram_place w, double t)
{
    double done = t;
    dram_chan *ch = d->ch;
    dram_bank *b = &d->bank[w.bi];
    double *bg_free = d->bg_free;
    const size_t nbank = (size_t)d->nbank, nbg = (size_t)d->nbg;
    const double nbf = (double)(int64_t)nb, nbb = nbf * d->burst; /* the same on every channel */
    for (int c = 0; c < d->nch; c++, ch++, b += nbank, bg_free += nbg) {
        if (d->wq_cap)
            wq_idle(d, c, t);
        done = later(done, segment_on(d, c, ch, b, bg_free, nbf, nbb, w, RD, t, NULL));
    }
    return done;
}

/* whole_access of a posted write that is one row segment on each channel
 * (the GEMM's every write), in a function of its own as whole_read */
static double whole_write(sim_dram *d, uint64_t nb, dram_place w, double t)
{
    double done = t;
    const double x = t + d->ack; /* the same on every channel */
    for (int c = 0; c < d->nch; c++) {
        wq_idle(d, c, t);
        done = later(done, wq_accept(d, c, nb, w, x));
    }
    return done;
}

/* Every channel's share of an access of whole blocks, the same local
 * range [lo, hi) on each: called with dir a constant, so that each
 * direction gets its own copy of the channel loop with the direction's
 * branches folded away (the GEMM's every access comes here). */
static inline __attribute__((always_inline)) double whole_access(sim_dram *d, uint64_t call, uint64_t lo, uint64_t hi,
                                                                 int dir, double t, int one, uint64_t nb,
                                                                 dram_place w)
{
    if (dir == RD && one)
        return whole_read(d, nb, w, t);
    if (dir == WR && one && d->wq_cap)
        return whole_write(d, nb, w, t);
    double done = t;
    for (int c = 0; c < d->nch; c++)
        done = later(done, chan_access(d, c, call, lo, hi, dir, t, one, nb, w));
    return done;
}

double sim_dram_access(sim_dram *d, double t_ns, uint64_t addr, uint64_t bytes, int is_write)
{
    if (!bytes)
        return t_ns;
    int dir = is_write ? WR : RD;
    uint64_t call = ++d->call;
    double done = t_ns;
    const dram_span sp = span_of(d, addr, bytes);
    /* an access of whole blocks (every DMA of a compiled GEMM) gives every
     * channel the same local range: its rows, bursts and place found once */
    const int whole = sp.r0 == 0 && sp.r1 == (uint64_t)d->nch - 1 && sp.o0 == 0 && sp.o1 == d->gran - 1;
    const uint64_t whole_lo = sp.b0 * d->gran, whole_hi = (sp.b1 + 1) * d->gran;
    const int whole_one = whole && dv(whole_lo, d->drow) == dv(whole_hi - 1, d->drow);
    const uint64_t whole_nb = whole_one ? bursts(d, whole_lo, whole_hi) : 0;
    const dram_place whole_w = whole_one ? place_of(d, whole_lo) : (dram_place){0, 0, 0};
    if (whole)
        done = dir == RD ? whole_access(d, call, whole_lo, whole_hi, RD, t_ns, whole_one, whole_nb, whole_w)
                         : whole_access(d, call, whole_lo, whole_hi, WR, t_ns, whole_one, whole_nb, whole_w);
    for (int c = 0; c < d->nch && !whole; c++) {
        uint64_t lo, hi;
        if (!chan_range(d, &sp, c, &lo, &hi))
            continue;
        const int one = dv(lo, d->drow) == dv(hi - 1, d->drow);
        done = later(done, chan_access(d, c, call, lo, hi, dir, t_ns, one, one ? bursts(d, lo, hi) : 0,
                                       one ? place_of(d, lo) : (dram_place){0, 0, 0}));
    }
    if (dir == WR) {
        d->st.writes++;
        d->st.bytes_written += bytes;
    } else {
        d->st.reads++;
        d->st.bytes_read += bytes;
    }
    d->st.last_ns = later(d->st.last_ns, done);
    return done;
}
