/* fuzz_config: the chip configuration loader (chip/config.c), which takes
 * a path, so each input is written to input.cfg in a scratch directory
 * that also links the shipped configurations, so that an input's
 * `include = spyre.cfg` finds them as it would next to them. */
#include "fuzzutil.h"
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static const char *const shipped[] = {"spyre", "spyre-4core", "spyre-smalldram"};
    for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++) {
        char name[64], *target = chip_config_path(shipped[i]);
        snprintf(name, sizeof name, "%s.cfg", shipped[i]);
        fz_link(name, target);
        free(target);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_file("input.cfg", data, size);
    chip_config cfg;
    char err[512];
    (void)chip_config_load(path, &cfg, err, sizeof err);
    return 0;
}
