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
void tu_config(const char *name, chip_config *cfg);
/* A scratch file path under the build directory, unique per call. */
void tu_tmpfile(const char *suffix, char *buf, size_t len);
/* A fresh directory under the build directory (mkdtemp); FIFOs and other
 * special files of the tests are made only inside one.  tu_rmtree removes
 * it and everything in it. */
void tu_tmpdir(char *buf, size_t len);
void tu_rmtree(const char *dir);
/* A directory path of more than min bytes, nested dirs made under dir (each
 * component under NAME_MAX); returns it in a new string. */
char *tu_long_dir(const char *dir, size_t min);
/* Run the spyre command with arguments (shell syntax); returns its exit
 * status, with stdout+stderr captured into out (may be NULL). */
int tu_spyre(const char *args, char *out, size_t outlen);
/* tu_spyre under `timeout SECONDS`: a command that would block (reading a
 * FIFO) fails with status 124 instead of hanging the test. */
int tu_spyre_timeout(int seconds, const char *args, char *out, size_t outlen);

/* Hand-built programs: an empty program for ncores with a DRAM segment of
 * dram_bytes; append an instruction at its defaults to a core's stream
 * (the pointer is valid until the next append); a wait or sig; a halt on
 * every core. */
isa_program *tu_prog_new(int ncores, uint64_t dram_bytes);
isa_insn *tu_emit(isa_program *p, int core, int op);
isa_insn *tu_sync(isa_program *p, int core, int op, int unit, int tok);
void tu_halt_all(isa_program *p);

#endif
