/* strbuf.c: growing the byte buffer of strbuf.h (doubling, from 1 KiB). */
#include "strbuf.h"

#include <stdio.h>
#include <stdlib.h>

void isa_sb_grow(strbuf *s, size_t extra)
{
    if (s->len + extra + 1 <= s->cap)
        return;
    size_t cap = s->cap ? s->cap : 1024;
    while (cap < s->len + extra + 1)
        cap *= 2;
    char *b = realloc(s->buf, cap);
    if (!b) {
        fprintf(stderr, "spyre: out of memory\n");
        abort();
    }
    s->buf = b;
    s->cap = cap;
}
