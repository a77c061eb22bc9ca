/* replay: runs a libFuzzer target's entry point, built without the fuzzer,
 * on every file of the directories given (the target's committed seeds and
 * the reproducers of bugs fuzzing found), so that CTest replays them in the
 * ordinary build: a harness aborts on any failed invariant, and the
 * sanitizer build reports what the fuzzer would. */
#include "fuzzutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The file's bytes (malloc'd; *size set), or NULL when it cannot be read. */
static uint8_t *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)(n > 0 ? n : 0);
    return buf;
}

static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0; /* a target without reproducers yet */
    int n = 0;
    char path[4096];
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t size = 0;
        uint8_t *data = slurp(path, &size);
        if (!data)
            fz_fail("cannot read", path);
        LLVMFuzzerTestOneInput(data, size);
        free(data);
        n++;
    }
    closedir(d);
    return n;
}

/* libFuzzer's set-up is optional (the round-trip targets have none):
 * weak here too, called when the target defines it. */
#pragma weak LLVMFuzzerInitialize

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    int n = 0;
    for (int i = 1; i < argc; i++)
        n += replay_dir(argv[i]);
    printf("replayed %d inputs\n", n);
    return 0;
}
