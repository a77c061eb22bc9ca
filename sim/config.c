/* config.c: the chip configuration file (`key = value` lines). */
#include "sim.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SPYRE_CONFIG_DIR
#define SPYRE_CONFIG_DIR "sim/configs"
#endif

/* K(key, type, field, min, max): every key with its valid range; type I =
 * int, I32 = uint32, I64 = int64, U = uint64, D = double.  Constraints
 * between keys (and shapes such as "a power of two") are CONFIG_RULES. */
#define CONFIG_KEYS(K)                                              \
    K(cores, I, cores, 1, 256)                                      \
    K(corelets, I, corelets, 2, 2)                                  \
    K(lx_bytes, U, lx_bytes, 4096, 1ull << 30)                      \
    K(lx_usable_bytes, U, lx_usable_bytes, 128, 1ull << 30)         \
    K(stick_bytes, I32, stick_bytes, 128, 128)                      \
    K(pt_rows, I, pt_rows, 1, 1024)                                 \
    K(pt_cols, I, pt_cols, 1, 1024)                                 \
    K(tokens, I, tokens, 1, 256)                                    \
    K(token_max, I64, token_max, 1, INT64_MAX)                      \
    K(queue_depth, I, queue_depth, 1, 4096)                         \
    K(dram_bytes, U, dram_bytes, 1 << 20, 1ull << 40)               \
    K(dram_page_bytes, U, dram_page_bytes, 4096, 1ull << 30)        \
    K(dram_align, U, dram_align, 128, 1ull << 30)                   \
    K(clock_ghz, D, clock_ghz, 0.001, 100)                          \
    K(ring_bytes_per_cycle, I, ring_bytes_per_cycle, 1, 1 << 20)   \
    K(ring_hop_cycles, D, ring_hop_cycles, 0, 1e6)                  \
    K(ring_dram_ports, I, ring_dram_ports, 1, 256)                  \
    K(seq_issue_cycles, D, seq_issue_cycles, 0, 1e6)                \
    K(sync_cycles, D, sync_cycles, 0, 1e6)                          \
    K(barrier_cycles, D, barrier_cycles, 0, 1e9)                    \
    K(pt_lanes, I, pt_lanes, 1, 1024)                               \
    K(pt_issue_cycles, D, pt_issue_cycles, 0, 1e6)                  \
    K(pt_fill_cycles, D, pt_fill_cycles, 0, 1e6)                    \
    K(pt_k_step_cycles, D, pt_k_step_cycles, 0.01, 1e3)             \
    K(sfp_issue_cycles, D, sfp_issue_cycles, 0, 1e6)                \
    K(sfp_simple_cycles, D, sfp_simple_cycles, 0, 1e6)              \
    K(sfp_complex_cycles, D, sfp_complex_cycles, 0, 1e6)            \
    K(dma_issue_cycles, D, dma_issue_cycles, 0, 1e6)                \
    K(lx_bytes_per_cycle, D, lx_bytes_per_cycle, 1, 1e6)            \
    K(dram_channels, I, dram_channels, 1, 64)                       \
    K(dram_bank_groups, I, dram_bank_groups, 1, 64)                 \
    K(dram_banks_per_group, I, dram_banks_per_group, 1, 64)         \
    K(dram_row_bytes, I32, dram_row_bytes, 32, 1 << 20)             \
    K(dram_interleave_bytes, I32, dram_interleave_bytes, 32, 1u << 31) \
    K(dram_burst_bytes, I32, dram_burst_bytes, 1, 4096)             \
    K(dram_tck_ns, D, dram_tck_ns, 0.01, 100)                       \
    K(dram_burst_tck, D, dram_burst_tck, 0.25, 64)                  \
    K(dram_cl, D, dram_cl, 0, 4096)                                 \
    K(dram_cwl, D, dram_cwl, 0, 4096)                               \
    K(dram_rcd, D, dram_rcd, 0, 4096)                               \
    K(dram_rp, D, dram_rp, 0, 4096)                                 \
    K(dram_rp_all, D, dram_rp_all, 0, 4096)                         \
    K(dram_ras, D, dram_ras, 0, 4096)                               \
    K(dram_rc, D, dram_rc, 0, 4096)                                 \
    K(dram_wr, D, dram_wr, 0, 4096)                                 \
    K(dram_rtp, D, dram_rtp, 0, 4096)                               \
    K(dram_ccd, D, dram_ccd, 0, 4096)                               \
    K(dram_rrd, D, dram_rrd, 0, 4096)                               \
    K(dram_wtr_s, D, dram_wtr_s, 0, 4096)                           \
    K(dram_wtr_l, D, dram_wtr_l, 0, 4096)                           \
    K(dram_faw, D, dram_faw, 0, 4096)                               \
    K(dram_rtw, D, dram_rtw, 0, 4096)                               \
    K(dram_trefi_ns, D, dram_trefi_ns, 1, 1e9)                      \
    K(dram_trfc_ns, D, dram_trfc_ns, 0, 1e6)                        \
    K(dram_rw_switch_bytes, I32, dram_rw_switch_bytes, 32, 1u << 31) \
    K(dram_reorder_bursts, D, dram_reorder_bursts, 0, 1e9)          \
    K(dram_write_buffer_bytes, D, dram_write_buffer_bytes, 0, 1 << 20)   \
    K(dram_write_high_pct, D, dram_write_high_pct, 0, 100)          \
    K(dram_write_low_pct, D, dram_write_low_pct, 0, 100)            \
    K(dram_write_ack_ns, D, dram_write_ack_ns, 0, 1e6)

