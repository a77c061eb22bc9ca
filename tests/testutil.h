/* testutil: shared helpers for the CUnit test programs. */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <CUnit/CUnit.h>

#include "ktir.h"
#include "rt.h"
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
/* Write n bytes to path, asserting the file opens and takes them all;
 * tu_write_tmpfile writes them to a fresh tu_tmpfile, its path in path. */
void tu_write_file(const char *path, const void *bytes, size_t n);
void tu_write_tmpfile(const char *suffix, const void *bytes, size_t n, char *path, size_t len);
/* A fresh directory under the build directory (mkdtemp); FIFOs and other
 * special files of the tests are made only inside one.  tu_rmtree removes
 * it and everything in it. */
void tu_tmpdir(char *buf, size_t len);
/* dir/graph.txt holding text, and dir/weights.safetensors holding each
 * parameter p of the graph ("name" and its shape rows x cols, cols 0 for
 * a vector) with values that differ along every dim (about 1/sqrt(K),
 * so products stay near 1). */
typedef struct {
    const char *name;
    int64_t rows, cols;
} tu_param;
void tu_write_graph(const char *dir, const char *text, const tu_param *ps, int np);
void tu_rmtree(const char *dir);
/* Make a FIFO named NAME in directory DIR, asserting it was made; its path
 * goes to path. */
void tu_fifo(const char *dir, const char *name, char *path, size_t len);
/* A directory path of more than min bytes, nested dirs made under dir (each
 * component under NAME_MAX); returns it in a new string. */
char *tu_long_dir(const char *dir, size_t min);
/* A whole file in a new NUL-terminated buffer, its length in *len (len
 * may be NULL); NULL if it cannot be opened. */
char *tu_read_file(const char *path, size_t *len);
/* A JSON file parsed (asserting, fatally, that it can be read); NULL if it
 * is not JSON.  cJSON_Delete it. */
struct cJSON *tu_read_json(const char *path);
/* Run the spyre command with arguments (shell syntax); returns its exit
 * status, with stdout+stderr captured into out (may be NULL). */
int tu_spyre(const char *args, char *out, size_t outlen);
/* tu_spyre under `timeout SECONDS`: a command that would block (reading a
 * FIFO) fails with status 124 instead of hanging the test. */
int tu_spyre_timeout(int seconds, const char *args, char *out, size_t outlen);

/* Assert that text contains each of the strings listed (one check each,
 * reported at the caller's line); TU_ASSERT_LACKS that it contains none. */
#define TU_ASSERT_CONTAINS(text, ...) TU_ASSERT_FINDS_(1, text, __VA_ARGS__)
#define TU_ASSERT_LACKS(text, ...) TU_ASSERT_FINDS_(0, text, __VA_ARGS__)
#define TU_ASSERT_FINDS_(found, text, ...)                                                                             \
    tu_assert_finds((found), (text), (const char *const[]){__VA_ARGS__},                                               \
                    sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *), __FILE__, __LINE__)
void tu_assert_finds(int found, const char *text, const char *const *want, size_t n, const char *file, int line);

/* Assert that a and b hold the same instructions on every core (compared
 * by their encodings; fatal: one that does not encode ends the test) and
 * kernels over the same instructions. */
void tu_assert_same_code(const isa_program *a, const isa_program *b, int fatal);

/* Hand-built programs: an empty program for ncores with a DRAM segment of
 * dram_bytes; append an instruction at its defaults to a core's stream
 * (the pointer is valid until the next append); a wait or sig; a halt on
 * every core. */
isa_program *tu_prog_new(int ncores, uint64_t dram_bytes);
isa_insn *tu_emit(isa_program *p, int core, int op);
isa_insn *tu_sync(isa_program *p, int core, int op, int unit, int tok);
/* tu_emit with the destination at offset d and the first operand at a. */
isa_insn *tu_emit_at(isa_program *p, int core, int op, int64_t d, int64_t a);
/* An instruction's innermost loop: n steps, with byte strides ds of the
 * destination and as of the first operand. */
void tu_loop(isa_insn *in, int64_t n, int64_t ds, int64_t as);
void tu_halt_all(isa_program *p);

/* A KTIR program's text written to a scratch file (path, for the caller
 * to remove), compiled for cfg with args (as --arg) and loaded on a device
 * of its own (*dev), asserting each step (the compile error printed). */
rt_program *tu_ktir_load(const char *text, const kt_arg *args, int nargs, const chip_config *cfg, char *path, size_t len,
                         rt_device **dev);

/* Program p (taken) loaded on a device of cfg with g's inputs (seed 7)
 * and parameters, launched, every output checked against the reference
 * (a failing check printed, named by label): the outputs not ok, -1 on
 * a failure before the check; the run's statistics in *st. */
int tu_run_checked(const gr_graph *g, const chip_config *cfg, isa_program *p, const char *label, sim_stats *st);

/* 1 on the hosts where PT products are known to run on operands packed
 * ahead (sim/ptprod.c): OpenBLAS 0.3.21 on its Haswell or Zen kernels.
 * Set down here apart from the simulator's own test, so that a test
 * notices when that test stops finding them. */
int tu_openblas_packs(void);

/* Max-pool graphs whose windows hold -inf beside padding or two NaNs
 * (2-D and 3-D, indices out), and their inputs (tu_pool_x3 fills 27). */
extern const char *const tu_pool_nan_2d, *const tu_pool_nan_3d;
extern const float tu_pool_x2[16];
void tu_pool_x3(float *x);

#endif
