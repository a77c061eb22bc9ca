/* graph.c: the graph text format (docs/graph-format.md): a hand-written
 * lexer, a recursive-descent parser, name resolution, a stable topological
 * sort, and the printer.
 *
 * Parsing runs in three steps:
 *   1. lines: each line is lexed and parsed on its own into values
 *      (input, param, op results) and nodes; a use of a value is kept by
 *      name (arg.s) with its column (arg.i) until step 2;
 *   2. resolution: every use and every output name is looked up;
 *   3. ordering: nodes are sorted topologically, keeping text order where
 *      the data flow allows (Kahn's algorithm taking the earliest ready
 *      node first); what is left over contains a cycle, which is reported.
 * The first error wins; nothing after it is looked at. */
/* strfromd (ISO/IEC TS 18661-1), for the printer */
#define __STDC_WANT_IEC_60559_BFP_EXT__ 1
#include "graph.h"
#include "isa.h"
#include "strbuf.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const gr_dtype_names[] = {"f32", "f16", "bf16", "f64", "i64", "i32", "bool"};

#define MAX_NEST 64                 /* nested lists in an argument */
#define MAX_NUMEL ((int64_t)1 << 50) /* elements of one tensor type */

/* ---- Lexer ---- */

typedef enum {
    T_EOF,
    T_NL,
    T_IDENT,   /* name, op name, keyword, dtype, True/False/None/inf/nan */
    T_VALNAME, /* %name (p, len: the name without %) */
    T_INT,
    T_FLOAT,
    T_STR,     /* "..." (p, len: the raw text between the quotes) */
    T_PUNCT,   /* : = ( ) [ ] , */
    T_BAD,     /* a character that starts no token (an error was set) */
} tok_kind;

typedef struct {
    tok_kind k;
    const char *p; /* start of the token's text */
    size_t len;
    int line, col;
    int64_t i;
    double f;
} token;

typedef struct {
    const char *path;
    const char *s; /* the text */
    size_t pos;
    int line;
    size_t line_start;
    token tok;     /* the current token */
    char *err;
    size_t errlen;
    int failed;
} lexer;

static void errv(lexer *L, const char *fmt, va_list ap)
{
    if (L->failed)
        return;
    L->failed = 1;
    isa_verrf(L->err, L->errlen, fmt, ap);
}

static void errf(lexer *L, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void errf(lexer *L, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errv(L, fmt, ap);
    va_end(ap);
}

static int is_name_start(int c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
static int is_name_char(int c) { return is_name_start(c) || (c >= '0' && c <= '9') || c == '.'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }

/* A token described for "found X". */
static void describe(const token *t, char *buf, size_t len)
{
    switch (t->k) {
    case T_EOF:
        snprintf(buf, len, "end of file");
        return;
    case T_NL:
        snprintf(buf, len, "end of line");
        return;
    case T_VALNAME:
        snprintf(buf, len, "'%%%.*s'", (int)(t->len > 60 ? 60 : t->len), t->p);
        return;
    case T_STR:
        snprintf(buf, len, "string \"%.*s%s\"", (int)(t->len > 40 ? 40 : t->len), t->p, t->len > 40 ? "..." : "");
        return;
    case T_BAD: {
        unsigned char c = (unsigned char)t->p[0];
        if (c >= 0x21 && c < 0x7f)
            snprintf(buf, len, "'%c'", c);
        else
            snprintf(buf, len, "byte 0x%02x", c);
        return;
    }
    default:
        snprintf(buf, len, "'%.*s'", (int)(t->len > 60 ? 60 : t->len), t->p);
        return;
    }
}

/* "FILE:LINE:COL: expected WHAT, found <the current token>" */
static void expected(lexer *L, const char *what)
{
    char found[160];
    describe(&L->tok, found, sizeof found);
    errf(L, "%s:%d:%d: expected %s, found %s", L->path, L->tok.line, L->tok.col, what, found);
}

/* Lex a number at s (an optional '-' already checked to be followed by a
 * digit, "inf" or "nan"). */
static void lex_number(lexer *L, token *t)
{
    const char *s = L->s + L->pos, *q = s;
    int neg = 0;
    if (*q == '-') {
        neg = 1;
        q++;
    }
    if (!is_digit((unsigned char)*q)) { /* -inf, -nan */
        t->k = T_FLOAT;
        t->f = q[0] == 'i' ? -INFINITY : -NAN;
        t->len = 4;
        return;
    }
    const char *d = q;
    while (is_digit((unsigned char)*q))
        q++;
    int isfloat = 0;
    if (*q == '.') {
        isfloat = 1;
        q++;
        while (is_digit((unsigned char)*q))
            q++;
    }
    if ((*q == 'e' || *q == 'E') &&
        (is_digit((unsigned char)q[1]) || ((q[1] == '+' || q[1] == '-') && is_digit((unsigned char)q[2])))) {
        isfloat = 1;
        q += 2;
        while (is_digit((unsigned char)*q))
            q++;
    }
    t->len = (size_t)(q - s);
    if (isfloat) {
        char buf[128];
        if (t->len >= sizeof buf) {
            errf(L, "%s:%d:%d: number too long", L->path, t->line, t->col);
            t->k = T_BAD;
            return;
        }
        memcpy(buf, s, t->len);
        buf[t->len] = 0;
        t->k = T_FLOAT;
        t->f = strtod(buf, NULL);
        return;
    }
    uint64_t v = 0;
    for (; d < q; d++) {
        unsigned dig = (unsigned)(*d - '0');
        if (v > (UINT64_MAX - dig) / 10) {
            v = UINT64_MAX;
            break;
        }
        v = v * 10 + dig;
    }
    if (v > (uint64_t)INT64_MAX + (uint64_t)neg) {
        errf(L, "%s:%d:%d: integer %.*s out of range", L->path, t->line, t->col, (int)(t->len > 40 ? 40 : t->len), s);
        t->k = T_BAD;
        return;
    }
    t->k = T_INT;
    t->i = neg ? (int64_t)(0 - v) : (int64_t)v;
}

static void lex_string(lexer *L, token *t)
{
    const char *s = L->s + L->pos + 1, *q = s;
    for (;;) {
        if (*q == 0 || *q == '\n') {
            errf(L, "%s:%d:%d: unterminated string", L->path, t->line, t->col);
            t->k = T_BAD;
            t->len = 1;
            return;
        }
        if (*q == '"')
            break;
        if (*q == '\\') {
            if (q[1] != '"' && q[1] != '\\' && q[1] != 'n' && q[1] != 't') {
                int col = t->col + 1 + (int)(q - s);
                if (q[1] == 0 || q[1] == '\n')
                    errf(L, "%s:%d:%d: unterminated string", L->path, t->line, t->col);
                else
                    errf(L, "%s:%d:%d: unknown escape in string (only \\\" \\\\ \\n \\t)", L->path, t->line, col);
                t->k = T_BAD;
                t->len = 1;
                return;
            }
            q += 2;
            continue;
        }
        q++;
    }
    t->k = T_STR;
    t->p = s;
    t->len = (size_t)(q - s);
    L->pos = (size_t)(q + 1 - L->s); /* past the closing quote */
}

/* Read the next token into L->tok. */
static void next(lexer *L)
{
    const char *s = L->s;
    for (;;) {
        char c = s[L->pos];
        if (c == ' ' || c == '\t' || c == '\r')
            L->pos++;
        else if (c == '#')
            while (s[L->pos] && s[L->pos] != '\n')
                L->pos++;
        else
            break;
    }
    token *t = &L->tok;
    memset(t, 0, sizeof *t);
    t->p = s + L->pos;
    t->line = L->line;
    t->col = (int)(L->pos - L->line_start) + 1;
    char c = s[L->pos];
    if (c == 0) {
        t->k = T_EOF;
        return;
    }
    if (c == '\n') {
        t->k = T_NL;
        t->len = 1;
        L->pos++;
        L->line++;
        L->line_start = L->pos;
        return;
    }
    if (c == '%') {
        if (!is_name_start((unsigned char)s[L->pos + 1])) {
            t->k = T_BAD;
            t->len = 1;
            return;
        }
        size_t q = L->pos + 1;
        while (is_name_char((unsigned char)s[q]))
            q++;
        t->k = T_VALNAME;
        t->p = s + L->pos + 1;
        t->len = q - L->pos - 1;
        L->pos = q;
        return;
    }
    if (is_name_start((unsigned char)c)) {
        size_t q = L->pos;
        while (is_name_char((unsigned char)s[q]))
            q++;
        t->k = T_IDENT;
        t->len = q - L->pos;
        L->pos = q;
        return;
    }
    if (is_digit((unsigned char)c) ||
        (c == '-' && (is_digit((unsigned char)s[L->pos + 1]) ||
                      ((strncmp(s + L->pos + 1, "inf", 3) == 0 || strncmp(s + L->pos + 1, "nan", 3) == 0) &&
                       !is_name_char((unsigned char)s[L->pos + 4]))))) {
        lex_number(L, t);
        if (t->k != T_BAD)
            L->pos += t->len;
        return;
    }
    if (c == '"') {
        lex_string(L, t);
        return;
    }
    if (strchr(":=()[],", c)) {
        t->k = T_PUNCT;
        t->len = 1;
        L->pos++;
        return;
    }
    t->k = T_BAD;
    t->len = 1;
}

static int is_punct(const token *t, char c) { return t->k == T_PUNCT && t->p[0] == c; }
/* After an item of a list closed by close: 1 at close (left for the
 * caller), 0 past a ',', -1 after a message. */
static int list_next(lexer *L, char close)
{
    if (is_punct(&L->tok, close))
        return 1;
    if (!is_punct(&L->tok, ',')) {
        char want[] = "',' or 'X'";
        want[8] = close;
        expected(L, want);
        return -1;
    }
    next(L);
    return 0;
}
static int is_ident(const token *t, const char *w)
{
    return t->k == T_IDENT && t->len == strlen(w) && memcmp(t->p, w, t->len) == 0;
}

/* The token after the current one, without consuming anything. */
static token peek(lexer *L)
{
    lexer save = *L;
    char dummy[1];
    L->err = dummy; /* a lexing error here is reported when it is reached */
    L->errlen = 0;
    next(L);
    token t = L->tok;
    int failed = L->failed;
    *L = save;
    if (failed)
        t.k = T_BAD;
    return t;
}

/* ---- Parser ---- */

typedef struct {
    lexer L;
    gr_graph *g;
    int capvalues, capnodes, capinputs, capparams;
    /* name -> value index, open addressing */
    int *hash;
    size_t hashcap;
    /* the output line, names kept until resolution */
    int output_line;
    char **outnames;
    int *outcols;
    int graph_line, weights_line;
    /* the update lines: state and value names, kept until resolution */
    char **updnames; /* 2 per update */
    int *updlines, nupd;
} parser;

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static void *grow(void *p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return p;
    int ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > INT_MAX / 2)
            return NULL;
        ncap *= 2;
    }
    void *np = realloc(p, (size_t)ncap * elem);
    if (np)
        *cap = ncap;
    return np;
}

