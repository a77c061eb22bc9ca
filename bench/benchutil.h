/* benchutil: helpers shared by the benchmark programs. */
#ifndef BENCHUTIL_H
#define BENCHUTIL_H

/* Monotonic wall time in seconds. */
double bench_now(void);
/* dir with its last path component removed, in place. */
void bench_parent(char *dir);
/* 1 if path exists. */
int bench_exists(const char *path);

#endif
