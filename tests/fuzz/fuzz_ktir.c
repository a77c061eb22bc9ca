/* fuzz_ktir: the KTIR compiler (ktir/) behind the MLIR parser, for the
 * 4-core chip.  Any input compiles or is refused with one line naming the
 * file and exit code 2 or 3; nothing else (a crash, a leak, a message of
 * two lines, another code) is allowed. */
#include "fuzzutil.h"
#include "ktir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static chip_config cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_config("spyre-4core", &cfg);
    return 0;
}

/* Scalar arguments of ktir-cpu's examples and the seeds, at small values
 * (so that a seed compiles in milliseconds), bound where the input's text
 * declares them ("%NAME:"); every other argument is an HBM pointer. */
static const kt_arg scalars[] = {
    {"BLOCK_SIZE", 64},      {"BLOCK", 8},          {"n_elements", 256},       {"s0_in", 16},
    {"K", 64},               {"BLOCK_SIZE_M", 8},   {"BLOCK_SIZE_N", 32},      {"BLOCK_SIZE_K", 32},
    {"N", 256},              {"eps", 1e-5},         {"n_rows", 64},            {"n_cols", 64},
    {"input_row_stride", 64}, {"output_row_stride", 64}, {"dim1_start", 0},    {"cur_batch_start_index", 0},
    {"block_table_offset", 0}, {"num_tiles", 2},    {"context_len", 24},       {"scale", 0.125},
    {"ctx", 20},
};

static int bind_scalars(const uint8_t *data, size_t size, kt_arg *args)
{
    char *text = fz_text(data, size), key[64];
    int n = 0;
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
        snprintf(key, sizeof key, "%%%s:", scalars[i].name);
        if (strstr(text, key))
            args[n++] = scalars[i];
    }
    free(text);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_file("fuzz.mlir", data, size);
    kt_arg args[sizeof scalars / sizeof scalars[0]];
    int nargs = bind_scalars(data, size, args);
    char err[512] = "";
    int code = 0;
    kt_report rep;
    isa_program *p = kt_compile_file(path, args, nargs, &cfg, err, sizeof err, &code, &rep);
    if (p) {
        isa_program_free(p);
        return 0;
    }
    if (strncmp(err, path, strlen(path)) != 0 || strchr(err, '\n'))
        fz_fail("a refusal that is not one line naming the file", err);
    if (code != KT_EXIT_REFUSED && code != KT_EXIT_CHIP)
        fz_fail("a refusal with an exit code other than 2 or 3", err);
    return 0;
}