static void oom(parser *P) { errf(&P->L, "%s: out of memory", P->L.path); }

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Look up a name: its value index, or -1. */
static int lookup(const parser *P, const char *name)
{
    if (!P->hashcap)
        return -1;
    for (size_t h = hash_str(name) & (P->hashcap - 1);; h = (h + 1) & (P->hashcap - 1)) {
        int v = P->hash[h];
        if (v < 0)
            return -1;
        if (strcmp(P->g->values[v].name, name) == 0)
            return v;
    }
}

static int hash_insert(parser *P, int v)
{
    if ((size_t)P->g->nvalues * 2 >= P->hashcap) {
        size_t ncap = P->hashcap ? P->hashcap * 2 : 64;
        int *nh = malloc(ncap * sizeof *nh);
        if (!nh)
            return -1;
        for (size_t i = 0; i < ncap; i++)
            nh[i] = -1;
        for (size_t i = 0; i < P->hashcap; i++)
            if (P->hash[i] >= 0)
                for (size_t h = hash_str(P->g->values[P->hash[i]].name) & (ncap - 1);; h = (h + 1) & (ncap - 1))
                    if (nh[h] < 0) {
                        nh[h] = P->hash[i];
                        break;
                    }
        free(P->hash);
        P->hash = nh;
        P->hashcap = ncap;
    }
    for (size_t h = hash_str(P->g->values[v].name) & (P->hashcap - 1);; h = (h + 1) & (P->hashcap - 1))
        if (P->hash[h] < 0) {
            P->hash[h] = v;
            return 0;
        }
}

/* A new value named by the current T_VALNAME token; -1 on error. */
static int new_value(parser *P, gr_value_kind kind)
{
    const token *t = &P->L.tok;
    char *name = dupn(t->p, t->len);
    if (!name) {
        oom(P);
        return -1;
    }
    int prev = lookup(P, name);
    if (prev >= 0) {
        errf(&P->L, "%s:%d: %%%s is defined twice (first at line %d)", P->L.path, t->line, name,
             P->g->values[prev].line);
        free(name);
        return -1;
    }
    gr_graph *g = P->g;
    gr_value *nv = grow(g->values, &P->capvalues, g->nvalues + 1, sizeof *nv);
    if (!nv) {
        free(name);
        oom(P);
        return -1;
    }
    g->values = nv;
    int v = g->nvalues++;
    memset(&g->values[v], 0, sizeof g->values[v]);
    g->values[v].name = name;
    g->values[v].kind = kind;
    g->values[v].node = -1;
    g->values[v].line = t->line;
    if (hash_insert(P, v)) {
        oom(P);
        return -1;
    }
    return v;
}

static int expect_punct(parser *P, char c)
{
    if (!is_punct(&P->L.tok, c)) {
        char what[8] = {'\'', c, '\'', 0};
        expected(&P->L, what);
        return -1;
    }
    next(&P->L);
    return 0;
}

static int expect_eol(parser *P)
{
    if (P->L.tok.k != T_NL && P->L.tok.k != T_EOF) {
        expected(&P->L, "end of line");
        return -1;
    }
    return 0;
}

int gr_dtype_parse(const char *name)
{
    for (int d = 0; d < GR_NDTYPES; d++)
        if (strcmp(name, gr_dtype_names[d]) == 0)
            return d;
    return -1;
}

static int tok_dtype(const token *t)
{
    if (t->k != T_IDENT)
        return -1;
    for (int d = 0; d < GR_NDTYPES; d++)
        if (is_ident(t, gr_dtype_names[d]))
            return d;
    return -1;
}

