/* iexpr.c: the subscripts of an access tile, RFC 0682's affine (or
 * quasi-affine) expressions of index values known at compile time:
 * `%a + %b * 2`, `%t / 64`, `%t % 64`, parentheses.  `/` is floordiv and
 * `%` a modulus in [0, divisor), as affine maps define them. */
#include "internal.h"

typedef struct {
    kt_ctx *c;
    const ml_item *it, *where; /* where: for a message when there is no item (an empty group) */
    int i, n;
} kt_ix;

static int is_punct(const kt_ix *x, char ch)
{
    return x->i < x->n && x->it[x->i].kind == ML_I_PUNCT && x->it[x->i].s[0] == ch && !x->it[x->i].s[1];
}

static _Noreturn void ix_fail(const kt_ix *x, int i, const char *what)
{
    const ml_item *at = x->n ? &x->it[i < x->n ? i : x->n - 1] : x->where;
    kt_fail(x->c, KT_EXIT_REFUSED, at->line, at->col, "an access tile's subscript: %s", what);
}

static int64_t ix_sum(kt_ix *x);

static int64_t ix_atom(kt_ix *x)
{
    if (x->i >= x->n) ix_fail(x, x->i, "an operand is missing");
    const ml_item *a = &x->it[x->i];
    if (is_punct(x, '-')) {
        x->i++;
        return -ix_atom(x);
    }
    x->i++;
    if (a->kind == ML_I_ATTR && a->attr->kind == ML_A_INT) return a->attr->i;
    if (a->kind == ML_I_GROUP) {
        kt_ix in = {x->c, a->items, a, 0, a->n};
        int64_t v = ix_sum(&in);
        if (in.i != in.n) ix_fail(&in, in.i, "expected `)`");
        return v;
    }
    if (a->kind != ML_I_VALUE) ix_fail(x, x->i - 1, "expected an index value or an integer");
    return kt_int_of(x->c, a);
}

static int64_t ix_product(kt_ix *x)
{
    int64_t v = ix_atom(x);
    while (is_punct(x, '*') || is_punct(x, '/') || is_punct(x, '%')) {
        char o = x->it[x->i++].s[0];
        int at = x->i;
        int64_t w = ix_atom(x);
        if (o == '*') {
            if (__builtin_mul_overflow(v, w, &v)) ix_fail(x, at, "the product overflows");
            continue;
        }
        if (w <= 0) ix_fail(x, at, "a divisor that is not positive");
        int64_t q = v / w, m = v % w;
        if (m < 0) q--, m += w;
        v = o == '/' ? q : m;
    }
    return v;
}

/* The parser reads `- 32` as the integer -32: a term of its own. */
static int neg_int(const kt_ix *x)
{
    const ml_item *a = &x->it[x->i];
    return x->i < x->n && a->kind == ML_I_ATTR && a->attr->kind == ML_A_INT && a->attr->i < 0;
}

static int64_t ix_sum(kt_ix *x)
{
    int64_t v = ix_product(x);
    while (is_punct(x, '+') || is_punct(x, '-') || neg_int(x)) {
        int at = x->i;
        char o = neg_int(x) ? '+' : x->it[x->i++].s[0];
        int64_t w = ix_product(x);
        if (o == '+' ? __builtin_add_overflow(v, w, &v) : __builtin_sub_overflow(v, w, &v)) ix_fail(x, at, "the sum overflows");
    }
    return v;
}

int kt_index_list(kt_ctx *c, const ml_item *list, int64_t *out, int max)
{
    int n = 0;
    for (int a = 0; a < list->n; a++) {
        int b = a;
        while (b < list->n && !(list->items[b].kind == ML_I_PUNCT && list->items[b].s[0] == ',')) b++;
        if (n == max) kt_fail(c, KT_EXIT_REFUSED, list->line, list->col, "more than %d subscripts", max);
        kt_ix x = {c, list->items + a, list, 0, b - a};
        if (b == a) ix_fail(&x, 0, "an empty subscript");
        out[n++] = ix_sum(&x);
        if (x.i != x.n) ix_fail(&x, x.i, "expected `,` or `]`");
        a = b;
    }
    return n;
}
