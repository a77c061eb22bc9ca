/* err.c: the one routine that formats a one-line error message into a
 * caller's err[len] buffer, for every module of the project. */
#include "isa.h"

#include <stdio.h>
#include <string.h>

int isa_verrf(char *err, size_t len, const char *fmt, va_list ap)
{
    if (err && len)
        vsnprintf(err, len, fmt, ap);
    return -1;
}

int isa_errf(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    isa_verrf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

int isa_verrf_cat(char *err, size_t len, const char *fmt, va_list ap)
{
    if (!err || !len)
        return -1;
    size_t o = strnlen(err, len);
    if (o + 1 < len)
        vsnprintf(err + o, len - o, fmt, ap);
    return -1;
}
