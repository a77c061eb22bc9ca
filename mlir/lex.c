/* mlir lexer: tokens of MLIR text, the arena and the one error path. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* The arena: a list of blocks, allocations from the newest. */
typedef struct ml_block_mem {
    struct ml_block_mem *next;
    size_t used, cap;
    max_align_t data[];
} ml_block_mem;
struct ml_arena {
    ml_block_mem *head;
};

void *ml_alloc(ml_arena *a, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    ml_block_mem *b = a->head;
    if (!b || b->used + n > b->cap) {
        size_t cap = n > 65536 ? n : 65536;
        b = malloc(sizeof *b + cap);
        if (!b) abort(); /* out of memory: as isa_stream_push */
        b->next = a->head, b->used = 0, b->cap = cap;
        a->head = b;
    }
    void *r = (char *)b->data + b->used;
    b->used += n;
    memset(r, 0, n);
    return r;
}

ml_arena *ml_arena_new(void)
{
    ml_arena *a = calloc(1, sizeof *a);
    if (!a) abort();
    return a;
}

void ml_arena_free(ml_arena *a)
{
    if (!a) return;
    for (ml_block_mem *b = a->head; b;) {
        ml_block_mem *n = b->next;
        free(b);
        b = n;
    }
    free(a);
}

char *ml_strndup(ml_arena *a, const char *s, size_t n)
{
    char *r = ml_alloc(a, n + 1);
    memcpy(r, s, n);
    return r;
}

void *ml_grow(ml_arena *a, void *p, int n, int *cap, size_t elem)
{
    if (n < *cap) return p;
    int nc = *cap ? *cap * 2 : 4;
    void *q = ml_alloc(a, (size_t)nc * elem);
    if (p) memcpy(q, p, (size_t)n * elem);
    *cap = nc;
    return q;
}

void ml_one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

void ml_fail(ml_parser *p, int line, int col, const char *fmt, ...)
{
    if (p->err && p->errlen) {
        int n = snprintf(p->err, p->errlen, "%s:%d:%d: ", p->file, line, col);
        va_list ap;
        va_start(ap, fmt);
        if (n >= 0 && (size_t)n < p->errlen) vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
        va_end(ap);
        ml_one_line(p->err); /* a string's escapes may hold a newline */
    }
    longjmp(p->fail, 1);
}

void ml_enter(ml_parser *p, int line, int col)
{
    if (++p->depth > ML_DEPTH_MAX) ml_fail(p, line, col, "nesting deeper than %d", ML_DEPTH_MAX);
}

void ml_leave(ml_parser *p) { p->depth--; }

/* Skip blanks and // comments; 1 when a newline was crossed. */
static int skip(ml_parser *p)
{
    int nl = 0;
    while (p->pos < p->len) {
        char c = p->text[p->pos];
        if (c == '\n') {
            nl = 1, p->line++, p->col = 1, p->pos++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            p->pos++, p->col++;
        } else if (c == '/' && p->pos + 1 < p->len && p->text[p->pos + 1] == '/') {
            while (p->pos < p->len && p->text[p->pos] != '\n') p->pos++;
        } else {
            break;
        }
    }
    return nl;
}

void ml_skip_space(ml_parser *p) { skip(p); }

static int id_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.'; }

static size_t scan_id(ml_parser *p, size_t i)
{
    while (i < p->len && id_char(p->text[i])) i++;
    return i;
}

static void lex_string(ml_parser *p, ml_tok *t, size_t i)
{
    char *buf = ml_alloc(p->arena, p->len - i + 1);
    size_t n = 0;
    for (i++;; i++) {
        if (i >= p->len || p->text[i] == '\n') ml_fail(p, t->line, t->col, "unterminated string");
        char c = p->text[i];
        if (c == '"') break;
        if (c == '\\') {
            if (i + 1 >= p->len) ml_fail(p, t->line, t->col, "unterminated string");
            char e = p->text[++i];
            if (e == 'n') c = '\n';
            else if (e == 't') c = '\t';
            else if (e == '\\' || e == '"') c = e;
            else if (isxdigit((unsigned char)e) && i + 1 < p->len && isxdigit((unsigned char)p->text[i + 1])) {
                char hex[3] = {e, p->text[i + 1], 0};
                c = (char)strtol(hex, NULL, 16), i++;
            } else {
                ml_fail(p, t->line, t->col, "bad escape '\\%c' in a string", e);
            }
        }
        buf[n++] = c;
    }
    t->kind = TK_STRING, t->s = buf, t->end = i + 1;
}

static void lex_number(ml_parser *p, ml_tok *t, size_t i)
{
    const char *s = p->text + i;
    size_t j = i;
    int is_float = 0;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isxdigit((unsigned char)s[2])) {
        j += 2;
        while (j < p->len && isxdigit((unsigned char)p->text[j])) j++;
    } else {
        while (j < p->len && isdigit((unsigned char)p->text[j])) j++;
        if (j + 1 < p->len && p->text[j] == '.' && isdigit((unsigned char)p->text[j + 1])) {
            is_float = 1, j++;
            while (j < p->len && isdigit((unsigned char)p->text[j])) j++;
        } else if (j < p->len && p->text[j] == '.') {
            is_float = 1, j++;
        }
        if (j < p->len && (p->text[j] == 'e' || p->text[j] == 'E')) {
            size_t k = j + 1;
            if (k < p->len && (p->text[k] == '+' || p->text[k] == '-')) k++;
            if (k < p->len && isdigit((unsigned char)p->text[k])) {
                is_float = 1, j = k;
                while (j < p->len && isdigit((unsigned char)p->text[j])) j++;
            }
        }
    }
    char *txt = ml_strndup(p->arena, s, j - i);
    errno = 0;
    if (is_float) {
        t->kind = TK_FLOAT, t->f = strtod(txt, NULL);
    } else {
        unsigned long long v = strtoull(txt, NULL, 0);
        if (errno == ERANGE || v > (unsigned long long)INT64_MAX + 1)
            ml_fail(p, t->line, t->col, "integer %s out of range", txt);
        t->kind = TK_INT, t->i = (int64_t)v; /* INT64_MAX+1 wraps to INT64_MIN: only valid negated */
    }
    t->s = txt, t->end = j;
}

