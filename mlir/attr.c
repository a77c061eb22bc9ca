/* mlir types and attributes: builtin scalar and shaped types, dialect
 * types, literals, arrays, dictionaries, dense constants, affine maps and
 * sets, dialect attributes and aliases. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static int scalar_type(const char *s, ml_type *t)
{
    static const char *const floats[] = {"f16", "bf16", "f32", "f64", "f8E4M3FN", "f8E5M2", "tf32", NULL};
    static const int fbits[] = {16, 16, 32, 64, 8, 8, 19};
    if (strcmp(s, "index") == 0) return t->kind = ML_T_INDEX, t->bits = 64, 1;
    if (strcmp(s, "none") == 0) return t->kind = ML_T_NONE, 1;
    for (int i = 0; floats[i]; i++)
        if (strcmp(s, floats[i]) == 0) {
            t->kind = ML_T_FLOAT, t->bits = fbits[i];
            snprintf(t->name, sizeof t->name, "%s", s);
            return 1;
        }
    const char *d = s[0] == 'i' ? s + 1 : (s[0] == 's' || s[0] == 'u') && s[1] == 'i' ? s + 2 : NULL;
    if (!d || !*d || strlen(d) > 5) return 0;
    for (const char *c = d; *c; c++)
        if (!isdigit((unsigned char)*c)) return 0;
    int bits = atoi(d);
    if (bits < 1 || bits > 1024) return 0;
    t->kind = ML_T_INT, t->bits = bits;
    snprintf(t->name, sizeof t->name, "%s", s);
    return 1;
}

int ml_starts_type(const ml_tok *t)
{
    if (t->kind == TK_BANG) return 1;
    if (t->kind != TK_BARE) return 0;
    ml_type tmp;
    return scalar_type(t->s, &tmp) || !strcmp(t->s, "tensor") || !strcmp(t->s, "memref") ||
           !strcmp(t->s, "vector");
}

/* Dimensions "4x?x8x" before an element type, read from the raw text. */
static void parse_dims(ml_parser *p, ml_type *t)
{
    for (;;) {
        ml_skip_space(p);
        size_t i = p->pos;
        int64_t v;
        if (i < p->len && p->text[i] == '?') {
            v = ML_DYN, i++;
        } else if (i < p->len && isdigit((unsigned char)p->text[i])) {
            v = 0;
            while (i < p->len && isdigit((unsigned char)p->text[i])) {
                if (v > (INT64_MAX - 9) / 10) ml_fail(p, p->line, p->col, "dimension out of range");
                v = v * 10 + (p->text[i++] - '0');
            }
        } else {
            return;
        }
        if (i >= p->len || p->text[i] != 'x') return; /* a number that is not a dim: let the caller fail */
        if (t->rank == ML_MAX_RANK) ml_fail(p, p->line, p->col, "more than %d dimensions", ML_MAX_RANK);
        t->shape[t->rank++] = v;
        p->col += (int)(i + 1 - p->pos), p->pos = i + 1;
    }
}

static void skip_to_close(ml_parser *p)
{
    ml_tok t = ml_peek(p);
    if (ml_is_punct(&t, ",")) (void)ml_raw_angle(p); /* layout, memory space, encoding */
    else ml_expect(p, ">");
}

static ml_type *parse_shaped(ml_parser *p, ml_type *t)
{
    ml_expect(p, "<");
    ml_tok u = ml_peek(p);
    if (ml_is_punct(&u, "*")) ml_fail(p, u.line, u.col, "unranked types are not supported");
    parse_dims(p, t);
    t->elem = ml_parse_type(p);
    skip_to_close(p);
    return t;
}

