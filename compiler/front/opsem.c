/* opsem.c: what each elementwise op computes, the one table of it (and
 * the IR operator lower.c makes of its ATen op), in each domain the
 * compiler evaluates ops in: exact int64 as PyTorch's
 * integer op (dec_affine.c's constant indices), double (be_sfp.c's
 * constant fold; intexact.c rounds each result to fp32) and intervals
 * (intexact.c's ranges).  A domain an op has no function for is one
 * its callers do not evaluate it in. */
#include "ir.h"

#include <math.h>

/* ---- int64, as PyTorch: 0 (no value) where int64 wraps or PyTorch raises ---- */

static int i_neg(int64_t a, int64_t b, int64_t *r) { return (void)b, !__builtin_sub_overflow(0, a, r); }
static int i_add(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
static int i_sub(int64_t a, int64_t b, int64_t *r) { return !__builtin_sub_overflow(a, b, r); }
static int i_mul(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static int i_max(int64_t a, int64_t b, int64_t *r) { return *r = a > b ? a : b, 1; }
static int i_min(int64_t a, int64_t b, int64_t *r) { return *r = a < b ? a : b, 1; }

/* Rounded toward -infinity (PyTorch >= 1.13); a zero divisor and
 * INT64_MIN / -1 raise (SIGFPE in PyTorch 1.13). */
static int i_floordiv(int64_t a, int64_t b, int64_t *r)
{
    if (!b || (a == INT64_MIN && b == -1))
        return 0;
    *r = a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
    return 1;
}

/* The remainder with the divisor's sign (Python's %); a zero divisor and
 * INT64_MIN % -1 raise, as floor_divide's. */
static int i_remainder(int64_t a, int64_t b, int64_t *r)
{
    if (!b || (a == INT64_MIN && b == -1))
        return 0;
    int64_t m = a % b;
    *r = m && (m < 0) != (b < 0) ? m + b : m;
    return 1;
}

/* ---- double ---- */

#define D1(name, expr) \
    static double name(double a, double b) { return (void)b, (expr); }
#define D2(name, expr) \
    static double name(double a, double b) { return (expr); }
D1(d_neg, -a)
D1(d_exp, exp(a))
D1(d_log, log(a))
D1(d_sqrt, sqrt(a))
D1(d_rsqrt, 1 / sqrt(a))
D1(d_recip, 1 / a)
D1(d_tanh, tanh(a))
D1(d_sigmoid, 1 / (1 + exp(-a)))
D1(d_erf, erf(a))
D1(d_relu, a != a || a > 0 ? a : 0) /* NaN stays NaN, as PyTorch's relu and the SFP's */
D1(d_sin, sin(a))
D1(d_cos, cos(a))
D1(d_abs, fabs(a))
D1(d_not, a == 0)
D2(d_add, a + b)
D2(d_sub, a - b)
D2(d_mul, a * b)
D2(d_div, a / b)
D2(d_max, isnan(a) || a > b ? a : b) /* a NaN either side propagates, as the SFP's and PyTorch's */
D2(d_min, isnan(a) || a < b ? a : b)
D2(d_pow, pow(a, b))
D2(d_eq, a == b)
D2(d_ne, a != b)
D2(d_lt, a < b)
D2(d_le, a <= b)
D2(d_gt, a > b)
D2(d_ge, a >= b)
D2(d_and, a != 0 && b != 0)
D2(d_or, a != 0 || b != 0)

/* ---- fp32, where PyTorch's CPU kernel rounds more than once (its
 * vectorized and scalar paths alike): the double result rounded once
 * would differ by an ulp or two ---- */

static float f_rsqrt(float a, float b) { return (void)b, 1.0f / sqrtf(a); }
static float f_sigmoid(float a, float b) { return (void)b, 1.0f / (1.0f + expf(-a)); }

/* ---- intervals: every value the op may give over a's and b's ---- */

static ir_ival v_neg(ir_ival a, ir_ival b) { return (void)b, (ir_ival){fmin(-a.lo, -a.hi), fmax(-a.lo, -a.hi)}; }
static ir_ival v_abs(ir_ival a, ir_ival b)
{
    return (void)b, (ir_ival){a.lo > 0 ? a.lo : a.hi < 0 ? -a.hi : 0, fmax(fabs(a.lo), fabs(a.hi))};
}
static ir_ival v_relu(ir_ival a, ir_ival b) { return (void)b, (ir_ival){fmax(a.lo, 0), fmax(a.hi, 0)}; }
static ir_ival v_add(ir_ival a, ir_ival b) { return (ir_ival){a.lo + b.lo, a.hi + b.hi}; }
static ir_ival v_sub(ir_ival a, ir_ival b) { return (ir_ival){a.lo - b.hi, a.hi - b.lo}; }
static ir_ival v_max(ir_ival a, ir_ival b) { return (ir_ival){fmax(a.lo, b.lo), fmax(a.hi, b.hi)}; }
static ir_ival v_min(ir_ival a, ir_ival b) { return (ir_ival){fmin(a.lo, b.lo), fmin(a.hi, b.hi)}; }

static ir_ival v_mul(ir_ival a, ir_ival b)
{
    double c[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
    ir_ival r = {INFINITY, -INFINITY};
    for (int i = 0; i < 4; i++) {
        double v = isnan(c[i]) ? 0 : c[i]; /* 0 times an infinity: an exact zero */
        r.lo = fmin(r.lo, v);
        r.hi = fmax(r.hi, v);
    }
    return r;
}

/* ---- The table ---- */

enum { A = IR_SEM_ALPHA, S = IR_SEM_SWAP, L = IR_SEM_LIBM };

/* Each IR operator's row: ATen name, flags, int64, double, fp32, interval.  An
 * operator added to IR_OPS without one here does not compile. */
#define SEM_NEG "neg", 0, i_neg, d_neg, NULL, v_neg
#define SEM_EXP "exp", L, NULL, d_exp, NULL, NULL
#define SEM_LOG "log", L, NULL, d_log, NULL, NULL
#define SEM_SQRT "sqrt", 0, NULL, d_sqrt, NULL, NULL
#define SEM_RSQRT "rsqrt", 0, NULL, d_rsqrt, f_rsqrt, NULL
#define SEM_RECIP "reciprocal", 0, NULL, d_recip, NULL, NULL
#define SEM_TANH "tanh", L, NULL, d_tanh, NULL, NULL
#define SEM_SIGMOID "sigmoid", L, NULL, d_sigmoid, f_sigmoid, NULL
#define SEM_ERF "erf", L, NULL, d_erf, NULL, NULL
#define SEM_RELU "relu", 0, NULL, d_relu, NULL, v_relu
#define SEM_SIN "sin", L, NULL, d_sin, NULL, NULL
#define SEM_COS "cos", L, NULL, d_cos, NULL, NULL
#define SEM_ABS "abs", 0, NULL, d_abs, NULL, v_abs
#define SEM_NOT "logical_not", 0, NULL, d_not, NULL, NULL
#define SEM_ADD "add", A, i_add, d_add, NULL, v_add
#define SEM_SUB "sub", A, i_sub, d_sub, NULL, v_sub
#define SEM_MUL "mul", 0, i_mul, d_mul, NULL, v_mul
#define SEM_DIV "div", 0, NULL, d_div, NULL, NULL
#define SEM_MAX "maximum", 0, i_max, d_max, NULL, v_max
#define SEM_MIN "minimum", 0, i_min, d_min, NULL, v_min
#define SEM_POW "pow", L, NULL, d_pow, NULL, NULL
#define SEM_EQ "eq", 0, NULL, d_eq, NULL, NULL
#define SEM_NE "ne", 0, NULL, d_ne, NULL, NULL
#define SEM_LT "lt", 0, NULL, d_lt, NULL, NULL
#define SEM_LE "le", 0, NULL, d_le, NULL, NULL
#define SEM_GT "gt", 0, NULL, d_gt, NULL, NULL
#define SEM_GE "ge", 0, NULL, d_ge, NULL, NULL
#define SEM_AND "logical_and", 0, NULL, d_and, NULL, NULL
#define SEM_OR "logical_or", 0, NULL, d_or, NULL, NULL

/* The IR operators' rows at their ir_op (lower.c makes the ATen op that
 * operator), then ATen ops lowered to another's (clamp_min, clamp_max:
 * max, min) or decomposed. */
static const ir_opsem OPSEM[] = {
#define X(name, arity, text, prec) [IR_##name] = {SEM_##name, arity, IR_##name},
    IR_OPS(X)
#undef X
    {"clamp_min", 0, i_max, d_max, NULL, v_max, 2, IR_MAX},
    {"clamp_max", 0, i_min, d_min, NULL, v_min, 2, IR_MIN},
    {"rsub", A | S, i_sub, d_sub, NULL, v_sub, 2, -1}, /* other - alpha * self */
    {"floor_divide", 0, i_floordiv, NULL, NULL, NULL, 2, -1},
    {"remainder", 0, i_remainder, NULL, NULL, NULL, 2, -1},
};

const ir_opsem *ir_opsem_ir(ir_op op) { return &OPSEM[op]; }

const ir_opsem *ir_opsem_aten(const char *base)
{
    for (size_t i = 0; i < sizeof OPSEM / sizeof *OPSEM; i++)
        if (!strcmp(OPSEM[i].aten, base))
            return &OPSEM[i];
    return NULL;
}

int ir_opsem_i64(const ir_opsem *s, int64_t self, int64_t other, int64_t alpha, int64_t *r)
{
    if (s->flags & IR_SEM_SWAP) {
        const int64_t t = self;
        self = other;
        other = t;
    }
    if ((s->flags & IR_SEM_ALPHA) && !i_mul(alpha, other, &other))
        return 0;
    return s->i64(self, other, r);
}

ir_ival ir_opsem_iv(const ir_opsem *s, ir_ival self, ir_ival other, ir_ival alpha)
{
    if (s->flags & IR_SEM_SWAP) {
        const ir_ival t = self;
        self = other;
        other = t;
    }
    if (s->flags & IR_SEM_ALPHA)
        other = v_mul(alpha, other);
    return s->iv(self, other);
}