/* DTYPE[d0, d1, ...] */
static int parse_ttype(parser *P, gr_ttype *ty)
{
    lexer *L = &P->L;
    memset(ty, 0, sizeof *ty);
    int d = tok_dtype(&L->tok);
    if (d < 0) {
        expected(L, "a type (f32, f16, bf16, f64, i64, i32 or bool)");
        return -1;
    }
    ty->dtype = (gr_dtype)d;
    int line = L->tok.line, col = L->tok.col;
    next(L);
    if (expect_punct(P, '['))
        return -1;
    int64_t numel = 1;
    if (!is_punct(&L->tok, ']'))
        for (;;) {
            if (L->tok.k != T_INT || L->tok.i < 0) {
                expected(L, "a dimension (an integer >= 0)");
                return -1;
            }
            if (ty->rank == GR_MAX_RANK) {
                errf(L, "%s:%d:%d: more than %d dimensions", L->path, L->tok.line, L->tok.col, GR_MAX_RANK);
                return -1;
            }
            int64_t dim = L->tok.i;
            ty->shape[ty->rank++] = dim;
            if (dim && numel > MAX_NUMEL / dim) {
                errf(L, "%s:%d:%d: type has more than 2^50 elements", L->path, line, col);
                return -1;
            }
            numel *= dim;
            next(L);
            int end = list_next(L, ']');
            if (end < 0)
                return -1;
            if (end)
                break;
        }
    next(L); /* ']' */
    return 0;
}

/* A value's type: a tensor type, or (with tuple_ok) a tuple of them. */
static int parse_type(parser *P, gr_value *v, int tuple_ok)
{
    lexer *L = &P->L;
    if (!is_punct(&L->tok, '('))
        return parse_ttype(P, &v->type);
    if (!tuple_ok) {
        expected(L, "a tensor type");
        return -1;
    }
    next(L);
    int cap = 0;
    for (;;) {
        gr_ttype *nt = grow(v->tuple, &cap, v->ntuple + 1, sizeof *nt);
        if (!nt) {
            oom(P);
            return -1;
        }
        v->tuple = nt;
        if (parse_ttype(P, &v->tuple[v->ntuple]))
            return -1;
        v->ntuple++;
        int end = list_next(L, ')');
        if (end < 0)
            return -1;
        if (end)
            break;
    }
    next(L);
    return 0;
}

/* Decode the raw text of a string token (escapes already validated). */
static char *string_value(const token *t)
{
    char *s = malloc(t->len + 1);
    if (!s)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < t->len; i++) {
        char c = t->p[i];
        if (c == '\\') {
            c = t->p[++i];
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        }
        s[o++] = c;
    }
    s[o] = 0;
    return s;
}

static void free_arg(gr_arg *a)
{
    free(a->key);
    free(a->s);
    for (int i = 0; i < a->nitems; i++)
        free_arg(&a->items[i]);
    free(a->items);
}

/* One argument value (no keyword) into *a. */
static int parse_value(parser *P, gr_arg *a, int depth)
{
    lexer *L = &P->L;
    token *t = &L->tok;
    switch (t->k) {
    case T_VALNAME:
        a->kind = GR_ARG_VALUE;
        a->value = -1;
        a->s = dupn(t->p, t->len); /* resolved later */
        a->i = t->col;
        if (!a->s) {
            oom(P);
            return -1;
        }
        break;
    case T_INT:
        a->kind = GR_ARG_INT;
        a->i = t->i;
        break;
    case T_FLOAT:
        a->kind = GR_ARG_FLOAT;
        a->f = t->f;
        break;
    case T_STR:
        a->kind = GR_ARG_STR;
        a->s = string_value(t);
        if (!a->s) {
            oom(P);
            return -1;
        }
        break;
    case T_IDENT:
        if (is_ident(t, "True") || is_ident(t, "False")) {
            a->kind = GR_ARG_BOOL;
            a->i = t->p[0] == 'T';
        } else if (is_ident(t, "None")) {
            a->kind = GR_ARG_NONE;
        } else if (is_ident(t, "inf") || is_ident(t, "nan")) {
            a->kind = GR_ARG_FLOAT;
            a->f = t->p[0] == 'i' ? INFINITY : NAN;
        } else if (tok_dtype(t) >= 0) {
            a->kind = GR_ARG_DTYPE;
            a->i = tok_dtype(t);
        } else {
            expected(L, "an argument");
            return -1;
        }
        break;
    case T_PUNCT:
        if (is_punct(t, '[')) {
            if (depth >= MAX_NEST) {
                errf(L, "%s:%d:%d: lists nested more than %d deep", L->path, t->line, t->col, MAX_NEST);
                return -1;
            }
            a->kind = GR_ARG_LIST;
            next(L);
            int cap = 0;
            if (is_punct(t, ']'))
                break;
            for (;;) {
                gr_arg *ni = grow(a->items, &cap, a->nitems + 1, sizeof *ni);
                if (!ni) {
                    oom(P);
                    return -1;
                }
                a->items = ni;
                memset(&a->items[a->nitems], 0, sizeof *ni);
                a->nitems++;
                if (parse_value(P, &a->items[a->nitems - 1], depth + 1))
                    return -1;
                int end = list_next(L, ']');
                if (end < 0)
                    return -1;
                if (end)
                    break;
            }
            break;
        }
        expected(L, "an argument");
        return -1;
    default:
        expected(L, "an argument");
        return -1;
    }
    next(L);
    return 0;
}

/* ATen ops that are another op under a second name: unsafe_split differs
 * from split only in autograd's view tracking (nn.LSTM and nn.GRU trace it);
 * expand_copy is expand's values as a new tensor (linalg.matrix_power's
 * power 0 traces it), which a graph's value is already. */
static void unalias_base(gr_node *n)
{
    static const char *const alias[][2] = {{"unsafe_split", "split"},
                                           {"unsafe_split_with_sizes", "split_with_sizes"},
                                           {"unsafe_chunk", "chunk"},
                                           {"expand_copy", "expand"}};
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(n->base, alias[i][0])) {
            free(n->base);
            n->base = dupn(alias[i][1], strlen(alias[i][1]));
            return;
        }
}

/* %NAME: TYPE = OP(ARGS) with the current token at %NAME. */
static int parse_op_line(parser *P)
{
    lexer *L = &P->L;
    int v = new_value(P, GR_VAL_NODE);
    if (v < 0)
        return -1;
    next(L);
    if (expect_punct(P, ':'))
        return -1;
    if (parse_type(P, &P->g->values[v], 1))
        return -1;
    if (expect_punct(P, '='))
        return -1;
    if (L->tok.k != T_IDENT) {
        expected(L, "an op name");
        return -1;
    }
    gr_graph *g = P->g;
    gr_node *nn = grow(g->nodes, &P->capnodes, g->nnodes + 1, sizeof *nn);
    if (!nn) {
        oom(P);
        return -1;
    }
    g->nodes = nn;
    gr_node *n = &g->nodes[g->nnodes++];
    memset(n, 0, sizeof *n);
    n->out = v;
    n->line = L->tok.line;
    n->col = L->tok.col;
    n->op = dupn(L->tok.p, L->tok.len);
    if (!n->op) {
        oom(P);
        return -1;
    }
    /* base: the second dot-separated part ("aten.add.Tensor" -> "add"),
     * or the whole name when it has no namespace. */
    const char *dot = strchr(n->op, '.');
    const char *b = dot ? dot + 1 : n->op;
    const char *e = strchr(b, '.');
    n->base = dupn(b, e ? (size_t)(e - b) : strlen(b));
    if (n->base)
        unalias_base(n);
    if (!n->base) {
        oom(P);
        return -1;
    }
    g->values[v].node = g->nnodes - 1;
    next(L);
    if (expect_punct(P, '('))
        return -1;
    int cap = 0, seen_key = 0;
    if (!is_punct(&L->tok, ')'))
        for (;;) {
            gr_arg *na = grow(n->args, &cap, n->nargs + 1, sizeof *na);
            if (!na) {
                oom(P);
                return -1;
            }
            n->args = na;
            gr_arg *a = &n->args[n->nargs++];
            memset(a, 0, sizeof *a);
            if (L->tok.k == T_IDENT) {
                token after = peek(L);
                if (is_punct(&after, '=')) {
                    a->key = dupn(L->tok.p, L->tok.len);
                    if (!a->key) {
                        oom(P);
                        return -1;
                    }
                    seen_key = 1;
                    next(L);
                    next(L);
                }
            }
            if (!a->key && seen_key) {
                expected(L, "a keyword argument (name=value) after a keyword argument");
                return -1;
            }
            if (parse_value(P, a, 0))
                return -1;
            int end = list_next(L, ')');
            if (end < 0)
                return -1;
            if (end)
                break;
        }
    next(L); /* ')' */
    return expect_eol(P);
}

