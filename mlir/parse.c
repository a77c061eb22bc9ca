/* mlir op reader: ops (results, name, tail items), regions and blocks, the
 * module, and the helpers dialect readers use to interpret an op's tail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "internal.h"

#define ML_FILE_MAX (256u << 20)

static void parse_items(ml_parser *p, ml_item **items, int *n, const char *close, int top);

/* Does t, first on its line, start a new op (ending the current op's
 * tail)?  A value does when a result list follows it (`%r =`, `%a, %b =`,
 * `%r:2 =`); otherwise it continues the op (`%view[%i]` on its own line). */
static int starts_op(ml_parser *p, const ml_tok *t)
{
    if (t->kind == TK_VALUE) {
        size_t pos = p->pos;
        int line = p->line, col = p->col;
        ml_next(p);
        ml_tok u = ml_peek(p);
        p->pos = pos, p->line = line, p->col = col;
        return ml_is_punct(&u, "=") || ml_is_punct(&u, ",") || ml_is_punct(&u, ":");
    }
    if (t->kind == TK_STRING || t->kind == TK_CARET) return 1;
    return t->kind == TK_BARE && (strchr(t->s, '.') || !strcmp(t->s, "return"));
}

/* After '{': an attribute dictionary ({}, {k = v, ...}, {unit, ...}) or a region of ops. */
static int brace_is_dict(ml_parser *p)
{
    size_t pos = p->pos;
    int line = p->line, col = p->col;
    ml_tok a = ml_next(p), b = ml_peek(p);
    p->pos = pos, p->line = line, p->col = col;
    if (ml_is_punct(&a, "}")) return 1;
    if (a.kind != TK_BARE && a.kind != TK_STRING) return 0;
    if (ml_is_punct(&b, "=") || ml_is_punct(&b, ",")) return 1;
    return ml_is_punct(&b, "}") && a.kind == TK_BARE && !strchr(a.s, '.') && strcmp(a.s, "return");
}

static void parse_item(ml_parser *p, ml_item *it)
{
    ml_tok t = ml_peek(p);
    it->line = t.line, it->col = t.col, it->idx = -1;
    ml_enter(p, t.line, t.col);
    if (t.kind == TK_VALUE) {
        ml_next(p);
        it->kind = ML_I_VALUE, it->s = t.s;
        if (p->pos + 1 < p->len && p->text[p->pos] == '#') {
            ml_next(p); /* the '#N' result number */
            ml_tok n = ml_next(p);
            if (n.kind != TK_INT || n.i < 0 || n.i > 1000000) ml_fail(p, n.line, n.col, "bad result number");
            it->idx = (int)n.i;
        }
    } else if (ml_is_punct(&t, "(") || ml_is_punct(&t, "[")) {
        ml_next(p);
        it->kind = t.s[0] == '(' ? ML_I_GROUP : ML_I_LIST;
        parse_items(p, &it->items, &it->n, t.s[0] == '(' ? ")" : "]", 0);
    } else if (ml_is_punct(&t, "{")) {
        ml_next(p);
        if (brace_is_dict(p)) {
            it->kind = ML_I_ATTR, it->attr = ml_parse_dict(p);
        } else {
            it->kind = ML_I_REGION, it->region = ml_alloc(p->arena, sizeof *it->region);
            ml_parse_region(p, it->region, 0);
        }
    } else if (ml_starts_type(&t)) {
        it->kind = ML_I_TYPE, it->type = ml_parse_type(p);
    } else if ((it->attr = ml_parse_attr(p))) {
        it->kind = ML_I_ATTR;
    } else if (t.kind == TK_BARE || t.kind == TK_CARET) {
        ml_next(p);
        it->kind = ML_I_WORD, it->s = t.s;
    } else if (t.kind == TK_PUNCT && !strchr(")]}", t.s[0])) {
        ml_next(p);
        it->kind = ML_I_PUNCT, it->s = t.s;
    } else {
        ml_fail(p, t.line, t.col, "unexpected '%s'", t.s);
    }
    ml_leave(p);
}

/* Items up to close (consumed), or for an op's tail (top) up to its end. */
static void parse_items(ml_parser *p, ml_item **items, int *n, const char *close, int top)
{
    int cap = 0;
    for (;;) {
        ml_tok t = ml_peek(p);
        if (top && (t.kind == TK_EOF || ml_is_punct(&t, "}") || (t.line_start && starts_op(p, &t)))) return;
        if (!top && ml_is_punct(&t, close)) {
            ml_next(p);
            return;
        }
        if (t.kind == TK_EOF) ml_fail(p, t.line, t.col, "expected '%s' before the end of file", close);
        *items = ml_grow(p->arena, *items, *n, &cap, sizeof **items);
        parse_item(p, &(*items)[(*n)++]);
    }
}

static void parse_results(ml_parser *p, ml_op *op)
{
    int cap = 0;
    for (;;) {
        ml_tok t = ml_next(p);
        if (t.kind != TK_VALUE) ml_fail(p, t.line, t.col, "expected a result name, found '%s'", t.s);
        int64_t count = 1;
        ml_tok u = ml_peek(p);
        if (ml_is_punct(&u, ":")) {
            ml_next(p);
            ml_tok c = ml_next(p);
            if (c.kind != TK_INT || c.i < 1 || c.i > 4096) ml_fail(p, c.line, c.col, "bad result count");
            count = c.i;
        }
        for (int64_t k = 0; k < count; k++) {
            op->res = ml_grow(p->arena, op->res, op->nres, &cap, sizeof *op->res);
            char buf[32];
            snprintf(buf, sizeof buf, "#%lld", (long long)k);
            size_t ln = strlen(t.s);
            char *s = ml_alloc(p->arena, ln + sizeof buf);
            memcpy(s, t.s, ln);
            if (u.kind == TK_PUNCT && u.s[0] == ':') strcpy(s + ln, buf);
            op->res[op->nres++] = s;
        }
        t = ml_next(p);
        if (ml_is_punct(&t, "=")) return;
        if (!ml_is_punct(&t, ",")) ml_fail(p, t.line, t.col, "expected ',' or '=', found '%s'", t.s);
    }
}