/* A dialect type's body read as a shape when it is one ("128x64xindex"). */
static void dialect_shape(ml_parser *p, ml_type *t)
{
    ml_parser sub = *p;
    sub.text = t->body, sub.len = strlen(t->body), sub.pos = 0;
    if (setjmp(sub.fail)) {
        t->rank = 0, t->elem = NULL; /* not a shape: the raw body stays */
        return;
    }
    sub.err = NULL, sub.errlen = 0;
    parse_dims(&sub, t);
    ml_tok e = ml_peek(&sub);
    if (!ml_starts_type(&e) || t->rank == 0) longjmp(sub.fail, 1);
    t->elem = ml_parse_type(&sub);
    if (ml_peek(&sub).kind != TK_EOF) longjmp(sub.fail, 1);
}

ml_type *ml_parse_type(ml_parser *p)
{
    ml_tok t = ml_next(p);
    ml_enter(p, t.line, t.col);
    ml_type *ty = ml_alloc(p->arena, sizeof *ty);
    if (t.kind == TK_BANG) {
        ty->kind = ML_T_DIALECT, ty->dialect = t.s, ty->body = "";
        if (p->pos < p->len && p->text[p->pos] == '<') {
            p->pos++, p->col++;
            ty->body = ml_raw_angle(p);
            dialect_shape(p, ty);
        }
    } else if (t.kind == TK_BARE && scalar_type(t.s, ty)) {
        /* done */
    } else if (t.kind == TK_BARE && (!strcmp(t.s, "tensor") || !strcmp(t.s, "memref") || !strcmp(t.s, "vector"))) {
        ty->kind = t.s[0] == 't' ? ML_T_TENSOR : t.s[0] == 'm' ? ML_T_MEMREF : ML_T_VECTOR;
        parse_shaped(p, ty);
    } else {
        ml_fail(p, t.line, t.col, "expected a type, found '%s'", t.s);
    }
    ml_leave(p);
    return ty;
}

/* ---- Affine maps and sets ---- */

typedef struct {
    int n;
    const char *names[64];
} ml_names;

static int find_name(const ml_names *ns, const char *s)
{
    for (int i = 0; i < ns->n; i++)
        if (strcmp(ns->names[i], s) == 0) return i;
    return -1;
}

static void parse_idlist(ml_parser *p, ml_names *ns, const char *open, const char *close)
{
    ml_expect(p, open);
    ml_tok t = ml_peek(p);
    if (ml_is_punct(&t, close)) {
        ml_next(p);
        return;
    }
    for (;;) {
        t = ml_next(p);
        if (t.kind != TK_BARE) ml_fail(p, t.line, t.col, "expected an identifier, found '%s'", t.s);
        if (ns->n == 64) ml_fail(p, t.line, t.col, "more than 64 affine identifiers");
        ns->names[ns->n++] = t.s;
        t = ml_next(p);
        if (ml_is_punct(&t, close)) return;
        if (!ml_is_punct(&t, ",")) ml_fail(p, t.line, t.col, "expected ',' or '%s', found '%s'", close, t.s);
    }
}

typedef struct {
    ml_names dims, syms;
} ml_affctx;

static ml_aexpr *aexpr_new(ml_parser *p, ml_aexpr_kind k, int64_t v, ml_aexpr *l, ml_aexpr *r)
{
    ml_aexpr *e = ml_alloc(p->arena, sizeof *e);
    e->kind = k, e->v = v, e->l = l, e->r = r;
    return e;
}

static ml_aexpr *aff_sum(ml_parser *p, const ml_affctx *c);