enum {
#define K(key, ty, f, lo, hi) KEY_##key,
    CONFIG_KEYS(K)
#undef K
    NKEYS
};

static const char *const key_names[NKEYS] = {
#define K(key, ty, f, lo, hi) #key,
    CONFIG_KEYS(K)
#undef K
};

static const double key_range[NKEYS][2] = {
#define K(key, ty, f, lo, hi) {(double)(lo), (double)(hi)},
    CONFIG_KEYS(K)
#undef K
};

#define STICKS(n) ((uint64_t)(n) * c->stick_bytes)
#define POW2(x) ((x) && !((x) & ((x) - 1)))
/* The refresh interval must leave time for work between refreshes: the
 * refresh itself plus the precharge, activate and CAS around it. */
#define REFRESH_WAKE_NS                                                                              \
    (c->dram_trfc_ns +                                                                               \
     (c->dram_rp_all + c->dram_rcd + (c->dram_cl > c->dram_cwl ? c->dram_cl : c->dram_cwl)) * c->dram_tck_ns)

/* R(key, condition on c, reason): what the simulator and the compiler
 * need of values that are each in range; checked in order, the first one
 * broken is reported against its key. */
#define CONFIG_RULES(R)                                                                                       \
    R(lx_usable_bytes, c->lx_usable_bytes <= c->lx_bytes, "must not exceed lx_bytes")                          \
    R(lx_usable_bytes, c->lx_usable_bytes % c->stick_bytes == 0, "must be a whole number of sticks (stick_bytes)") \
    R(lx_bytes, c->lx_bytes % STICKS(16) == 0,                                                                 \
      "must be a multiple of 16 sticks (the race detector tracks blocks of 16 sticks)")                        \
    R(dram_page_bytes, POW2(c->dram_page_bytes), "must be a power of two (pages are found by shifting)")        \
    R(dram_page_bytes, c->dram_page_bytes % STICKS(16) == 0,                                                   \
      "must be a multiple of 16 sticks (the race detector tracks blocks of 16 sticks)")                        \
    R(dram_bytes, c->dram_bytes / c->dram_page_bytes <= (1u << 24),                                            \
      "needs more than 2^24 pages of dram_page_bytes (the sparse store keeps a host pointer per page)")        \
    R(dram_align, POW2(c->dram_align), "must be a power of two")                                               \
    R(dram_align, c->dram_align % c->stick_bytes == 0, "must be a whole number of sticks (stick_bytes)")       \
    R(dram_bytes, c->dram_bytes >= c->dram_align, "must be at least dram_align")                               \
    R(ring_dram_ports, c->ring_dram_ports <= c->cores, "must not exceed cores (each port is a stop on the ring)") \
    R(dram_burst_bytes, POW2(c->dram_burst_bytes), "must be a power of two")                                   \
    R(dram_row_bytes, c->dram_row_bytes % c->dram_burst_bytes == 0,                                            \
      "must be a whole number of bursts (dram_burst_bytes)")                                                   \
    R(dram_interleave_bytes, c->dram_interleave_bytes % c->dram_burst_bytes == 0,                              \
      "must be a whole number of bursts (dram_burst_bytes)")                                                   \
    R(dram_write_buffer_bytes, fmod(c->dram_write_buffer_bytes, c->dram_burst_bytes) == 0,                     \
      "must be 0 (writes not posted) or a whole number of bursts (dram_burst_bytes)")                          \
    R(dram_write_buffer_bytes, c->dram_write_buffer_bytes == 0 || c->dram_write_buffer_bytes >= c->dram_row_bytes, \
      "must be 0 (writes not posted) or hold at least one row (dram_row_bytes)")                               \
    R(dram_write_low_pct, c->dram_write_low_pct <= c->dram_write_high_pct, "must not exceed dram_write_high_pct") \
    R(dram_trefi_ns, c->dram_trefi_ns > REFRESH_WAKE_NS,                                                       \
      "must exceed dram_trfc_ns plus (dram_rp_all + dram_rcd + max(dram_cl, dram_cwl)) x dram_tck_ns")

