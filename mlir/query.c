/* mlir queries: what dialect readers ask of a parsed op (attributes,
 * keywords, regions, types) and affine expression evaluation. */
#include <string.h>
#include "mlir.h"

const ml_attr *ml_resolve(const ml_module *m, const ml_attr *a)
{
    for (int hops = 0; a && a->kind == ML_A_ALIAS && hops < 16; hops++) {
        const ml_attr *next = NULL;
        for (int i = 0; i < m->naliases; i++)
            if (strcmp(m->alias_names[i], a->s) == 0) next = m->alias_values[i];
        if (!next) return a;
        a = next;
    }
    return a;
}

const ml_attr *ml_op_attr(const ml_module *m, const ml_op *op, const char *key)
{
    for (int i = 0; i < op->n; i++) {
        const ml_item *it = &op->items[i];
        if (it->kind == ML_I_ATTR && it->attr->kind == ML_A_DICT) {
            for (int k = 0; k < it->attr->n; k++)
                if (strcmp(it->attr->keys[k], key) == 0) return ml_resolve(m, it->attr->items[k]);
        }
        if (it->kind == ML_I_WORD && strcmp(it->s, key) == 0 && i + 2 < op->n && op->items[i + 1].kind == ML_I_PUNCT &&
            (op->items[i + 1].s[0] == '=' || op->items[i + 1].s[0] == ':') && op->items[i + 2].kind == ML_I_ATTR)
            return ml_resolve(m, op->items[i + 2].attr);
    }
    return NULL;
}

const ml_item *ml_op_keyword(const ml_op *op, const char *key)
{
    for (int i = 0; i + 1 < op->n; i++) {
        if (op->items[i].kind != ML_I_WORD || strcmp(op->items[i].s, key) != 0) continue;
        int j = i + 1;
        if (op->items[j].kind == ML_I_PUNCT && (op->items[j].s[0] == ':' || op->items[j].s[0] == '=')) j++;
        return j < op->n ? &op->items[j] : NULL;
    }
    return NULL;
}

const ml_region *ml_op_region(const ml_op *op, int *from)
{
    for (int i = *from; i < op->n; i++)
        if (op->items[i].kind == ML_I_REGION) {
            *from = i + 1;
            return op->items[i].region;
        }
    return NULL;
}

const ml_type *ml_op_last_type(const ml_op *op)
{
    for (int i = op->n - 1; i >= 0; i--)
        if (op->items[i].kind == ML_I_TYPE) return op->items[i].type;
    return NULL;
}

static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int ml_aexpr_eval(const ml_aexpr *e, const int64_t *d, const int64_t *s, int64_t *out)
{
    int64_t l, r;
    switch (e->kind) {
    case ML_AE_CONST: *out = e->v; return 0;
    case ML_AE_DIM: *out = d[e->v]; return 0;
    case ML_AE_SYM: *out = s[e->v]; return 0;
    default: break;
    }
    if (ml_aexpr_eval(e->l, d, s, &l) || ml_aexpr_eval(e->r, d, s, &r)) return -1;
    switch (e->kind) {
    case ML_AE_ADD: return __builtin_add_overflow(l, r, out) ? -1 : 0;
    case ML_AE_MUL: return __builtin_mul_overflow(l, r, out) ? -1 : 0;
    default: break;
    }
    if (r == 0 || ((l == INT64_MIN) && (r == -1 || e->kind == ML_AE_CEILDIV))) return -1;
    if (e->kind == ML_AE_FLOORDIV) *out = floordiv(l, r);
    else if (e->kind == ML_AE_CEILDIV) *out = -floordiv(-l, r);
    else *out = l - floordiv(l, r) * r; /* mod: the sign of the divisor, as MLIR */
    return 0;
}

int64_t ml_type_elems(const ml_type *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (t->shape[i] == ML_DYN || t->shape[i] < 0 || __builtin_mul_overflow(n, t->shape[i], &n)) return -1;
    return n;
}