/* ` range=[LO, HI]` after an integer input's type or a param's key: the
 * values it promises (the exporter writes an integer weight's own). */
static int parse_range(parser *P, gr_value *v)
{
    lexer *L = &P->L;
    if (v->type.dtype != GR_I64 && v->type.dtype != GR_I32) {
        expected(L, "end of line (a range is for an i64 or i32 input or param)");
        return -1;
    }
    const int col = L->tok.col; /* range's: a bad pair is named where it starts */
    next(L);
    if (expect_punct(P, '=') || expect_punct(P, '['))
        return -1;
    int64_t b[2];
    for (int i = 0; i < 2; i++) {
        if (L->tok.k != T_INT) {
            expected(L, i ? "the range's upper bound (an integer)" : "the range's lower bound (an integer)");
            return -1;
        }
        b[i] = L->tok.i;
        next(L);
        if (expect_punct(P, i ? ']' : ','))
            return -1;
    }
    if (b[0] > b[1]) {
        errf(L, "%s:%d:%d: range=[%lld, %lld] is empty", L->path, v->line, col, (long long)b[0], (long long)b[1]);
        return -1;
    }
    /* inputs reach the device and the host's reference as fp32 values */
    if (b[0] < -GR_RANGE_MAX || b[1] > GR_RANGE_MAX) {
        errf(L, "%s:%d:%d: range=[%lld, %lld] reaches past +-%lld, the integers fp32 holds exactly", L->path, v->line,
             col, (long long)b[0], (long long)b[1], (long long)GR_RANGE_MAX);
        return -1;
    }
    v->ranged = 1;
    v->lo = b[0];
    v->hi = b[1];
    return 0;
}

/* input %NAME: TYPE [range=[LO, HI]]  /  param %NAME: TYPE = "KEY"  /  state %NAME: TYPE = "KEY" */
static int parse_decl(parser *P, gr_value_kind kind, int state)
{
    lexer *L = &P->L;
    gr_graph *g = P->g;
    next(L);
    if (L->tok.k != T_VALNAME) {
        expected(L, "a %name");
        return -1;
    }
    int v = new_value(P, kind);
    if (v < 0)
        return -1;
    g->values[v].state = state;
    next(L);
    if (expect_punct(P, ':') || parse_type(P, &g->values[v], 0))
        return -1;
    if (kind == GR_VAL_PARAM) {
        if (expect_punct(P, '='))
            return -1;
        if (L->tok.k != T_STR) {
            expected(L, state ? "the state's key (its initial value) as a \"string\"" : "the weight's key as a \"string\"");
            return -1;
        }
        g->values[v].param_key = string_value(&L->tok);
        if (!g->values[v].param_key) {
            oom(P);
            return -1;
        }
        next(L);
        if (is_ident(&L->tok, "range") && parse_range(P, &g->values[v]))
            return -1;
        int *np = grow(g->params, &P->capparams, g->nparams + 1, sizeof *np);
        if (!np) {
            oom(P);
            return -1;
        }
        g->params = np;
        g->params[g->nparams++] = v;
    } else {
        if (is_ident(&L->tok, "range") && parse_range(P, &g->values[v]))
            return -1;
        int *ni = grow(g->inputs, &P->capinputs, g->ninputs + 1, sizeof *ni);
        if (!ni) {
            oom(P);
            return -1;
        }
        g->inputs = ni;
        g->inputs[g->ninputs++] = v;
    }
    return expect_eol(P);
}

/* output %A, %B, ... */
static int parse_output(parser *P)
{
    lexer *L = &P->L;
    int line = L->tok.line;
    if (P->output_line) {
        errf(L, "%s:%d: a second output line (the first is line %d)", L->path, line, P->output_line);
        return -1;
    }
    P->output_line = line;
    next(L);
    int cap = 0, cap2 = 0;
    for (;;) {
        if (L->tok.k != T_VALNAME) {
            expected(L, "a %name");
            return -1;
        }
        char **nn = grow(P->outnames, &cap, P->g->noutputs + 1, sizeof *nn);
        if (nn)
            P->outnames = nn;
        int *nc = grow(P->outcols, &cap2, P->g->noutputs + 1, sizeof *nc);
        if (nc)
            P->outcols = nc;
        char *name = dupn(L->tok.p, L->tok.len);
        if (!nn || !nc || !name) {
            free(name);
            oom(P);
            return -1;
        }
        P->outcols[P->g->noutputs] = L->tok.col;
        P->outnames[P->g->noutputs++] = name;
        next(L);
        if (!is_punct(&L->tok, ','))
            break;
        next(L);
    }
    return expect_eol(P);
}

/* update %STATE = %VALUE (names resolved with the outputs) */
static int parse_update(parser *P)
{
    lexer *L = &P->L;
    int line = L->tok.line;
    char *names[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        next(L);
        if (k == 1 && expect_punct(P, '=')) {
            free(names[0]);
            return -1;
        }
        if (L->tok.k != T_VALNAME) {
            expected(L, k ? "the new value as a %name" : "the state as a %name");
            free(names[0]);
            return -1;
        }
        names[k] = dupn(L->tok.p, L->tok.len);
    }
    char **nn = realloc(P->updnames, (size_t)(P->nupd + 1) * 2 * sizeof *nn);
    if (nn)
        P->updnames = nn;
    int *nl = realloc(P->updlines, (size_t)(P->nupd + 1) * sizeof *nl);
    if (nl)
        P->updlines = nl;
    if (!nn || !nl || !names[0] || !names[1]) {
        free(names[0]);
        free(names[1]);
        oom(P);
        return -1;
    }
    nn[2 * P->nupd] = names[0];
    nn[2 * P->nupd + 1] = names[1];
    nl[P->nupd++] = line;
    next(L);
    return expect_eol(P);
}

