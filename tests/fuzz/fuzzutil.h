/* fuzzutil: shared helpers of the libFuzzer targets (docs/robustness.md, "Fuzzing"). */
#ifndef FUZZUTIL_H
#define FUZZUTIL_H

#include <stddef.h>
#include <stdint.h>

/* The libFuzzer entry points every target defines. */
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

/* Abort with a message: an invariant of the parser failed. */
void fz_fail(const char *what, const char *detail);

#endif