static void parse_op(ml_parser *p, ml_op *op)
{
    ml_tok t = ml_peek(p);
    op->line = t.line, op->col = t.col;
    if (t.kind == TK_VALUE) parse_results(p, op);
    t = ml_next(p);
    if (t.kind != TK_BARE && t.kind != TK_STRING) ml_fail(p, t.line, t.col, "expected an operation, found '%s'", t.s);
    if (!*t.s) ml_fail(p, t.line, t.col, "empty operation name");
    op->name = t.s;
    parse_items(p, &op->items, &op->n, NULL, 1);
}

/* ^label(%a: type, ...): after the '^' token. */
static void parse_label(ml_parser *p, ml_block *b, const ml_tok *t)
{
    b->label = t->s;
    ml_tok u = ml_peek(p);
    if (ml_is_punct(&u, "(")) {
        ml_next(p);
        int cap = 0;
        for (u = ml_peek(p); !ml_is_punct(&u, ")");) {
            ml_tok v = ml_next(p);
            if (v.kind != TK_VALUE) ml_fail(p, v.line, v.col, "expected a block argument, found '%s'", v.s);
            ml_expect(p, ":");
            b->args = ml_grow(p->arena, b->args, b->nargs, &cap, sizeof *b->args);
            b->args[b->nargs].name = v.s;
            b->args[b->nargs++].type = ml_parse_type(p);
            u = ml_next(p);
            if (ml_is_punct(&u, ")")) break;
            if (!ml_is_punct(&u, ",")) ml_fail(p, u.line, u.col, "expected ',' or ')', found '%s'", u.s);
        }
        if (ml_is_punct(&u, ")") && b->nargs == 0) ml_next(p);
    }
    ml_expect(p, ":");
}

/* #name = attr at file level. */
static void parse_alias(ml_parser *p, const ml_tok *t)
{
    ml_module *m = p->mod;
    ml_expect(p, "=");
    ml_attr *a = ml_parse_attr(p);
    if (!a) ml_fail(p, t->line, t->col, "expected the attribute of alias #%s", t->s);
    const char **names = ml_alloc(p->arena, sizeof *names * (size_t)(m->naliases + 1));
    ml_attr **vals = ml_alloc(p->arena, sizeof *vals * (size_t)(m->naliases + 1));
    if (m->naliases) {
        memcpy(names, m->alias_names, sizeof *names * (size_t)m->naliases);
        memcpy(vals, m->alias_values, sizeof *vals * (size_t)m->naliases);
    }
    names[m->naliases] = t->s, vals[m->naliases++] = a;
    m->alias_names = names, m->alias_values = vals;
}

void ml_parse_region(ml_parser *p, ml_region *r, int top)
{
    int bcap = 0, ocap = 0;
    ml_block *b = NULL;
    for (;;) {
        ml_tok t = ml_peek(p);
        if (t.kind == TK_EOF) {
            if (top) return;
            ml_fail(p, t.line, t.col, "expected '}' before the end of file");
        }
        if (ml_is_punct(&t, "}")) {
            if (top) ml_fail(p, t.line, t.col, "unmatched '}'");
            ml_next(p);
            return;
        }
        if (top && t.kind == TK_HASH) {
            ml_next(p);
            parse_alias(p, &t);
            continue;
        }
        if (!b || t.kind == TK_CARET) {
            r->blocks = ml_grow(p->arena, r->blocks, r->nblocks, &bcap, sizeof *r->blocks);
            b = &r->blocks[r->nblocks++], ocap = 0;
            if (t.kind == TK_CARET) {
                ml_next(p);
                parse_label(p, b, &t);
                continue;
            }
        }
        b->ops = ml_grow(p->arena, b->ops, b->nops, &ocap, sizeof *b->ops);
        parse_op(p, &b->ops[b->nops++]);
    }
}

ml_module *ml_parse(const char *text, size_t len, const char *file, char *err, size_t errlen)
{
    ml_arena *arena = ml_arena_new();
    ml_module *m = ml_alloc(arena, sizeof *m);
    m->arena = arena, m->file = ml_strndup(arena, file, strlen(file));
    ml_parser *p = calloc(1, sizeof *p);
    if (!p) abort();
    p->text = text, p->len = len, p->line = 1, p->col = 1, p->file = m->file;
    p->arena = arena, p->mod = m, p->err = err, p->errlen = errlen;
    if (setjmp(p->fail)) {
        free(p);
        ml_arena_free(arena);
        return NULL;
    }
    if (memchr(text, 0, len)) {
        const char *z = memchr(text, 0, len);
        int line = 1;
        for (const char *c = text; c < z; c++) line += *c == '\n';
        ml_fail(p, line, 1, "a NUL byte in the text");
    }
    ml_parse_region(p, &m->top, 1);
    free(p);
    return m;
}

ml_module *ml_parse_file(const char *path, char *err, size_t errlen)
{
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)ML_FILE_MAX) {
        snprintf(err, errlen, "%s: %s", path, !f ? "cannot open" : "not a regular file of at most 256 MB");
        if (f) fclose(f);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf) abort();
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    buf[got] = 0;
    ml_module *m = ml_parse(buf, got, path, err, errlen);
    free(buf); /* every name the module keeps was copied into its arena */
    return m;
}

void ml_free(ml_module *m)
{
    if (m) ml_arena_free(m->arena);
}
