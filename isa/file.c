/* file.c: the one way every parser reads an input file and every command
 * writes an output file (docs/robustness.md, "Files").
 *
 * Reading: open without blocking (a FIFO's open waits for a writer),
 * fstat, refuse anything but a regular file and anything over the
 * format's size cap, all before reading a byte.
 * Writing: into a temporary file beside the target, renamed over it only
 * when everything is written, so a failed write leaves the old file as it
 * was; an existing device or FIFO is written in place and never removed. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "isa.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int isa_file_open(const char *path, uint64_t max, uint64_t *size, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0) {
        int e = errno;
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) /* a socket cannot be opened at all */
            isa_errf(err, errlen, "%s: not a regular file", path);
        else
            isa_errf(err, errlen, "%s: cannot open: %s", path, strerror(e));
        return -1;
    }
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        isa_errf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    if ((uint64_t)st.st_size > max) {
        isa_errf(err, errlen, "%s: %" PRIu64 " bytes, more than the %" PRIu64 " this kind of file may have", path,
                 (uint64_t)st.st_size, max);
        close(fd);
        return -1;
    }
    /* Reads of a regular file never block; clear the flag all the same. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    *size = (uint64_t)st.st_size;
    return fd;
}

/* Read exactly n bytes; a file that shrank underneath us is an error. */
static int read_all(int fd, char *buf, size_t n, const char *path, char *err, size_t errlen)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            isa_errf(err, errlen, "%s: read error: %s", path, k ? strerror(errno) : "the file shrank");
            return -1;
        }
        got += (size_t)k;
    }
    return 0;
}

char *isa_file_read(const char *path, uint64_t max, size_t *size, char *err, size_t errlen)
{
    uint64_t n;
    int fd = isa_file_open(path, max, &n, err, errlen);
    if (fd < 0)
        return NULL;
    char *buf = n < SIZE_MAX ? malloc((size_t)n + 1) : NULL;
    if (!buf)
        isa_errf(err, errlen, "%s: out of memory reading %" PRIu64 " bytes", path, n);
    else if (read_all(fd, buf, (size_t)n, path, err, errlen)) {
        free(buf);
        buf = NULL;
    }
    close(fd);
    if (!buf)
        return NULL;
    buf[n] = 0;
    *size = (size_t)n;
    return buf;
}

char *isa_text_read(const char *path, uint64_t max, char *err, size_t errlen)
{
    size_t n;
    char *text = isa_file_read(path, max, &n, err, errlen);
    if (!text)
        return NULL;
    const char *nul = memchr(text, 0, n);
    if (nul) {
        int line = 1;
        for (const char *q = text; q < nul; q++)
            line += *q == '\n';
        isa_errf(err, errlen, "%s:%d: a NUL byte in the text", path, line);
        free(text);
        return NULL;
    }
    return text;
}

/* ---- writing ---- */

/* The mode a new file gets from open(..., 0666): without the umask (read by
 * setting it, the only portable way; outputs are written between runs, not
 * while other threads create files). */
static mode_t new_file_mode(void)
{
    mode_t m = umask(0);
    umask(m);
    return 0666 & ~m;
}

/* "DIR/.BASE.XXXXXX" beside path, for mkstemp; BASE cut to 200 bytes so
 * that a target name near NAME_MAX (255) still has a temporary. */
static char *temp_name(const char *path)
{
    const char *base = strrchr(path, '/');
    size_t dirlen = base ? (size_t)(base - path + 1) : 0;
    base = base ? base + 1 : path;
    char *t = malloc(dirlen + strlen(base) + 9);
    if (t)
        sprintf(t, "%.*s.%.200s.XXXXXX", (int)dirlen, path, base);
    return t;
}

/* A device or FIFO is written in place, but only at the end, from an
 * anonymous temporary file: writers (libelf) may seek, and a failed run
 * sends nothing. */