static ml_aexpr *aff_atom(ml_parser *p, const ml_affctx *c)
{
    ml_tok t = ml_next(p);
    ml_enter(p, t.line, t.col);
    ml_aexpr *e;
    if (t.kind == TK_INT) {
        if (t.i < 0) ml_fail(p, t.line, t.col, "integer out of range");
        e = aexpr_new(p, ML_AE_CONST, t.i, NULL, NULL);
    } else if (ml_is_punct(&t, "-")) {
        e = aexpr_new(p, ML_AE_MUL, 0, aexpr_new(p, ML_AE_CONST, -1, NULL, NULL), aff_atom(p, c));
    } else if (ml_is_punct(&t, "(")) {
        e = aff_sum(p, c);
        ml_expect(p, ")");
    } else if (t.kind == TK_BARE && find_name(&c->dims, t.s) >= 0) {
        e = aexpr_new(p, ML_AE_DIM, find_name(&c->dims, t.s), NULL, NULL);
    } else if (t.kind == TK_BARE && find_name(&c->syms, t.s) >= 0) {
        e = aexpr_new(p, ML_AE_SYM, find_name(&c->syms, t.s), NULL, NULL);
    } else {
        ml_fail(p, t.line, t.col, "unexpected '%s' in an affine expression", t.s);
    }
    ml_leave(p);
    return e;
}

static ml_aexpr *aff_term(ml_parser *p, const ml_affctx *c)
{
    ml_aexpr *e = aff_atom(p, c);
    for (;;) {
        ml_tok t = ml_peek(p);
        ml_aexpr_kind k;
        if (ml_is_punct(&t, "*")) k = ML_AE_MUL;
        else if (t.kind == TK_BARE && !strcmp(t.s, "mod")) k = ML_AE_MOD;
        else if (t.kind == TK_BARE && !strcmp(t.s, "floordiv")) k = ML_AE_FLOORDIV;
        else if (t.kind == TK_BARE && !strcmp(t.s, "ceildiv")) k = ML_AE_CEILDIV;
        else return e;
        ml_next(p);
        e = aexpr_new(p, k, 0, e, aff_atom(p, c));
    }
}

static ml_aexpr *aff_sum(ml_parser *p, const ml_affctx *c)
{
    ml_aexpr *e = aff_term(p, c);
    for (;;) {
        ml_tok t = ml_peek(p);
        if (!ml_is_punct(&t, "+") && !ml_is_punct(&t, "-")) return e;
        ml_next(p);
        ml_aexpr *r = aff_term(p, c);
        if (t.s[0] == '-') r = aexpr_new(p, ML_AE_MUL, 0, aexpr_new(p, ML_AE_CONST, -1, NULL, NULL), r);
        e = aexpr_new(p, ML_AE_ADD, 0, e, r);
    }
}

/* One set constraint: "lhs >= rhs", "lhs <= rhs" or "lhs == rhs" as e >= 0 / e == 0. */
static ml_aexpr *aff_constraint(ml_parser *p, const ml_affctx *c, int *eq)
{
    ml_aexpr *l = aff_sum(p, c);
    ml_tok t = ml_next(p), u = ml_next(p);
    ml_aexpr *r = aff_sum(p, c);
    ml_aexpr *neg1 = aexpr_new(p, ML_AE_CONST, -1, NULL, NULL);
    *eq = 0;
    if (ml_is_punct(&t, ">") && ml_is_punct(&u, "=")) return aexpr_new(p, ML_AE_ADD, 0, l, aexpr_new(p, ML_AE_MUL, 0, neg1, r));
    if (ml_is_punct(&t, "<") && ml_is_punct(&u, "=")) return aexpr_new(p, ML_AE_ADD, 0, r, aexpr_new(p, ML_AE_MUL, 0, neg1, l));
    if (ml_is_punct(&t, "=") && ml_is_punct(&u, "=")) {
        *eq = 1;
        return aexpr_new(p, ML_AE_ADD, 0, l, aexpr_new(p, ML_AE_MUL, 0, neg1, r));
    }
    ml_fail(p, t.line, t.col, "expected '>=', '<=' or '==' in an affine set");
}