/* hint TEXT: the rest of the line, without a comment and outer blanks. */
static int parse_hint(parser *P)
{
    lexer *L = &P->L;
    const char *s = L->s + L->pos, *e = s;
    int instr = 0;
    while (*e && *e != '\n' && (instr || *e != '#')) {
        if (*e == '"')
            instr = !instr;
        else if (*e == '\\' && instr && e[1] && e[1] != '\n')
            e++;
        e++;
    }
    const char *q = e;
    while (*s == ' ' || *s == '\t')
        s++;
    while (q > s && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\r'))
        q--;
    if (q == s) {
        next(L);
        expected(L, "the hint's text");
        return -1;
    }
    gr_graph *g = P->g;
    char **nh = realloc(g->hints, (size_t)(g->nhints + 1) * sizeof *nh);
    if (!nh) {
        oom(P);
        return -1;
    }
    g->hints = nh;
    if (!(g->hints[g->nhints] = dupn(s, (size_t)(q - s)))) {
        oom(P);
        return -1;
    }
    g->nhints++;
    while (L->s[L->pos] && L->s[L->pos] != '\n')
        L->pos++;
    next(L);
    return 0;
}

/* A graph or weights line (word), which may stand once (*seen: the line
 * of the first): its one value, a name (T_IDENT) or a "string" (T_STR),
 * replaces *dst. */
static int parse_once(parser *P, const char *word, int *seen, tok_kind kind, const char *what, char **dst)
{
    lexer *L = &P->L;
    if (*seen) {
        errf(L, "%s:%d: a second %s line (the first is line %d)", L->path, L->tok.line, word, *seen);
        return -1;
    }
    *seen = L->tok.line;
    next(L);
    if (L->tok.k != kind) {
        expected(L, what);
        return -1;
    }
    char *v = kind == T_STR ? string_value(&L->tok) : dupn(L->tok.p, L->tok.len);
    if (!v) {
        oom(P);
        return -1;
    }
    free(*dst);
    *dst = v;
    next(L);
    return expect_eol(P);
}

static int parse_lines(parser *P)
{
    lexer *L = &P->L;
    next(L);
    while (!L->failed) {
        token *t = &L->tok;
        if (t->k == T_EOF)
            break;
        if (t->k == T_NL) {
            next(L);
            continue;
        }
        int rc;
        if (t->k == T_VALNAME) {
            rc = parse_op_line(P);
        } else if (is_ident(t, "input")) {
            rc = parse_decl(P, GR_VAL_INPUT, 0);
        } else if (is_ident(t, "param")) {
            rc = parse_decl(P, GR_VAL_PARAM, 0);
        } else if (is_ident(t, "state")) {
            rc = parse_decl(P, GR_VAL_PARAM, 1);
        } else if (is_ident(t, "update")) {
            rc = parse_update(P);
        } else if (is_ident(t, "output")) {
            rc = parse_output(P);
        } else if (is_ident(t, "hint")) {
            rc = parse_hint(P);
            continue;
        } else if (is_ident(t, "graph")) {
            rc = parse_once(P, "graph", &P->graph_line, T_IDENT, "the graph's name", &P->g->name);
        } else if (is_ident(t, "weights")) {
            rc = parse_once(P, "weights", &P->weights_line, T_STR, "the weights file as a \"string\"", &P->g->weights);
        } else {
            expected(L, "a line (graph, weights, input, param, state, %NAME: TYPE = OP(...), output, update or hint)");
            return -1;
        }
        if (rc || L->failed)
            return -1;
    }
    return L->failed ? -1 : 0;
}

/* ---- Resolution ---- */

static int resolve_arg(parser *P, gr_arg *a, int line)
{
    if (a->kind == GR_ARG_VALUE) {
        int v = lookup(P, a->s);
        if (v < 0) {
            errf(&P->L, "%s:%d: %%%s is not defined", P->L.path, line, a->s);
            return -1;
        }
        free(a->s);
        a->s = NULL;
        a->i = 0;
        a->value = v;
    }
    for (int i = 0; i < a->nitems; i++)
        if (resolve_arg(P, &a->items[i], line))
            return -1;
    return 0;
}

/* The form an update's value must have: index_copy(%STATE, DIM, %INDEX,
 * %SRC), INDEX an integer input, SRC a value of the state's rank. */
static int update_form(parser *P, gr_update *u)
{
    gr_graph *g = P->g;
    const gr_value *S = &g->values[u->state], *V = &g->values[u->value];
    const gr_node *n = V->node >= 0 ? &g->nodes[V->node] : NULL;
    const char *why = NULL;
    int64_t dim = 0;
    const gr_arg *a0 = n ? gr_node_arg(n, 0, "self") : NULL, *a1 = n ? gr_node_arg(n, 1, "dim") : NULL;
    const gr_arg *a2 = n ? gr_node_arg(n, 2, "index") : NULL, *a3 = n ? gr_node_arg(n, 3, "source") : NULL;
    if (!n || strcmp(n->op, "aten.index_copy.default") || !a0 || !a1 || !a2 || !a3)
        why = "is not defined by aten.index_copy.default(%STATE, DIM, %INDEX, %SRC)";
    else if (a0->kind != GR_ARG_VALUE || a0->value != u->state)
        why = "copies into another tensor than the state";
    else if (a1->kind != GR_ARG_INT || (dim = a1->i < 0 ? a1->i + S->type.rank : a1->i) < 0 || dim >= S->type.rank)
        why = "has no dimension of the state as its DIM";
    else if (a2->kind != GR_ARG_VALUE || g->values[a2->value].kind != GR_VAL_INPUT ||
             (g->values[a2->value].type.dtype != GR_I64 && g->values[a2->value].type.dtype != GR_I32) ||
             g->values[a2->value].type.rank != 1)
        why = "has an INDEX that is not a 1-D integer input of the graph";
    else if (a3->kind != GR_ARG_VALUE || g->values[a3->value].kind != GR_VAL_NODE || g->values[a3->value].ntuple ||
             g->values[a3->value].type.rank != S->type.rank)
        why = "has a SRC that is not a tensor the graph computes, of the state's rank";
    if (why) {
        errf(&P->L, "%s:%d: update %%%s: %%%s %s", P->L.path, u->line, S->name, V->name, why);
        return -1;
    }
    u->dim = (int)dim;
    u->index = a2->value;
    u->src = a3->value;
    return 0;
}

static int resolve_updates(parser *P)
{
    gr_graph *g = P->g;
    g->updates = calloc((size_t)P->nupd + 1, sizeof *g->updates);
    if (!g->updates) {
        oom(P);
        return -1;
    }
    for (int i = 0; i < P->nupd; i++) {
        gr_update *u = &g->updates[g->nupdates++];
        u->line = P->updlines[i];
        u->state = lookup(P, P->updnames[2 * i]);
        u->value = lookup(P, P->updnames[2 * i + 1]);
        const char *missing = u->state < 0 ? P->updnames[2 * i] : u->value < 0 ? P->updnames[2 * i + 1] : NULL;
        if (missing) {
            errf(&P->L, "%s:%d: %%%s is not defined", P->L.path, u->line, missing);
            return -1;
        }
        if (!g->values[u->state].state) {
            errf(&P->L, "%s:%d: update %%%s: not a state (declared by a state line)", P->L.path, u->line,
                 g->values[u->state].name);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (g->updates[j].state == u->state) {
                errf(&P->L, "%s:%d: update %%%s: a second update (the first is line %d)", P->L.path, u->line,
                     g->values[u->state].name, g->updates[j].line);
                return -1;
            }
        if (update_form(P, u))
            return -1;
    }
    return 0;
}

static int resolve(parser *P)
{
    gr_graph *g = P->g;
    for (int n = 0; n < g->nnodes; n++)
        for (int i = 0; i < g->nodes[n].nargs; i++)
            if (resolve_arg(P, &g->nodes[n].args[i], g->nodes[n].line))
                return -1;
    if (!P->output_line) {
        errf(&P->L, "%s: missing output line (a graph names its outputs: output %%a, %%b)", P->L.path);
        return -1;
    }
    g->outputs = malloc((size_t)g->noutputs * sizeof *g->outputs);
    if (!g->outputs) {
        oom(P);
        return -1;
    }
    for (int i = 0; i < g->noutputs; i++) {
        int v = lookup(P, P->outnames[i]);
        if (v < 0) {
            errf(&P->L, "%s:%d: %%%s is not defined", P->L.path, P->output_line, P->outnames[i]);
            return -1;
        }
        g->outputs[i] = v;
    }
    return resolve_updates(P);
}

/* ---- Topological sort ---- */

/* Call fn for every value used by arg a (lists included). */
static void each_use(const gr_arg *a, void (*fn)(void *, int), void *ctx)
{
    if (a->kind == GR_ARG_VALUE)
        fn(ctx, a->value);
    for (int i = 0; i < a->nitems; i++)
        each_use(&a->items[i], fn, ctx);
}

typedef struct {
    const gr_graph *g;
    int *indeg;   /* per node: uses of node results not yet emitted */
    int *edges;   /* CSR: users of each node */
    int *first;   /* per node: start of its users in edges */
    int *fill;
    int cur;      /* node being examined */
    int pass;     /* 0: count, 1: fill */
} topo;

static void topo_use(void *ctx, int v)
{
    topo *T = ctx;
    int prod = T->g->values[v].node;
    if (T->g->values[v].kind != GR_VAL_NODE || prod < 0)
        return;
    if (T->pass == 0) {
        T->indeg[T->cur]++;
        T->first[prod + 1]++;
    } else {
        T->edges[T->fill[prod]++] = T->cur;
    }
}

/* Min-heap of node indices (text order). */
static void heap_push(int *h, int *n, int x)
{
    int i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > x) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

static int heap_pop(int *h, int *n)
{
    int top = h[0], x = h[--(*n)], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= x)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = x;
    return top;
}

typedef struct {
    const gr_graph *g;
    const char *done;
    int found;
} first_dep;

static void first_dep_use(void *ctx, int v)
{
    first_dep *F = ctx;
    int prod = F->g->values[v].node;
    if (F->found < 0 && F->g->values[v].kind == GR_VAL_NODE && prod >= 0 && !F->done[prod])
        F->found = prod;
}

/* Report a cycle among the nodes not emitted (done[n] == 0). */
static void report_cycle(parser *P, const char *done)
{
    gr_graph *g = P->g;
    int n = g->nnodes;
    int *pos = malloc((size_t)n * sizeof *pos), *path = malloc((size_t)n * sizeof *path);
    if (!pos || !path) {
        free(pos);
        free(path);
        oom(P);
        return;
    }
    for (int i = 0; i < n; i++)
        pos[i] = -1;
    int start = 0;
    while (done[start])
        start++;
    /* Walk from user to producer until a node repeats: every node left
     * over uses a node left over, so the walk must repeat. */
    int len = 0, cur = start;
    while (pos[cur] < 0) {
        pos[cur] = len;
        path[len++] = cur;
        first_dep F = {g, done, -1};
        for (int i = 0; i < g->nodes[cur].nargs; i++)
            each_use(&g->nodes[cur].args[i], first_dep_use, &F);
        cur = F.found;
    }
    /* path[pos[cur] .. len-1] is the cycle, each using the next; data
     * flows the other way.  Print from the earliest line. */
    int c0 = pos[cur], k = len - c0, best = c0;
    for (int i = c0; i < len; i++)
        if (g->nodes[path[i]].line < g->nodes[path[best]].line)
            best = i;
    char msg[512];
    size_t o = 0;
    for (int j = 0; j <= k && o < sizeof msg; j++) {
        int idx = c0 + ((best - c0) - j % k + k) % k;
        o += (size_t)snprintf(msg + o, sizeof msg - o, "%s%%%s", j ? " -> " : "",
                              g->values[g->nodes[path[idx]].out].name);
    }
    errf(&P->L, "%s:%d: cycle: %s", P->L.path, g->nodes[path[best]].line, msg);
    free(pos);
    free(path);
}

static int topo_sort(parser *P)
{
    gr_graph *g = P->g;
    int n = g->nnodes;
    if (n <= 0)
        return 0;
    topo T = {.g = g};
    T.indeg = calloc((size_t)n, sizeof *T.indeg);
    T.first = calloc((size_t)n + 1, sizeof *T.first);
    T.fill = malloc((size_t)n * sizeof *T.fill);
    int *heap = malloc((size_t)n * sizeof *heap), *order = malloc((size_t)n * sizeof *order);
    char *done = calloc((size_t)n, 1);
    int rc = -1;
    if (!T.indeg || !T.first || !T.fill || !heap || !order || !done) {
        oom(P);
        goto out;
    }
    for (T.cur = 0; T.cur < n; T.cur++)
        for (int i = 0; i < g->nodes[T.cur].nargs; i++)
            each_use(&g->nodes[T.cur].args[i], topo_use, &T);
    for (int i = 0; i < n; i++)
        T.first[i + 1] += T.first[i];
    T.edges = malloc(((size_t)T.first[n] + 1) * sizeof *T.edges);
    if (!T.edges) {
        oom(P);
        goto out;
    }
    memcpy(T.fill, T.first, (size_t)n * sizeof *T.fill);
    T.pass = 1;
    for (T.cur = 0; T.cur < n; T.cur++)
        for (int i = 0; i < g->nodes[T.cur].nargs; i++)
            each_use(&g->nodes[T.cur].args[i], topo_use, &T);
    int nh = 0, no = 0;
    for (int i = 0; i < n; i++)
        if (!T.indeg[i])
            heap_push(heap, &nh, i);
    while (nh) {
        int x = heap_pop(heap, &nh);
        order[no++] = x;
        done[x] = 1;
        for (int e = T.first[x]; e < T.first[x + 1]; e++)
            if (--T.indeg[T.edges[e]] == 0)
                heap_push(heap, &nh, T.edges[e]);
    }
    if (no < n) {
        report_cycle(P, done);
        goto out;
    }
    gr_node *sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted) {
        oom(P);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        sorted[i] = g->nodes[order[i]];
        g->values[sorted[i].out].node = i;
    }
    free(g->nodes);
    g->nodes = sorted;
    rc = 0;
out:
    free(T.indeg);
    free(T.first);
    free(T.fill);
    free(T.edges);
    free(heap);
    free(order);
    free(done);
    return rc;
}