static const char *const puncts[] = {"->", "...", "::", "(", ")", "{", "}", "[", "]", "<", ">", ",", ":", "=",
                                     "*", "+", "-", "?", "|", "/", NULL};

static void lex_punct(ml_parser *p, ml_tok *t, size_t i)
{
    for (int k = 0; puncts[k]; k++) {
        size_t n = strlen(puncts[k]);
        if (i + n <= p->len && memcmp(p->text + i, puncts[k], n) == 0) {
            t->kind = TK_PUNCT, t->s = puncts[k], t->end = i + n;
            return;
        }
    }
    unsigned char c = (unsigned char)p->text[i];
    if (isprint(c)) ml_fail(p, t->line, t->col, "unexpected character '%c'", c);
    ml_fail(p, t->line, t->col, "unexpected byte 0x%02x", c);
}

/* The token at the current position (nothing consumed). */
static ml_tok lex(ml_parser *p)
{
    int nl = skip(p) || p->pos == 0;
    ml_tok t = {0};
    t.line = p->line, t.col = p->col, t.line_start = nl, t.pos = p->pos;
    size_t i = p->pos;
    if (i >= p->len) {
        t.kind = TK_EOF, t.end = i, t.s = "end of file";
        return t;
    }
    char c = p->text[i];
    if (c == '%' && (i + 1 >= p->len || isspace((unsigned char)p->text[i + 1]))) {
        t.kind = TK_PUNCT, t.s = "%", t.end = i + 1; /* a modulus in a subscript: `%t % 64` (RFC 0682) */
    } else if (c == '%' || c == '^' || c == '@' || c == '#' || c == '!') {
        if (c == '@' && i + 1 < p->len && p->text[i + 1] == '"') {
            lex_string(p, &t, i + 1);
            t.kind = TK_AT;
            return t;
        }
        size_t j = scan_id(p, i + 1);
        if (j == i + 1) ml_fail(p, t.line, t.col, "'%c' without a name", c);
        t.kind = c == '%' ? TK_VALUE : c == '^' ? TK_CARET : c == '@' ? TK_AT : c == '#' ? TK_HASH : TK_BANG;
        t.s = ml_strndup(p->arena, p->text + i + 1, j - i - 1), t.end = j;
    } else if (isalpha((unsigned char)c) || c == '_') {
        size_t j = scan_id(p, i);
        t.kind = TK_BARE, t.s = ml_strndup(p->arena, p->text + i, j - i), t.end = j;
    } else if (isdigit((unsigned char)c)) {
        lex_number(p, &t, i);
    } else if (c == '"') {
        lex_string(p, &t, i);
    } else {
        lex_punct(p, &t, i);
    }
    return t;
}

ml_tok ml_peek(ml_parser *p)
{
    size_t pos = p->pos;
    int line = p->line, col = p->col;
    ml_tok t = lex(p);
    p->pos = pos, p->line = line, p->col = col;
    return t;
}

ml_tok ml_next(ml_parser *p)
{
    ml_tok t = lex(p);
    /* Tokens never hold a newline except in skipped space: advance col by length. */
    p->col += (int)(t.end - p->pos);
    p->pos = t.end;
    return t;
}

int ml_is_punct(const ml_tok *t, const char *s) { return t->kind == TK_PUNCT && strcmp(t->s, s) == 0; }

void ml_expect(ml_parser *p, const char *punct)
{
    ml_tok t = ml_next(p);
    if (!ml_is_punct(&t, punct)) ml_fail(p, t.line, t.col, "expected '%s', found '%s'", punct, t.s);
}

const char *ml_raw_angle(ml_parser *p)
{
    size_t start = p->pos;
    int line = p->line, col = p->col, depth = 1;
    while (p->pos < p->len) {
        char c = p->text[p->pos];
        if (c == '"') {
            ml_tok t = ml_next(p); /* a whole string, brackets inside do not count */
            (void)t;
            continue;
        }
        if (c == '\n') p->line++, p->col = 0;
        if (c == '<' || c == '(' || c == '[' || c == '{') depth++;
        if (c == '>' && p->pos > start && p->text[p->pos - 1] == '-') depth++; /* "->" is no bracket */
        if (c == '>' || c == ')' || c == ']' || c == '}') depth--;
        p->pos++, p->col++;
        if (depth == 0) return ml_strndup(p->arena, p->text + start, p->pos - 1 - start);
        if (depth > ML_DEPTH_MAX) ml_fail(p, line, col, "nesting deeper than %d", ML_DEPTH_MAX);
    }
    ml_fail(p, line, col, "unterminated '<'");
}
