/* testutil: shared helpers for the CUnit test programs. */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <CUnit/CUnit.h>

#include "sim.h"

/* Register a suite of tests { "name", fn } terminated by { NULL, NULL },
 * run everything and return the process exit status. */
typedef struct {
    const char *name;
    CU_TestFunc fn;
} tu_test;
int tu_run(const char *suite, const tu_test *tests);

/* Load a shipped configuration ("spyre", "spyre-4core"), asserting success. */
void tu_config(const char *name, sim_config *cfg);
/* A scratch file path under the build directory, unique per call. */
void tu_tmpfile(const char *suffix, char *buf, size_t len);
/* Run the spyre command with arguments (shell syntax); returns its exit
 * status, with stdout+stderr captured into out (may be NULL). */
int tu_spyre(const char *args, char *out, size_t outlen);

#endif