/* ---- Entry points ---- */

/* The base name of path without directory and extension. */
static char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *e = strrchr(b, '.');
    size_t n = e && e != b ? (size_t)(e - b) : strlen(b);
    return dupn(b, n);
}

static gr_graph *parse(const char *text, const char *path, const char *default_name, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    parser P;
    memset(&P, 0, sizeof P);
    P.L.path = path ? path : "<graph>";
    P.L.s = text ? text : "";
    P.L.line = 1;
    P.L.err = err;
    P.L.errlen = errlen;
    P.g = calloc(1, sizeof *P.g);
    if (!P.g) {
        errf(&P.L, "%s: out of memory", P.L.path);
        return NULL;
    }
    P.g->path = dupn(P.L.path, strlen(P.L.path));
    if (!P.g->path)
        oom(&P);
    int rc = P.L.failed ? -1 : parse_lines(&P);
    if (!rc)
        rc = resolve(&P);
    if (!rc)
        rc = topo_sort(&P);
    if (!rc && !P.g->name) {
        /* the default name, made a NAME so that the printed graph parses */
        char *nm = default_name ? dupn(default_name, strlen(default_name)) : path ? base_name(path) : NULL;
        size_t len = nm ? strlen(nm) : 0;
        P.g->name = malloc(len + sizeof "graph");
        if (!P.g->name) {
            oom(&P);
            rc = -1;
        } else if (!len) {
            strcpy(P.g->name, "graph");
        } else {
            char *o = P.g->name;
            if (!is_name_start((unsigned char)nm[0]))
                *o++ = '_';
            for (size_t i = 0; i < len; i++)
                *o++ = is_name_char((unsigned char)nm[i]) ? nm[i] : '_';
            *o = 0;
        }
        free(nm);
    }
    for (int i = 0; i < P.g->noutputs && P.outnames; i++)
        free(P.outnames[i]);
    free(P.outnames);
    free(P.outcols);
    for (int i = 0; i < 2 * P.nupd; i++)
        free(P.updnames[i]);
    free(P.updnames);
    free(P.updlines);
    free(P.hash);
    if (rc || P.L.failed) {
        /* Unresolved uses still hold their names in arg.s: free_arg frees them. */
        gr_graph_free(P.g);
        return NULL;
    }
    return P.g;
}