/* affine_map<(dims)[syms] -> (exprs)> or affine_set<(dims)[syms] : (constraints)>, after the keyword. */
static ml_affine *parse_affine(ml_parser *p, int is_set)
{
    ml_affctx c = {0};
    ml_expect(p, "<");
    parse_idlist(p, &c.dims, "(", ")");
    ml_tok t = ml_peek(p);
    if (ml_is_punct(&t, "[")) parse_idlist(p, &c.syms, "[", "]");
    ml_expect(p, is_set ? ":" : "->");
    ml_expect(p, "(");
    ml_affine *a = ml_alloc(p->arena, sizeof *a);
    a->ndims = c.dims.n, a->nsyms = c.syms.n;
    int cap = 0, qcap = 0;
    t = ml_peek(p);
    if (ml_is_punct(&t, ")")) ml_next(p);
    else
        for (;;) {
            a->e = ml_grow(p->arena, a->e, a->n, &cap, sizeof *a->e);
            a->eq = ml_grow(p->arena, a->eq, a->n, &qcap, sizeof *a->eq);
            int eq = 0;
            a->e[a->n] = is_set ? aff_constraint(p, &c, &eq) : aff_sum(p, &c);
            a->eq[a->n++] = eq;
            t = ml_next(p);
            if (ml_is_punct(&t, ")")) break;
            if (!ml_is_punct(&t, ",")) ml_fail(p, t.line, t.col, "expected ',' or ')', found '%s'", t.s);
        }
    ml_expect(p, ">");
    return a;
}

/* ---- Attributes ---- */

static ml_attr *attr_new(ml_parser *p, ml_attr_kind k)
{
    ml_attr *a = ml_alloc(p->arena, sizeof *a);
    a->kind = k;
    return a;
}

static ml_attr *parse_array(ml_parser *p)
{
    ml_attr *a = attr_new(p, ML_A_ARRAY);
    int cap = 0;
    ml_tok t = ml_peek(p);
    if (ml_is_punct(&t, "]")) {
        ml_next(p);
        return a;
    }
    for (;;) {
        ml_attr *v = ml_parse_attr(p);
        if (!v) {
            t = ml_peek(p);
            ml_fail(p, t.line, t.col, "expected an attribute, found '%s'", t.s);
        }
        a->items = ml_grow(p->arena, a->items, a->n, &cap, sizeof *a->items);
        a->items[a->n++] = v;
        t = ml_next(p);
        if (ml_is_punct(&t, "]")) return a;
        if (!ml_is_punct(&t, ",")) ml_fail(p, t.line, t.col, "expected ',' or ']', found '%s'", t.s);
    }
}

ml_attr *ml_parse_dict(ml_parser *p)
{
    ml_attr *a = attr_new(p, ML_A_DICT);
    int cap = 0, kcap = 0;
    for (;;) {
        ml_tok t = ml_next(p);
        if (ml_is_punct(&t, "}") && a->n == 0) return a;
        if (t.kind != TK_BARE && t.kind != TK_STRING)
            ml_fail(p, t.line, t.col, "expected an attribute name, found '%s'", t.s);
        a->keys = ml_grow(p->arena, a->keys, a->n, &kcap, sizeof *a->keys);
        a->items = ml_grow(p->arena, a->items, a->n, &cap, sizeof *a->items);
        a->keys[a->n] = t.s;
        ml_tok u = ml_peek(p);
        ml_attr *v;
        if (ml_is_punct(&u, "=")) {
            ml_next(p);
            if (!(v = ml_parse_attr(p))) {
                u = ml_peek(p);
                ml_fail(p, u.line, u.col, "expected an attribute, found '%s'", u.s);
            }
        } else {
            v = attr_new(p, ML_A_UNIT);
        }
        a->items[a->n++] = v;
        t = ml_next(p);
        if (ml_is_punct(&t, "}")) return a;
        if (!ml_is_punct(&t, ",")) ml_fail(p, t.line, t.col, "expected ',' or '}', found '%s'", t.s);
    }
}

