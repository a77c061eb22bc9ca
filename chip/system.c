/* system.c: a system of several cards (`key = value` lines, chip/configs/NAME.sys): parser and key table. */
#include "chip.h"
#include "isa.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
#define S(key, ty, lo, hi, unit, doc) SKEY_##key,
    CHIP_SYSTEM_KEYS(S)
#undef S
    NSKEYS
};

static const struct {
    const char *name, *unit, *doc;
    double lo, hi;
    int is_int;
} skeys[NSKEYS] = {
#define IS_INT_I 1
#define IS_INT_D 0
#define S(key, ty, lo, hi, unit, doc) {#key, unit, doc, (double)(lo), (double)(hi), IS_INT_##ty},
    CHIP_SYSTEM_KEYS(S)
#undef S
};

/* The value v of key k into sys, checked against its range. */
static int set_skey(chip_system *sys, int k, const char *v, const char *where, char *err, size_t len)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(d) || d < skeys[k].lo || d > skeys[k].hi ||
        (skeys[k].is_int && d != floor(d)))
        return isa_errf(err, len, "%s: %s = %s: must be %s in [%g, %g]", where, skeys[k].name, v,
                        skeys[k].is_int ? "an integer" : "a number", skeys[k].lo, skeys[k].hi);
    switch (k) {
#define SET_I(f) sys->f = (int)d
#define SET_D(f) sys->f = d
#define S(key, ty, lo, hi, unit, doc) case SKEY_##key: SET_##ty(key); break;
        CHIP_SYSTEM_KEYS(S)
#undef S
    }
    return 0;
}

/* The chip every card is: a name of chip/configs or a path relative to the system file. */
static int load_chip(const char *path, const char *val, chip_system *sys, const char *where, char *err, size_t len)
{
    char *cpath;
    if (strchr(val, '/') || strstr(val, ".cfg")) {
        const char *slash = strrchr(path, '/');
        char *dir = slash ? strndup(path, (size_t)(slash - path)) : NULL;
        cpath = isa_path_join(dir, val);
        free(dir);
    } else
        cpath = chip_config_path(val);
    char msg[400];
    int rc = chip_config_load(cpath, &sys->chip, msg, sizeof msg);
    free(cpath);
    return rc ? isa_errf(err, len, "%s: chip = %s: %s", where, val, msg) : 0;
}

/* One line of the file; seen[k] marks keys set, seen[NSKEYS] the chip. */
static int load_sline(const char *path, char *line, const char *where, chip_system *sys, char *seen, char *err,
                      size_t len)
{
    char *key, *val;
    int got = chip_key_value(line, where, &key, &val, err, len);
    if (got <= 0)
        return got;
    if (!strcmp(key, "name")) {
        if (!isa_config_name_valid(val))
            return isa_errf(err, len, "%s: name '%s': at most %zu printable characters without blanks, '#', ';' or '='",
                            where, val, sizeof sys->name - 1);
        snprintf(sys->name, sizeof sys->name, "%s", val);
        return 0;
    }
    if (!strcmp(key, "chip")) {
        seen[NSKEYS] = 1;
        return load_chip(path, val, sys, where, err, len);
    }
    for (int k = 0; k < NSKEYS; k++)
        if (!strcmp(key, skeys[k].name)) {
            seen[k] = 1;
            return set_skey(sys, k, val, where, err, len);
        }
    return isa_errf(err, len, "%s: unknown key '%s'", where, key);
}

int chip_system_load(const char *path, chip_system *sys, char *err, size_t errlen)
{
    memset(sys, 0, sizeof *sys);
    char *text = isa_text_read(path, ISA_CONFIG_MAX, err, errlen);
    if (!text)
        return -1;
    char where[1100], seen[NSKEYS + 1] = {0};
    int lineno = 0, rc = 0;
    char *cur = text, *line;
    while (!rc && (line = isa_text_line(&cur))) {
        snprintf(where, sizeof where, "%s:%d", path, ++lineno);
        rc = load_sline(path, line, where, sys, seen, err, errlen);
    }
    free(text);
    for (int k = 0; k < NSKEYS && !rc; k++)
        if (!seen[k])
            rc = isa_errf(err, errlen, "%s: missing key '%s'", path, skeys[k].name);
    if (!rc && !seen[NSKEYS])
        rc = isa_errf(err, errlen, "%s: missing key 'chip'", path);
    if (!rc && !sys->name[0])
        rc = isa_errf(err, errlen, "%s: missing key 'name'", path);
    return rc;
}

char *chip_system_path(const char *name)
{
    if (strchr(name, '/') || strstr(name, ".sys"))
        return isa_path_join(NULL, name);
    size_t n = strlen(name) + 5;
    char *file = malloc(n);
    if (!file)
        abort();
    snprintf(file, n, "%s.sys", name);
    char *p = isa_path_join(chip_config_dir(), file);
    free(file);
    return p;
}

void chip_system_doc(FILE *out)
{
    fprintf(out, "| key | type | range | unit | meaning |\n|---|---|---|---|---|\n");
    fprintf(out, "| `chip` | name | a chip configuration | | every card's chip (chip/configs/NAME.cfg or a path) |\n");
    for (int k = 0; k < NSKEYS; k++)
        fprintf(out, "| `%s` | %s | %g .. %g | %s | %s |\n", skeys[k].name, skeys[k].is_int ? "integer" : "number",
                skeys[k].lo, skeys[k].hi, skeys[k].unit, skeys[k].doc);
}
