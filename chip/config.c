/* config.c: the chip configuration file (`key = value` lines): parser, checks, key table. */
#include "chip.h"
#include "isa.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SPYRE_CONFIG_DIR
#define SPYRE_CONFIG_DIR "chip/configs"
#endif

enum {
#define K(key, ty, lo, hi, unit, doc) KEY_##key,
    CHIP_CONFIG_KEYS(K)
#undef K
    NKEYS
};

static const char *const key_names[NKEYS] = {
#define K(key, ty, lo, hi, unit, doc) #key,
    CHIP_CONFIG_KEYS(K)
#undef K
};

static const double key_range[NKEYS][2] = {
#define K(key, ty, lo, hi, unit, doc) {(double)(lo), (double)(hi)},
    CHIP_CONFIG_KEYS(K)
#undef K
};

#define IS_INT_I 1
#define IS_INT_I32 1
#define IS_INT_I64 1
#define IS_INT_U 1
#define IS_INT_D 0
/* Integer keys take and print whole numbers; the others are doubles. */
static const char key_is_int[NKEYS] = {
#define K(key, ty, lo, hi, unit, doc) IS_INT_##ty,
    CHIP_CONFIG_KEYS(K)
#undef K
};

/* Integer bounds exactly (a double cannot hold INT64_MAX). */
static const uint64_t key_int_range[NKEYS][2] = {
#define K(key, ty, lo, hi, unit, doc) {IS_INT_##ty ? (uint64_t)(lo) : 0, IS_INT_##ty ? (uint64_t)(hi) : 0},
    CHIP_CONFIG_KEYS(K)
#undef K
};

static const char *const key_unit[NKEYS] = {
#define K(key, ty, lo, hi, unit, doc) unit,
    CHIP_CONFIG_KEYS(K)
#undef K
};

