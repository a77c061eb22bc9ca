/* fuzz_sdsc_bundle: bundle.mlir against the SDSC it executes (sdsc/sd_mlir.c):
 * the input is an sdsc_0.json, a form feed, then a bundle.mlir, both
 * written to the scratch directory (without a form feed, all of it is the
 * bundle beside an empty JSON file); the directory is read and checked,
 * and translated when it has no problem. */
#include "fuzzutil.h"
#include "sd.h"

#include <stdlib.h>
#include <string.h>

static chip_config cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_config("spyre", &cfg);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *ff = memchr(data, '\f', size);
    size_t json = ff ? (size_t)(ff - data) : 0, rest = ff ? json + 1 : 0;
    fz_file("sdsc_0.json", data, json);
    const char *path = fz_file("bundle.mlir", data + rest, size - rest);
    char dir[4096], err[512];
    const char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) >= sizeof dir)
        fz_fail("scratch path", path);
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = 0;
    sd_bundle *b = sd_load(dir, &cfg, err, sizeof err);
    if (!b)
        fz_fail("sd_load failed on a readable directory", err);
    if ((sd_nproblems(b) > 0) != (sd_problems(b)[0] != 0))
        fz_fail("problem count and lines disagree", sd_problems(b));
    isa_program_free(sd_build(b, &cfg, NULL, 0, err, sizeof err));
    sd_free(b);
    return 0;
}