gr_graph *gr_graph_parse(const char *text, const char *path, char *err, size_t errlen)
{
    return parse(text, path, NULL, err, errlen);
}

gr_graph *gr_graph_load(const char *path, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    struct stat st;
    char *file = NULL, *dirname = NULL;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t n = strlen(path);
        while (n > 1 && path[n - 1] == '/')
            n--;
        file = malloc(n + sizeof "/graph.txt");
        if (!file) {
            snprintf(err, errlen, "%s: out of memory", path);
            return NULL;
        }
        memcpy(file, path, n);
        strcpy(file + n, "/graph.txt");
        /* the default graph name: the directory's own name */
        const char *b = path + n;
        while (b > path && b[-1] != '/')
            b--;
        dirname = dupn(b, (size_t)(path + n - b));
    } else {
        file = dupn(path, strlen(path));
    }
    if (!file) {
        free(dirname);
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    gr_graph *g = NULL;
    char *text = isa_text_read(file, ISA_TEXT_MAX, err, errlen);
    if (text)
        g = parse(text, file, dirname, err, errlen);
    free(text);
    free(file);
    free(dirname);
    return g;
}

void gr_graph_free(gr_graph *g)
{
    if (!g)
        return;
    free(g->name);
    free(g->path);
    free(g->weights);
    for (int i = 0; i < g->nvalues; i++) {
        free(g->values[i].name);
        free(g->values[i].tuple);
        free(g->values[i].param_key);
    }
    free(g->values);
    for (int n = 0; n < g->nnodes; n++) {
        free(g->nodes[n].op);
        free(g->nodes[n].base);
        for (int i = 0; i < g->nodes[n].nargs; i++)
            free_arg(&g->nodes[n].args[i]);
        free(g->nodes[n].args);
    }
    free(g->nodes);
    free(g->inputs);
    free(g->params);
    free(g->outputs);
    free(g->updates);
    for (int i = 0; i < g->nhints; i++)
        free(g->hints[i]);
    free(g->hints);
    free(g);
}

/* ---- Printing ---- */

/* The printing below puts its text together without printf or stdio: in
 * a process linked with OpenBLAS, libquadmath has registered its printf
 * hooks, and every printf call then takes glibc's slow positional path
 * (a tensor type's text cost some 6,000 instructions; the graph's text,
 * which every compile prints, 1.6% of the Llama-8B decode step's).  The
 * text grows in memory (each fputs to a stream locks and copies it). */

/* s put at buf + *o as snprintf would put it (isa_cut_put). */
static void str_put(char *buf, size_t len, size_t *o, const char *s)
{
    isa_cut_put(buf, len, o, s, strlen(s));
}

/* n strings, one after another. */
static void text_strs(strbuf *t, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        isa_sb_puts(t, va_arg(ap, const char *));
    va_end(ap);
}

