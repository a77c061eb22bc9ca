/* benchutil.c: helpers shared by the benchmark programs. */
#include "benchutil.h"

#include <string.h>
#include <sys/stat.h>
#include <time.h>

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_parent(char *dir)
{
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir)
        *slash = 0;
}

int bench_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}