static const char *const key_doc[NKEYS] = {
#define K(key, ty, lo, hi, unit, doc) doc,
    CHIP_CONFIG_KEYS(K)
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
static int broken_rule(const chip_config *c, const char **why)
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
static void key_value(const chip_config *c, int k, char *buf, size_t len)
{
    switch (k) {
#define V_I(f) snprintf(buf, len, "%lld", (long long)c->f)
#define V_I32 V_I
#define V_I64 V_I
#define V_U(f) snprintf(buf, len, "%llu", (unsigned long long)c->f)
#define V_D(f) snprintf(buf, len, "%.15g", c->f)
#define K(key, ty, lo, hi, unit, doc) case KEY_##key: V_##ty(key); break;
        CHIP_CONFIG_KEYS(K)
#undef K
    }
}

/* Is the value of key k in c outside the key's range? */
static int out_of_range(const chip_config *c, int k)
{
    switch (k) {
/* a negative int becomes >= 2^63 as uint64, above every key's maximum */
#define IN_RANGE_INT(f, lo, hi) ((uint64_t)(c->f) >= (uint64_t)(lo) && (uint64_t)(c->f) <= (uint64_t)(hi))
#define R_I(f, lo, hi) return !IN_RANGE_INT(f, lo, hi);
#define R_I32 R_I
#define R_I64 R_I
#define R_U R_I
#define R_D(f, lo, hi) return !(isfinite(c->f) && c->f >= (lo) && c->f <= (hi));
#define K(key, ty, lo, hi, unit, doc) case KEY_##key: R_##ty(key, lo, hi)
        CHIP_CONFIG_KEYS(K)
#undef K
    }
    return 0;
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

static int set_key(chip_config *cfg, int kid, const char *v, const char *where, char *err, size_t len)
{
    uint64_t u = 0;
    double d = 0;
    char *end;
    switch (kid) {
#define I_PARSE(f, lo, hi)                                                             \
    if (parse_u64(v, &u) || u < (uint64_t)(lo) || u > (uint64_t)(hi))                 \
        return isa_errf(err, len, "%s: %s = %s: must be an integer in [%" PRIu64 ", %" PRIu64 "]", \
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
            return isa_errf(err, len, "%s: %s = %s: must be a number in [%g, %g]",     \
                            where, key_names[kid], v, (double)(lo), (double)(hi));     \
        cfg->f = d;                                                                    \
        break;
#define K(kn, ty, lo, hi, unit, doc) K_##ty(kn, kn, lo, hi)
        CHIP_CONFIG_KEYS(K)
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

int chip_key_value(char *line, const char *where, char **key, char **val, char *err, size_t len)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = 0;
    char *s = trim(line);
    if (!*s)
        return 0;
    char *eq = strchr(s, '=');
    if (!eq)
        return isa_errf(err, len, "%s: expected 'key = value'", where);
    *eq = 0;
    *key = trim(s);
    *val = trim(eq + 1);
    if (!**val)
        return isa_errf(err, len, "%s: %s has no value", where, *key);
    return 1;
}

static int load_file(const char *path, chip_config *cfg, char **where_set, int depth, char *err, size_t len);

/* One line (comment stripped, NUL-terminated in place) of a configuration
 * file; where is "file:line". */
static int load_line(const char *path, char *line, const char *where, chip_config *cfg, char **where_set, int depth,
                     char *err, size_t len)
{
    char *key, *val;
    int got = chip_key_value(line, where, &key, &val, err, len);
    if (got <= 0)
        return got;
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
        /* the name is written into every program and read back by as and the ELF reader */
        _Static_assert(sizeof cfg->name == ISA_NAME_MAX, "isa_config_name_valid bounds the length");
        if (!isa_config_name_valid(val))
            return isa_errf(err, len, "%s: name '%s': at most %zu printable characters without blanks, '#', ';' or '='",
                            where, val, sizeof cfg->name - 1);
        snprintf(cfg->name, sizeof cfg->name, "%s", val);
        return 0;
    }
    for (int i = 0; i < NKEYS; i++)
        if (strcmp(key_names[i], key) == 0) {
            if (set_key(cfg, i, val, where, err, len))
                return -1;
            free(where_set[i]);
            if (!(where_set[i] = strdup(where)))
                return isa_errf(err, len, "%s: out of host memory", where);
            return 0;
        }
    return isa_errf(err, len, "%s: unknown key '%s'", where, key);
}

/* where_set[k]: "file:line" that set key k last (heap), NULL while unset.
 * The whole file at once, line by line, any line length; a NUL byte
 * anywhere is an error (isa_text_read). */
static int load_file(const char *path, chip_config *cfg, char **where_set, int depth, char *err, size_t len)
{
    if (depth > 8)
        return isa_errf(err, len, "%s: includes nested too deeply", path);
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
static int check_rules(const chip_config *cfg, char *const *where, const char *fallback, char *err, size_t errlen)
{
    const char *why;
    int k = broken_rule(cfg, &why);
    if (k < 0)
        return 0;
    char v[64];
    key_value(cfg, k, v, sizeof v);
    return isa_errf(err, errlen, "%s: %s = %s: %s", where ? where[k] : fallback, key_names[k], v, why);
}

int chip_config_load(const char *path, chip_config *cfg, char *err, size_t errlen)
{
    char *where[NKEYS] = {0};
    memset(cfg, 0, sizeof *cfg);
    int rc = load_file(path, cfg, where, 0, err, errlen);
    for (int i = 0; i < NKEYS && !rc; i++)
        if (!where[i])
            rc = isa_errf(err, errlen, "%s: missing key '%s'", path, key_names[i]);
    if (!rc && !cfg->name[0])
        rc = isa_errf(err, errlen, "%s: missing key 'name'", path);
    if (!rc)
        rc = check_rules(cfg, where, path, err, errlen);
    for (int i = 0; i < NKEYS; i++)
        free(where[i]);
    return rc;
}

int chip_config_check(const chip_config *cfg, char *err, size_t errlen)
{
    char where[96];
    snprintf(where, sizeof where, "configuration %s", cfg->name);
    for (int k = 0; k < NKEYS; k++)
        if (out_of_range(cfg, k)) {
            char v[64];
            key_value(cfg, k, v, sizeof v);
            return isa_errf(err, errlen, "%s: %s = %s: must be in [%g, %g]", where, key_names[k], v, key_range[k][0],
                            key_range[k][1]);
        }
    return check_rules(cfg, NULL, where, err, errlen);
}

const char *chip_config_dir(void)
{
    const char *env = getenv("SPYRE_CONFIG_DIR");
    return env && *env ? env : SPYRE_CONFIG_DIR;
}

char *chip_config_path(const char *name)
{
    if (strchr(name, '/') || strstr(name, ".cfg"))
        return isa_path_join(NULL, name);
    size_t n = strlen(name) + 5;
    char *file = malloc(n);
    if (!file)
        abort();
    snprintf(file, n, "%s.cfg", name);
    char *p = isa_path_join(chip_config_dir(), file);
    free(file);
    return p;
}

/* One bound of key k for the documentation table: large powers of two
 * (and one less) as 2^n, other large numbers as 1e6 (%g writes 1e+06). */
static void doc_bound(int k, int hi, char *buf, size_t len)
{
    double v = key_range[k][hi];
    uint64_t x = key_is_int[k] ? key_int_range[k][hi] : (uint64_t)v;
    int n = 0;
    while (n < 63 && (1ull << (n + 1)) <= x)
        n++;
    if ((key_is_int[k] || v == (double)x) && x >= 65536 && x == 1ull << n)
        snprintf(buf, len, "2^%d", n);
    else if (key_is_int[k] && x >= 65536 && x + 1 == 1ull << (n + 1))
        snprintf(buf, len, "2^%d-1", n + 1);
    else if (key_is_int[k])
        snprintf(buf, len, "%" PRIu64, x);
    else {
        snprintf(buf, len, "%g", v);
        char *p = strstr(buf, "e+"), *q = p ? p + 2 : NULL;
        while (q && *q == '0' && q[1])
            q++;
        if (p)
            memmove(p + 1, q, strlen(q) + 1);
    }
}

static const struct {
    int key;
    const char *rule;
} rules[] = {
#define R(key, cond, reason) {KEY_##key, reason},
    CONFIG_RULES(R)
#undef R
};

void chip_config_doc(FILE *out)
{
    fprintf(out, "| key | type | range | unit | meaning |\n|---|---|---|---|---|\n");
    for (int k = 0; k < NKEYS; k++) {
        char lo[32], hi[32];
        doc_bound(k, 0, lo, sizeof lo);
        doc_bound(k, 1, hi, sizeof hi);
        fprintf(out, "| `%s` | %s | %s%s%s | %s | %s |\n", key_names[k], key_is_int[k] ? "integer" : "number", lo,
                strcmp(lo, hi) ? " .. " : "", strcmp(lo, hi) ? hi : "", key_unit[k], key_doc[k]);
    }
    fprintf(out, "\n| key | constraint between keys, checked in this order |\n|---|---|\n");
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        fprintf(out, "| `%s` | %s |\n", key_names[rules[i].key], rules[i].rule);
}
