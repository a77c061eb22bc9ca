/* mlir internal: the parser state shared by the lexer, the type and
 * attribute readers and the op reader. */
#ifndef ML_INTERNAL_H
#define ML_INTERNAL_H

#include <setjmp.h>
#include "mlir.h"

#define ML_DEPTH_MAX 200 /* nesting of groups, regions, attributes: deeper input is refused */

typedef enum {
    TK_EOF, TK_VALUE, TK_CARET, TK_AT, TK_HASH, TK_BANG, TK_BARE, TK_INT, TK_FLOAT, TK_STRING, TK_PUNCT
} ml_tok_kind;

typedef struct {
    ml_tok_kind kind;
    const char *s;   /* text (without sigil for % ^ @ # !; unescaped for strings) */
    int64_t i;
    double f;
    int line, col;
    int line_start;  /* first token on its line */
    size_t pos, end; /* byte range in the text */
} ml_tok;

typedef struct {
    const char *text;
    size_t len, pos;
    int line, col;
    const char *file;
    ml_arena *arena;
    ml_module *mod;
    int depth;
    jmp_buf fail;
    char *err;
    size_t errlen;
} ml_parser;

ml_arena *ml_arena_new(void);
void ml_arena_free(ml_arena *a);
void *ml_alloc(ml_arena *a, size_t n);
char *ml_strndup(ml_arena *a, const char *s, size_t n);
/* Grow an arena array of elem-size entries to hold at least n+1 (cap doubled). */
void *ml_grow(ml_arena *a, void *p, int n, int *cap, size_t elem);

/* Report a syntax error at line:col and unwind to ml_parse. */
_Noreturn void ml_fail(ml_parser *p, int line, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
void ml_enter(ml_parser *p, int line, int col);
void ml_leave(ml_parser *p);

/* Lexer: the next token, without consuming (peek) or consuming it (next). */
ml_tok ml_peek(ml_parser *p);
ml_tok ml_next(ml_parser *p);
int ml_is_punct(const ml_tok *t, const char *s);
void ml_expect(ml_parser *p, const char *punct);
void ml_skip_space(ml_parser *p);
/* The raw text from the current position up to the '>' that closes an
 * already consumed '<' (nesting of <>, (), [], {} and strings honoured). */
const char *ml_raw_angle(ml_parser *p);

/* Types and attributes (attr.c). */
int ml_starts_type(const ml_tok *t);
ml_type *ml_parse_type(ml_parser *p);
/* An attribute value starting at the next token; NULL (nothing consumed)
 * when the token cannot start one. */
ml_attr *ml_parse_attr(ml_parser *p);
ml_attr *ml_parse_dict(ml_parser *p); /* after the '{' */

/* Ops (parse.c). */
void ml_parse_region(ml_parser *p, ml_region *r, int top);

#endif
