/* fuzzutil: shared helpers of the libFuzzer targets (docs/robustness.md, "Fuzzing"). */
#ifndef FUZZUTIL_H
#define FUZZUTIL_H

#include "chip.h"

#include <stddef.h>
#include <stdint.h>

/* The libFuzzer entry points: every target defines the second, those
 * with something to set up once the first (libFuzzer's is optional). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (a NUL inside stays: the parser
 * must cope with it).  Freed by the caller. */
char *fz_text(const uint8_t *data, size_t size);

/* For parsers that take only a path: the input written to a file named
 * NAME inside this process's private scratch directory (made on the first
 * call, removed at exit; in $TMPDIR, else /dev/shm, else /tmp), whose
 * path is returned.  Aborts if the write
 * fails: that is the harness's fault, not the parser's. */
const char *fz_file(const char *name, const uint8_t *data, size_t size);
/* Link TARGET into the scratch directory as NAME (e.g. a shipped
 * configuration that an input may include). */
void fz_link(const char *name, const char *target);

/* A parser of text in memory, as the harnesses call it (each wraps its
 * library's function to return void *). */
typedef void *(*fz_parser)(const char *text, const char *name, char *err, size_t errlen);

/* The input parsed as text named NAME; NULL when it does not parse. */
void *fz_parse(const uint8_t *data, size_t size, fz_parser parse, const char *name);

/* A text format whose print must parse back to the same print: reprint
 * parses a text and returns its print (a malloc'd string), NULL when the
 * text does not parse; the names the input and the first print are
 * parsed under; the labels of the texts dumped to stderr and the messages
 * of the two failures. */
typedef struct fz_format {
    fz_parser reprint;
    const char *input_name, *print_name;
    const char *print_label, *first_label, *second_label;
    const char *no_parse, *differs, *differ_detail;
} fz_format;
/* Print the input; when it parses, print that print again: abort when the
 * first print does not parse or prints otherwise. */
void fz_round_trip(const fz_format *fmt, const uint8_t *data, size_t size);
/* The entry point of a target that only checks FORMAT's round trip. */
#define FZ_ROUND_TRIP_TARGET(format)                                                                                   \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                                       \
    {                                                                                                                  \
        fz_round_trip(&(format), data, size);                                                                          \
        return 0;                                                                                                      \
    }

/* Abort with a message: an invariant of the parser failed. */
void fz_fail(const char *what, const char *detail);
/* The shipped chip configuration NAME (chip/configs/) into cfg, or
 * fz_fail: the harness's fault, not the input's. */
void fz_config(const char *name, chip_config *cfg);

#endif