/* The key of the first rule c breaks, with its reason; -1 when none. */
static int broken_rule(const sim_config *c, const char **why)
{
#define R(key, cond, reason)   \
    if (!(cond)) {             \
        *why = reason;         \
        return KEY_##key;      \
    }
    CONFIG_RULES(R)
#undef R
    return -1;
}

/* The value of key k in c, as text. */
static void key_value(const sim_config *c, int k, char *buf, size_t len)
{
    switch (k) {
#define V_I(f) snprintf(buf, len, "%lld", (long long)c->f)
#define V_I32 V_I
#define V_I64 V_I
#define V_U(f) snprintf(buf, len, "%llu", (unsigned long long)c->f)
#define V_D(f) snprintf(buf, len, "%.15g", c->f)
#define K(key, ty, f, lo, hi) case KEY_##key: V_##ty(f); break;
        CONFIG_KEYS(K)
#undef K
    }
}

/* Is the value of key k in c outside the key's range? */
static int out_of_range(const sim_config *c, int k)
{
    switch (k) {
/* a negative int becomes >= 2^63 as uint64, above every key's maximum */
#define IN_RANGE_INT(f, lo, hi) ((uint64_t)(c->f) >= (uint64_t)(lo) && (uint64_t)(c->f) <= (uint64_t)(hi))
#define R_I(f, lo, hi) return !IN_RANGE_INT(f, lo, hi);
#define R_I32 R_I
#define R_I64 R_I
#define R_U R_I
#define R_D(f, lo, hi) return !(isfinite(c->f) && c->f >= (lo) && c->f <= (hi));
#define K(key, ty, f, lo, hi) case KEY_##key: R_##ty(f, lo, hi)
        CONFIG_KEYS(K)
#undef K
    }
    return 0;
}

static int seterr(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

static int parse_u64(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    if (*v == '-')
        return -1;
    unsigned long long x = strtoull(v, &end, 0);
    if (errno || end == v || *end)
        return -1;
    *out = x;
    return 0;
}

static int set_key(sim_config *cfg, int kid, const char *v, const char *where, char *err, size_t len)
{
    uint64_t u = 0;
    double d = 0;
    char *end;
    switch (kid) {
#define I_PARSE(f, lo, hi)                                                             \
    if (parse_u64(v, &u) || u < (uint64_t)(lo) || u > (uint64_t)(hi))                 \
        return seterr(err, len, "%s: %s = %s: must be an integer in [%" PRIu64 ", %" PRIu64 "]", \
                      where, key_names[kid], v, (uint64_t)(lo), (uint64_t)(hi));
#define K_I(kn, f, lo, hi) case KEY_##kn: I_PARSE(f, lo, hi) cfg->f = (int)u; break;
#define K_I32(kn, f, lo, hi) case KEY_##kn: I_PARSE(f, lo, hi) cfg->f = (uint32_t)u; break;
#define K_I64(kn, f, lo, hi) case KEY_##kn: I_PARSE(f, lo, hi) cfg->f = (int64_t)u; break;
#define K_U(kn, f, lo, hi) case KEY_##kn: I_PARSE(f, lo, hi) cfg->f = u; break;
#define K_D(kn, f, lo, hi)                                                            \
    case KEY_##kn:                                                                    \
        errno = 0;                                                                     \
        d = strtod(v, &end);                                                           \
        if (errno || end == v || *end || !isfinite(d) || d < (lo) || d > (hi))         \
            return seterr(err, len, "%s: %s = %s: must be a number in [%g, %g]", where,   \
                          key_names[kid], v, (double)(lo), (double)(hi));              \
        cfg->f = d;                                                                    \
        break;
#define K(kn, ty, f, lo, hi) K_##ty(kn, f, lo, hi)
        CONFIG_KEYS(K)
#undef K
    }
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
        *--e = 0;
    return s;
}

static int load_file(const char *path, sim_config *cfg, char **where_set, int depth, char *err, size_t len);

/* One line (comment stripped, NUL-terminated in place) of a configuration
 * file; where is "file:line". */
static int load_line(const char *path, char *line, const char *where, sim_config *cfg, char **where_set, int depth,
                     char *err, size_t len)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = 0;
    char *s = trim(line);
    if (!*s)
        return 0;
    char *eq = strchr(s, '=');
    if (!eq)
        return seterr(err, len, "%s: expected 'key = value'", where);
    *eq = 0;
    char *key = trim(s), *val = trim(eq + 1);
    if (!*val)
        return seterr(err, len, "%s: %s has no value", where, key);
    if (strcmp(key, "include") == 0) {
        /* relative to the including file's directory */
        const char *slash = strrchr(path, '/');
        char *dir = slash ? strndup(path, (size_t)(slash - path)) : NULL;
        if (slash && !dir)
            abort();
        char *inc = isa_path_join(dir, val);
        int rc = load_file(inc, cfg, where_set, depth + 1, err, len);
        free(inc);
        free(dir);
        return rc;
    }
    if (strcmp(key, "name") == 0) {
        snprintf(cfg->name, sizeof cfg->name, "%s", val);
        return 0;
    }
    for (int i = 0; i < NKEYS; i++)
        if (strcmp(key_names[i], key) == 0) {
            if (set_key(cfg, i, val, where, err, len))
                return -1;
            free(where_set[i]);
            if (!(where_set[i] = strdup(where)))
                return seterr(err, len, "%s: out of host memory", where);
            return 0;
        }
    return seterr(err, len, "%s: unknown key '%s'", where, key);
}

