/* fuzzutil: scratch files and checks shared by the libFuzzer targets. */
#include "fuzzutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char scratch[256];
static char names[8][64];
static int nnames;

static void scratch_remove(void)
{
    char path[1024];
    for (int i = 0; i < nnames; i++) {
        snprintf(path, sizeof path, "%s/%s", scratch, names[i]);
        unlink(path);
    }
    rmdir(scratch);
}

/* The private directory, made once; each name used in it is remembered so
 * that the exit handler removes exactly what the harness created. */
static const char *scratch_path(const char *name)
{
    static char path[512];
    if (!scratch[0]) {
        /* memory-backed when possible: a disk's metadata updates made the
         * file targets 15 times slower */
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !*tmp)
            tmp = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(scratch, sizeof scratch, "%s/spyre-fuzz-XXXXXX", tmp);
        if (!mkdtemp(scratch))
            fz_fail("mkdtemp", scratch);
        atexit(scratch_remove);
    }
    int known = 0;
    for (int i = 0; i < nnames; i++)
        known |= !strcmp(names[i], name);
    if (!known) {
        if (nnames == 8 || strlen(name) >= sizeof names[0])
            fz_fail("too many scratch names", name);
        snprintf(names[nnames++], sizeof names[0], "%s", name);
    }
    snprintf(path, sizeof path, "%s/%s", scratch, name);
    return path;
}

char *fz_text(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        fz_fail("malloc", "input copy");
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

const char *fz_file(const char *name, const uint8_t *data, size_t size)
{
    const char *path = scratch_path(name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        fz_fail("cannot create", path);
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0)
            fz_fail("cannot write", path);
        done += (size_t)n;
    }
    if (close(fd))
        fz_fail("cannot close", path);
    return path;
}

void fz_link(const char *name, const char *target)
{
    const char *path = scratch_path(name);
    unlink(path);
    if (symlink(target, path))
        fz_fail("cannot link", path);
}

void *fz_parse(const uint8_t *data, size_t size, fz_parser parse, const char *name)
{
    char *text = fz_text(data, size), err[512];
    void *obj = parse(text, name, err, sizeof err);
    free(text);
    return obj;
}

void fz_round_trip(const fz_format *fmt, const uint8_t *data, size_t size)
{
    char *first = fz_parse(data, size, fmt->reprint, fmt->input_name), err[512];
    if (!first)
        return;
    char *second = fmt->reprint(first, fmt->print_name, err, sizeof err);
    if (!second) {
        fprintf(stderr, "%s:\n%s\n", fmt->print_label, first);
        fz_fail(fmt->no_parse, err);
    }
    if (strcmp(first, second)) {
        fprintf(stderr, "%s:\n%s\n%s:\n%s\n", fmt->first_label, first, fmt->second_label, second);
        fz_fail(fmt->differs, fmt->differ_detail);
    }
    free(first);
    free(second);
}

void fz_fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz harness: %s: %s\n", what, detail);
    abort();
}

void fz_config(const char *name, chip_config *cfg)
{
    char err[512], *path = chip_config_path(name);
    if (chip_config_load(path, cfg, err, sizeof err))
        fz_fail("the shipped configuration does not load", err);
    free(path);
}