/* A literal's optional ": type" suffix (e.g. 0 : i32). */
static void literal_type(ml_parser *p, ml_attr *a)
{
    ml_tok t = ml_peek(p);
    if (!ml_is_punct(&t, ":")) return;
    size_t pos = p->pos;
    int line = p->line, col = p->col;
    ml_next(p);
    ml_tok u = ml_peek(p);
    if (ml_starts_type(&u)) {
        a->type = ml_parse_type(p);
        return;
    }
    p->pos = pos, p->line = line, p->col = col; /* a ':' of the op's own syntax */
}

static ml_attr *parse_number(ml_parser *p, int neg)
{
    ml_tok t = ml_next(p);
    ml_attr *a;
    if (t.kind == TK_INT) {
        if (!neg && t.i < 0) ml_fail(p, t.line, t.col, "integer out of range");
        a = attr_new(p, ML_A_INT);
        a->i = neg ? (int64_t)(0 - (uint64_t)t.i) : t.i;
        a->f = (double)a->i;
    } else if (t.kind == TK_FLOAT) {
        a = attr_new(p, ML_A_FLOAT);
        a->f = neg ? -t.f : t.f;
    } else {
        ml_fail(p, t.line, t.col, "expected a number after '-', found '%s'", t.s);
    }
    return a;
}

static ml_attr *parse_keyword_attr(ml_parser *p, const ml_tok *t)
{
    ml_attr *a;
    if (!strcmp(t->s, "true") || !strcmp(t->s, "false")) {
        ml_next(p);
        a = attr_new(p, ML_A_BOOL);
        a->i = t->s[0] == 't';
    } else if (!strcmp(t->s, "affine_map") || !strcmp(t->s, "affine_set")) {
        ml_next(p);
        a = attr_new(p, t->s[7] == 'm' ? ML_A_MAP : ML_A_SET);
        a->aff = parse_affine(p, a->kind == ML_A_SET);
    } else if (!strcmp(t->s, "dense")) {
        ml_next(p);
        ml_expect(p, "<");
        a = attr_new(p, ML_A_DENSE);
        if (!(a->dense = ml_parse_attr(p))) ml_fail(p, t->line, t->col, "expected the values of dense<...>");
        ml_expect(p, ">");
        literal_type(p, a);
    } else if (!strcmp(t->s, "unit")) {
        ml_next(p);
        a = attr_new(p, ML_A_UNIT);
    } else if (ml_starts_type(t)) {
        a = attr_new(p, ML_A_TYPE);
        a->type = ml_parse_type(p);
    } else {
        return NULL;
    }
    return a;
}

ml_attr *ml_parse_attr(ml_parser *p)
{
    ml_tok t = ml_peek(p);
    ml_enter(p, t.line, t.col);
    ml_attr *a = NULL;
    if (t.kind == TK_INT || t.kind == TK_FLOAT) {
        a = parse_number(p, 0);
        literal_type(p, a);
    } else if (ml_is_punct(&t, "-")) {
        ml_next(p);
        a = parse_number(p, 1);
        literal_type(p, a);
    } else if (t.kind == TK_STRING) {
        ml_next(p);
        a = attr_new(p, ML_A_STRING), a->s = t.s;
        literal_type(p, a);
    } else if (ml_is_punct(&t, "[")) {
        ml_next(p);
        a = parse_array(p);
    } else if (ml_is_punct(&t, "{")) {
        ml_next(p);
        a = ml_parse_dict(p);
    } else if (t.kind == TK_AT) {
        ml_next(p);
        a = attr_new(p, ML_A_SYMBOL), a->s = t.s;
    } else if (t.kind == TK_HASH) {
        ml_next(p);
        int dialect = strchr(t.s, '.') != NULL;
        a = attr_new(p, dialect ? ML_A_DIALECT : ML_A_ALIAS), a->s = t.s, a->body = "";
        if (p->pos < p->len && p->text[p->pos] == '<') {
            p->pos++, p->col++;
            a->body = ml_raw_angle(p);
        }
    } else if (t.kind == TK_BARE || t.kind == TK_BANG) {
        a = parse_keyword_attr(p, &t);
    }
    ml_leave(p);
    return a;
}
