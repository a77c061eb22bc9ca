/* fault.c: recording a run's fault (core, unit, instruction, message),
 * the one place every file of the simulator reports a program's error. */
#include "internal.h"

#include <stdarg.h>

int sim_faultf(sim *s, int core, int unit, long index, const char *fmt, ...)
{
    if (!s->fault)
        return -1;
    s->fault->core = core;
    s->fault->unit = unit;
    s->fault->index = index;
    va_list ap;
    va_start(ap, fmt);
    isa_verrf(s->fault->msg, sizeof s->fault->msg, fmt, ap);
    va_end(ap);
    return -1;
}
