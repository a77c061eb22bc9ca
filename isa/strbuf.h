/* strbuf.h: a growing byte buffer, internal to isa/ (the assembler's
 * text and constants, the ELF writer's string tables). */
#ifndef ISA_STRBUF_H
#define ISA_STRBUF_H

#include <stddef.h>

typedef struct {
    char *buf;
    size_t len, cap;
} strbuf;

/* Make room for extra more bytes and a NUL after them; aborts on out of
 * memory, as isa_stream_push does. */
void isa_sb_grow(strbuf *s, size_t extra);

#endif