/* where_set[k]: "file:line" that set key k last (heap), NULL while unset.
 * The whole file at once, line by line, any line length; a NUL byte
 * anywhere is an error (isa_text_read). */
static int load_file(const char *path, sim_config *cfg, char **where_set, int depth, char *err, size_t len)
{
    if (depth > 8)
        return seterr(err, len, "%s: includes nested too deeply", path);
    char *text = isa_text_read(path, ISA_CONFIG_MAX, err, len);
    if (!text)
        return -1;
    char *where = malloc(strlen(path) + 24);
    if (!where)
        abort();
    int lineno = 0, rc = 0;
    char *cur = text, *line;
    while (!rc && (line = isa_text_line(&cur))) {
        sprintf(where, "%s:%d", path, ++lineno);
        rc = load_line(path, line, where, cfg, where_set, depth, err, len);
    }
    free(where);
    free(text);
    return rc;
}

/* "WHERE: KEY = VALUE: reason" for the first rule cfg breaks; 0 if none. */
static int check_rules(const sim_config *cfg, char *const *where, const char *fallback, char *err, size_t errlen)
{
    const char *why;
    int k = broken_rule(cfg, &why);
    if (k < 0)
        return 0;
    char v[64];
    key_value(cfg, k, v, sizeof v);
    return seterr(err, errlen, "%s: %s = %s: %s", where ? where[k] : fallback, key_names[k], v, why);
}

int sim_config_load(const char *path, sim_config *cfg, char *err, size_t errlen)
{
    char *where[NKEYS] = {0};
    memset(cfg, 0, sizeof *cfg);
    int rc = load_file(path, cfg, where, 0, err, errlen);
    for (int i = 0; i < NKEYS && !rc; i++)
        if (!where[i])
            rc = seterr(err, errlen, "%s: missing key '%s'", path, key_names[i]);
    if (!rc && !cfg->name[0])
        rc = seterr(err, errlen, "%s: missing key 'name'", path);
    if (!rc)
        rc = check_rules(cfg, where, path, err, errlen);
    for (int i = 0; i < NKEYS; i++)
        free(where[i]);
    return rc;
}

int sim_config_check(const sim_config *cfg, char *err, size_t errlen)
{
    char where[96];
    snprintf(where, sizeof where, "configuration %s", cfg->name);
    for (int k = 0; k < NKEYS; k++)
        if (out_of_range(cfg, k)) {
            char v[64];
            key_value(cfg, k, v, sizeof v);
            return seterr(err, errlen, "%s: %s = %s: must be in [%g, %g]", where, key_names[k], v, key_range[k][0],
                          key_range[k][1]);
        }
    return check_rules(cfg, NULL, where, err, errlen);
}

const char *sim_config_dir(void)
{
    const char *env = getenv("SPYRE_CONFIG_DIR");
    return env && *env ? env : SPYRE_CONFIG_DIR;
}

char *sim_config_path(const char *name)
{
    if (strchr(name, '/') || strstr(name, ".cfg"))
        return isa_path_join(NULL, name);
    size_t n = strlen(name) + 5;
    char *file = malloc(n);
    if (!file)
        abort();
    snprintf(file, n, "%s.cfg", name);
    char *p = isa_path_join(sim_config_dir(), file);
    free(file);
    return p;
}
