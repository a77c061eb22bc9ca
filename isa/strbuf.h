/* strbuf.h: text put together in memory without stdio: a growing byte
 * buffer (the assembler's text and constants, the ELF writer's string
 * tables, the graph's text in graph/graph.c) and text cut to a fixed
 * buffer as snprintf cuts it (graph/graph.c's types, the plans' notes in
 * compiler/back/be_diag.c). */
#ifndef ISA_STRBUF_H
#define ISA_STRBUF_H

#include <stddef.h>
#include <string.h>

typedef struct {
    char *buf;
    size_t len, cap;
} strbuf;

/* Make room for extra more bytes and a NUL after them; aborts on out of
 * memory, as isa_stream_push does. */
void isa_sb_grow(strbuf *s, size_t extra);

/* n bytes of p appended, a NUL after them. */
static inline void isa_sb_put(strbuf *s, const void *p, size_t n)
{
    if (s->len + n + 1 > s->cap)
        isa_sb_grow(s, n);
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len] = 0;
}

static inline void isa_sb_puts(strbuf *s, const char *str)
{
    isa_sb_put(s, str, strlen(str));
}

static inline void isa_sb_chr(strbuf *s, char c)
{
    isa_sb_put(s, &c, 1);
}

/* n bytes of p put at dst + *o as snprintf would put them (cut to cap,
 * NUL-ended), *o counting them whole as snprintf's return does. */
static inline void isa_cut_put(char *dst, size_t cap, size_t *o, const char *p, size_t n)
{
    if (*o < cap) {
        const size_t k = n < cap - *o - 1 ? n : cap - *o - 1;
        memcpy(dst + *o, p, k);
        dst[*o + k] = 0;
    }
    *o += n;
}

#endif
