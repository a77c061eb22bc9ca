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

/* K(key, type, field, min, max); type I = integer, U = uint64, D = double. */
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
    K(queue_depth, I, queue_depth, 1, 1 << 20)                      \
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
    K(dram_write_buffer_bytes, D, dram_write_buffer_bytes, 0, 1 << 30)   \
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
        return seterr(err, len, "%s: %s must be an integer in [%" PRIu64 ", %" PRIu64 "], got '%s'", \
                      where, key_names[kid], (uint64_t)(lo), (uint64_t)(hi), v);
#define K_I(kn, f, lo, hi) case KEY_##kn: I_PARSE(f, lo, hi) cfg->f = (int)u; break;
#define K_I32(kn, f, lo, hi) case KEY_##kn: I_PARSE(f, lo, hi) cfg->f = (uint32_t)u; break;
#define K_I64(kn, f, lo, hi) case KEY_##kn: I_PARSE(f, lo, hi) cfg->f = (int64_t)u; break;
#define K_U(kn, f, lo, hi) case KEY_##kn: I_PARSE(f, lo, hi) cfg->f = u; break;
#define K_D(kn, f, lo, hi)                                                            \
    case KEY_##kn:                                                                    \
        errno = 0;                                                                     \
        d = strtod(v, &end);                                                           \
        if (errno || end == v || *end || !isfinite(d) || d < (lo) || d > (hi))         \
            return seterr(err, len, "%s: %s must be a number in [%g, %g], got '%s'", where, \
                          key_names[kid], (double)(lo), (double)(hi), v);              \
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

static int load_file(const char *path, sim_config *cfg, int *seen, int depth, char *err, size_t len);

/* One line (comment stripped, NUL-terminated in place) of a configuration
 * file; where is "file:line". */
static int load_line(const char *path, char *line, const char *where, sim_config *cfg, int *seen, int depth,
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
        int rc = load_file(inc, cfg, seen, depth + 1, err, len);
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
            seen[i] = 1;
            return set_key(cfg, i, val, where, err, len);
        }
    return seterr(err, len, "%s: unknown key '%s'", where, key);
}

/* The whole file at once, line by line, any line length; a NUL byte
 * anywhere is an error (isa_text_read). */
static int load_file(const char *path, sim_config *cfg, int *seen, int depth, char *err, size_t len)
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
        rc = load_line(path, line, where, cfg, seen, depth, err, len);
    }
    free(where);
    free(text);
    return rc;
}

int sim_config_load(const char *path, sim_config *cfg, char *err, size_t errlen)
{
    int seen[NKEYS] = {0};
    memset(cfg, 0, sizeof *cfg);
    if (load_file(path, cfg, seen, 0, err, errlen))
        return -1;
    for (int i = 0; i < NKEYS; i++)
        if (!seen[i])
            return seterr(err, errlen, "%s: missing key '%s'", path, key_names[i]);
    if (!cfg->name[0])
        return seterr(err, errlen, "%s: missing key 'name'", path);
    if (cfg->lx_usable_bytes > cfg->lx_bytes)
        return seterr(err, errlen, "%s: lx_usable_bytes exceeds lx_bytes", path);
    /* the race detector tracks LX and DRAM pages in blocks of 16 sticks */
    if (cfg->lx_bytes % (16ull * cfg->stick_bytes))
        return seterr(err, errlen, "%s: lx_bytes must be a multiple of 16 sticks (%u bytes)", path, 16 * cfg->stick_bytes);
    if (cfg->dram_page_bytes % (16ull * cfg->stick_bytes))
        return seterr(err, errlen, "%s: dram_page_bytes must be a multiple of 16 sticks", path);
    if (cfg->dram_page_bytes & (cfg->dram_page_bytes - 1))
        return seterr(err, errlen, "%s: dram_page_bytes must be a power of two", path);
    if (cfg->dram_align & (cfg->dram_align - 1))
        return seterr(err, errlen, "%s: dram_align must be a power of two", path);
    return 0;
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