size_t gr_int_text(long long v, char out[24])
{
    char d[24];
    size_t n = 0, o = 0;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do {
        d[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        out[o++] = '-';
    while (n)
        out[o++] = d[--n];
    out[o] = 0;
    return o;
}

void gr_ttype_str(const gr_ttype *t, char *buf, size_t len)
{
    if (!len)
        return;
    size_t o = 0;
    str_put(buf, len, &o, (unsigned)t->dtype < GR_NDTYPES ? gr_dtype_names[t->dtype] : "?");
    str_put(buf, len, &o, "[");
    for (int i = 0; i < t->rank && o < len; i++) {
        char d[24];
        gr_int_text((long long)t->shape[i], d);
        str_put(buf, len, &o, i ? ", " : "");
        str_put(buf, len, &o, d);
    }
    if (o < len)
        str_put(buf, len, &o, "]");
}

/* v's type appended to t: its tensor type, or its tuple's
 * "(f32[8, 64], f32[8, 1])" whole, however long. */
static void text_type(strbuf *t, const gr_value *v)
{
    char ty[256]; /* a tensor type: at most "bool[" 8 dims of 20 digits and ", " "]" */
    const int n = v->ntuple ? v->ntuple : 1;
    if (v->ntuple)
        isa_sb_chr(t, '(');
    for (int i = 0; i < n; i++) {
        gr_ttype_str(v->ntuple ? &v->tuple[i] : &v->type, ty, sizeof ty);
        text_strs(t, 2, i ? ", " : "", ty);
    }
    if (v->ntuple)
        isa_sb_chr(t, ')');
}

/* v's declared ` range=[LO, HI]`, if it has one, appended to t. */
static void text_range(strbuf *t, const gr_value *v)
{
    if (!v->ranged)
        return;
    char lo[24], hi[24];
    gr_int_text((long long)v->lo, lo);
    gr_int_text((long long)v->hi, hi);
    text_strs(t, 5, " range=[", lo, ", ", hi, "]");
}

void gr_value_type_str(const gr_value *v, char *buf, size_t len)
{
    strbuf t = {0};
    size_t o = 0;
    text_type(&t, v);
    isa_cut_put(buf, len, &o, t.buf, t.len);
    free(t.buf);
}

static void text_string(strbuf *t, const char *s)
{
    isa_sb_chr(t, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            text_strs(t, 2, "\\", (char[2]){*s, 0});
        else if (*s == '\n')
            isa_sb_put(t, "\\n", 2);
        else if (*s == '\t')
            isa_sb_put(t, "\\t", 2);
        else
            isa_sb_chr(t, *s);
    }
    isa_sb_chr(t, '"');
}

/* The shortest text that reads back as the same double, and as a float
 * (with a '.' or an exponent).  strfromd formats as snprintf's "%.*g"
 * does, without going through printf (see above). */
static void text_float(strbuf *t, double x)
{
    if (isnan(x)) {
        text_strs(t, 1, "nan");
        return;
    }
    if (isinf(x)) {
        text_strs(t, 1, x < 0 ? "-inf" : "inf");
        return;
    }
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        char fmt[32] = "%."; /* "%.<prec>g" */
        strcat(fmt + 2 + gr_int_text(prec, fmt + 2), "g");
        strfromd(buf, sizeof buf, fmt, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    if (!strpbrk(buf, ".e"))
        strcat(buf, ".0");
    text_strs(t, 1, buf);
}

static void text_arg(strbuf *t, const gr_graph *g, const gr_arg *a)
{
    char d[24];
    switch (a->kind) {
    case GR_ARG_VALUE:
        text_strs(t, 2, "%", a->value >= 0 && a->value < g->nvalues ? g->values[a->value].name : "?");
        break;
    case GR_ARG_INT:
        isa_sb_put(t, d, gr_int_text((long long)a->i, d));
        break;
    case GR_ARG_FLOAT:
        text_float(t, a->f);
        break;
    case GR_ARG_BOOL:
        text_strs(t, 1, a->i ? "True" : "False");
        break;
    case GR_ARG_NONE:
        text_strs(t, 1, "None");
        break;
    case GR_ARG_STR:
        text_string(t, a->s ? a->s : "");
        break;
    case GR_ARG_DTYPE:
        text_strs(t, 1, a->i >= 0 && a->i < GR_NDTYPES ? gr_dtype_names[a->i] : "?");
        break;
    case GR_ARG_LIST:
        isa_sb_chr(t, '[');
        for (int i = 0; i < a->nitems; i++) {
            if (i)
                isa_sb_put(t, ", ", 2);
            text_arg(t, g, &a->items[i]);
        }
        isa_sb_chr(t, ']');
        break;
    }
}

void gr_arg_print(const gr_graph *g, const gr_arg *a, FILE *f)
{
    strbuf t = {0};
    text_arg(&t, g, a);
    fwrite(t.buf, 1, t.len, f);
    free(t.buf);
}

/* Blank lines up to source line LINE (*AT the line written next), so
 * that a message naming a line of the program's graph text names the
 * line of the graph file. */
static void text_pad(strbuf *t, int *at, int line)
{
    for (; *at < line; ++*at)
        isa_sb_chr(t, '\n');
    ++*at;
}

/* The lines of nodes: "%name: type = op(args)". */
static void text_nodes(strbuf *t, const gr_graph *g, int *at)
{
    for (int n = 0; n < g->nnodes; n++) {
        const gr_node *nd = &g->nodes[n];
        const gr_value *v = &g->values[nd->out];
        text_pad(t, at, nd->line);
        text_strs(t, 3, "%", v->name, ": ");
        text_type(t, v);
        text_strs(t, 3, " = ", nd->op, "(");
        for (int i = 0; i < nd->nargs; i++) {
            if (i)
                isa_sb_put(t, ", ", 2);
            if (nd->args[i].key)
                text_strs(t, 2, nd->args[i].key, "=");
            text_arg(t, g, &nd->args[i]);
        }
        isa_sb_put(t, ")\n", 2);
    }
}

char *gr_graph_text(const gr_graph *g)
{
    strbuf t = {0};
    int at = 2;
    text_strs(&t, 3, "graph ", g->name ? g->name : "graph", "\n");
    if (g->weights) {
        at++;
        text_strs(&t, 1, "weights ");
        text_string(&t, g->weights);
        isa_sb_chr(&t, '\n');
    }
    for (int i = 0; i < g->ninputs; i++) {
        const gr_value *v = &g->values[g->inputs[i]];
        text_pad(&t, &at, v->line);
        text_strs(&t, 3, "input %", v->name, ": ");
        text_type(&t, v);
        text_range(&t, v);
        isa_sb_chr(&t, '\n');
    }
    for (int i = 0; i < g->nparams; i++) {
        const gr_value *v = &g->values[g->params[i]];
        text_pad(&t, &at, v->line);
        text_strs(&t, 3, v->state ? "state %" : "param %", v->name, ": ");
        text_type(&t, v);
        text_strs(&t, 1, " = ");
        text_string(&t, v->param_key ? v->param_key : "");
        text_range(&t, v);
        isa_sb_chr(&t, '\n');
    }
    text_nodes(&t, g, &at);
    text_strs(&t, 1, "output ");
    for (int i = 0; i < g->noutputs; i++)
        text_strs(&t, 3, i ? ", " : "", "%", g->values[g->outputs[i]].name);
    isa_sb_chr(&t, '\n');
    at++;
    for (int i = 0; i < g->nupdates; i++) {
        text_pad(&t, &at, g->updates[i].line);
        text_strs(&t, 5, "update %", g->values[g->updates[i].state].name, " = %", g->values[g->updates[i].value].name, "\n");
    }
    for (int i = 0; i < g->nhints; i++)
        text_strs(&t, 3, "hint ", g->hints[i], "\n");
    return t.buf;
}

void gr_graph_print(const gr_graph *g, FILE *f)
{
    char *s = gr_graph_text(g);
    fputs(s, f);
    free(s);
}

/* ---- Helpers ---- */

int gr_graph_find(const gr_graph *g, const char *name)
{
    if (name && name[0] == '%')
        name++;
    for (int i = 0; i < g->nvalues; i++)
        if (strcmp(g->values[i].name, name) == 0)
            return i;
    return -1;
}

void gr_tensor_name(const char *name, char buf[GR_TENSOR_NAME_MAX])
{
    size_t n = strlen(name);
    if (n < GR_TENSOR_NAME_MAX) {
        memcpy(buf, name, n + 1);
        return;
    }
    uint64_t h = 14695981039346656037u; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)name[i]) * 1099511628211u;
    snprintf(buf, GR_TENSOR_NAME_MAX, "%.46s~%016llx", name, (unsigned long long)h);
}

const char *const gr_coll_names[GR_NCOLL] = {"all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor"};

int gr_coll_of(const char *op)
{
    static const char ns[] = "_c10d_functional.";
    if (strncmp(op, ns, sizeof ns - 1))
        return -1;
    const char *base = op + sizeof ns - 1, *dot = strchr(base, '.');
    size_t n = dot ? (size_t)(dot - base) : strlen(base);
    for (int k = 0; k < GR_NCOLL; k++)
        if (strlen(gr_coll_names[k]) == n && !strncmp(base, gr_coll_names[k], n))
            return k;
    return -1;
}

int gr_graph_find_tensor(const gr_graph *g, const char *tensor)
{
    char tn[GR_TENSOR_NAME_MAX];
    for (int i = 0; i < g->nvalues; i++) {
        gr_tensor_name(g->values[i].name, tn);
        if (strcmp(tn, tensor) == 0)
            return i;
    }
    return -1;
}

int64_t gr_ttype_numel(const gr_ttype *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->shape[i];
    return n;
}

const gr_arg *gr_node_arg(const gr_node *n, int pos, const char *key)
{
    int k = 0;
    for (int i = 0; i < n->nargs; i++) {
        if (n->args[i].key) {
            if (key && strcmp(n->args[i].key, key) == 0)
                return &n->args[i];
        } else if (k++ == pos) {
            return &n->args[i];
        }
    }
    return NULL;
}

const gr_arg *gr_upsample_scale(const gr_node *n, int pos, int nd, int a)
{
    static const char *const keys[3][3] = {{"scales"}, {"scales_h", "scales_w"}, {"scales_d", "scales_h", "scales_w"}};
    const char *overload = strrchr(n->op, '.');
    if (overload && !strcmp(overload, ".vec")) {
        const gr_arg *f = gr_node_arg(n, pos, "scale_factors");
        return f && f->kind == GR_ARG_LIST && f->nitems == nd ? &f->items[a] : NULL;
    }
    return gr_node_arg(n, pos + a, keys[nd - 1][a]);
}

char *gr_graph_relpath(const gr_graph *g, const char *file)
{
    const char *slash = g->path ? strrchr(g->path, '/') : NULL;
    char *dir = slash ? dupn(g->path, (size_t)(slash - g->path)) : NULL;
    if (slash && !dir)
        abort();
    char *p = isa_path_join(dir, file);
    free(dir);
    return p;
}

int gr_arg_uses(const gr_arg *a, int v)
{
    if (a->kind == GR_ARG_VALUE && a->value == v)
        return 1;
    for (int i = 0; i < a->nitems; i++)
        if (gr_arg_uses(&a->items[i], v))
            return 1;
    return 0;
}

void gr_mark_upstream(const gr_graph *g, int v, char *mark)
{
    if (mark[v])
        return;
    mark[v] = 1;
    if (g->values[v].kind != GR_VAL_NODE)
        return;
    const gr_node *n = &g->nodes[g->values[v].node];
    for (int i = 0; i < n->nargs; i++) {
        const gr_arg *a = &n->args[i];
        for (int j = 0; j < (a->kind == GR_ARG_LIST ? a->nitems : 1); j++) {
            const gr_arg *x = a->kind == GR_ARG_LIST ? &a->items[j] : a;
            if (x->kind == GR_ARG_VALUE)
                gr_mark_upstream(g, x->value, mark);
        }
    }
}

int gr_arg_ints(const gr_arg *a, int64_t *out)
{
    if (!a || a->kind == GR_ARG_NONE)
        return -1;
    if (a->kind == GR_ARG_INT) {
        out[0] = a->i;
        return 1;
    }
    if (a->kind != GR_ARG_LIST || a->nitems > GR_MAX_RANK)
        return -2;
    for (int i = 0; i < a->nitems; i++) {
        if (a->items[i].kind != GR_ARG_INT)
            return -2;
        out[i] = a->items[i].i;
    }
    return a->nitems;
}