static int open_in_place(isa_outfile *o, char *err, size_t errlen)
{
    o->in_place = 1;
    if (!(o->f = tmpfile())) {
        isa_errf(err, errlen, "%s: cannot create a temporary file: %s", o->path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Copy the finished temporary into the device or FIFO. */
static int copy_in_place(isa_outfile *o, char *err, size_t errlen)
{
    int fd = open(o->path, O_WRONLY | O_NOCTTY);
    if (fd < 0) {
        isa_errf(err, errlen, "%s: cannot open: %s", o->path, strerror(errno));
        return -1;
    }
    char buf[65536];
    size_t n;
    int rc = 0;
    rewind(o->f);
    while (!rc && (n = fread(buf, 1, sizeof buf, o->f)) > 0)
        for (size_t done = 0; !rc && done < n;) {
            ssize_t k = write(fd, buf + done, n - done);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0)
                rc = -1;
            else
                done += (size_t)k;
        }
    if (ferror(o->f))
        rc = -1;
    int e = errno;
    if (close(fd) && !rc) {
        rc = -1;
        e = errno;
    }
    if (rc)
        isa_errf(err, errlen, "%s: write error: %s", o->path, strerror(e));
    return rc;
}

static int open_temp(isa_outfile *o, const struct stat *old, char *err, size_t errlen)
{
    o->tmp = temp_name(o->path);
    int fd = o->tmp ? mkstemp(o->tmp) : -1;
    if (fd < 0) {
        isa_errf(err, errlen, "%s: cannot create: %s", o->path, o->tmp ? strerror(errno) : "out of memory");
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    /* mkstemp makes the file 0600: give it the mode the old file had, or a
     * new file's. */
    if (fchmod(fd, old ? old->st_mode & 07777 : new_file_mode()) || !(o->f = fdopen(fd, "w"))) {
        isa_errf(err, errlen, "%s: cannot create: %s", o->path, strerror(errno));
        close(fd);
        unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    return 0;
}

int isa_out_open(isa_outfile *o, const char *path, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        isa_errf(err, errlen, "%s: is a directory", path);
        return -1;
    }
    /* Through a symbolic link the file it names is replaced, not the link. */
    o->path = exists ? realpath(path, NULL) : strdup(path);
    if (!o->path) {
        isa_errf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = exists && !S_ISREG(st.st_mode) ? open_in_place(o, err, errlen)
                                             : open_temp(o, exists ? &st : NULL, err, errlen);
    if (rc) {
        free(o->path);
        o->path = NULL;
    }
    return rc;
}

int isa_out_close(isa_outfile *o, int ok, char *err, size_t errlen)
{
    if (!o->f)
        return -1;
    int rc = ok ? 0 : -1;
    if (ok && (fflush(o->f) || ferror(o->f))) {
        isa_errf(err, errlen, "%s: write error: %s", o->path, strerror(errno));
        rc = -1;
    }
    if (o->in_place && rc == 0)
        rc = copy_in_place(o, err, errlen);
    if (fclose(o->f) && rc == 0) {
        isa_errf(err, errlen, "%s: write error: %s", o->path, strerror(errno));
        rc = -1;
    }
    if (o->tmp && rc == 0 && rename(o->tmp, o->path)) {
        isa_errf(err, errlen, "%s: cannot rename %s into place: %s", o->path, o->tmp, strerror(errno));
        rc = -1;
    }
    if (o->tmp && rc)
        unlink(o->tmp); /* only ever the temporary: we made it */
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
    return rc;
}

/* ---- paths ---- */

char *isa_path_join(const char *dir, const char *name)
{
    if (name[0] == '/')
        dir = NULL;
    size_t n = (dir ? strlen(dir) + 1 : 0) + strlen(name) + 1;
    char *p = malloc(n);
    if (!p) {
        fprintf(stderr, "spyre: out of memory\n");
        abort();
    }
    snprintf(p, n, "%s%s%s", dir ? dir : "", dir ? "/" : "", name);
    return p;
}

char *isa_text_line(char **cur)
{
    char *line = *cur;
    if (!*line)
        return NULL;
    char *nl = strchr(line, '\n');
    if (nl) {
        *nl = 0;
        *cur = nl + 1;
    } else {
        *cur = line + strlen(line);
    }
    return line;
}
