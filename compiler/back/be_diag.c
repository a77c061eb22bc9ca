/* be_diag.c: the back half's diagnostics: errors naming the kernel, and
 * the notes the kernel planners leave for the report (be_diag.h). */
#include "be_diag.h"
#include "strbuf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int be_error(be_ctx *c, const ir_kernel *K, const char *fmt, ...)
{
    if (!c->err || !c->errlen || c->err[0])
        return -1;
    /* What the back half cannot do yet is for the host fallback; a
     * work_div the user gave and the compiler's own bugs are not. */
    if (K && strncmp(fmt, "work_div", 8) && strncmp(fmt, "internal", 8))
        *(c->fail_kernel ? c->fail_kernel : &c->p->fail_kernel) = (int)(K - c->p->kernels);
    /* the project's one formatter: the context, then the message appended */
    isa_errf(c->err, c->errlen, "%s%s%s", K ? "kernel " : "", K ? K->name : "", K ? ": " : "");
    va_list ap;
    va_start(ap, fmt);
    isa_verrf_cat(c->err, c->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- The notes' text without printf ----
 * In a process linked with OpenBLAS, libquadmath's printf hooks send every
 * printf call down glibc's slow positional path (graph/graph.c): the plans'
 * notes, made for every plan, were 1% of the Llama-8B decode step's
 * compile.  The conversions they use (%s, %d, %ld, %lld, %.0f of a double
 * below 2^53, %%) are put together here, as vsnprintf would put them; a
 * format with any other goes to vsnprintf. */

typedef struct {
    char *d;
    size_t cap, o; /* o: the text's length whole, as vsnprintf counts it */
} fmt_out;

static void fmt_put(fmt_out *w, const char *s, size_t n)
{
    isa_cut_put(w->d, w->cap, &w->o, s, n);
}

/* The next conversion of fmt (at the '%') put, fmt moved past it; 0 one
 * this does not know. */
static int fmt_conv(fmt_out *w, const char **fmt, va_list *ap)
{
    const char *f = *fmt + 1;
    char num[32];
    if (*f == '%') {
        fmt_put(w, "%", 1);
    } else if (*f == 's') {
        const char *s = va_arg(*ap, const char *);
        fmt_put(w, s, strlen(s));
    } else if (*f == 'd') {
        fmt_put(w, num, gr_int_text(va_arg(*ap, int), num));
    } else if (f[0] == 'l' && f[1] == 'd') {
        fmt_put(w, num, gr_int_text(va_arg(*ap, long), num));
        f++;
    } else if (f[0] == 'l' && f[1] == 'l' && f[2] == 'd') {
        fmt_put(w, num, gr_int_text(va_arg(*ap, long long), num));
        f += 2;
    } else if (f[0] == '.' && f[1] == '0' && f[2] == 'f') {
        /* rounded as printf rounds, in the rounding mode (ties to even) */
        const double r = nearbyint(va_arg(*ap, double));
        if (!(fabs(r) < 9007199254740992.0))
            return 0;
        if (r == 0 && signbit(r))
            fmt_put(w, "-0", 2);
        else
            fmt_put(w, num, gr_int_text((long long)r, num));
        f += 2;
    } else {
        return 0;
    }
    *fmt = f + 1;
    return 1;
}

void be_vfmt(char *dst, size_t cap, const char *fmt, va_list ap)
{
    fmt_out w = {dst, cap, 0};
    va_list a;
    va_copy(a, ap);
    for (const char *f = fmt; *f;) {
        const char *pct = strchr(f, '%');
        const size_t n = pct ? (size_t)(pct - f) : strlen(f);
        fmt_put(&w, f, n);
        f += n;
        if (*f && !fmt_conv(&w, &f, &a)) {
            va_end(a);
            vsnprintf(dst, cap, fmt, ap);
            return;
        }
    }
    va_end(a);
    if (cap)
        dst[w.o < cap ? w.o : cap - 1] = 0;
}

void be_fmt(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    be_vfmt(dst, cap, fmt, ap);
    va_end(ap);
}

void be_note(be_ctx *c, int pos, int what, const char *fmt, ...)
{
    be_kinfo *ki = &state_of(c)->k[pos];
    if (what == BE_NOTE_TILES) { /* a kernel planned again (align_rows) notes its operands again */
        ki->restick[0] = 0;
        ki->nrestick = 0;
    }
    char *dst = what == BE_NOTE_TILES ? ki->tiles : what == BE_NOTE_RESTICK ? ki->restick : ki->lxread;
    size_t cap = what == BE_NOTE_TILES ? sizeof ki->tiles : sizeof ki->restick, o = 0;
    if (what != BE_NOTE_TILES) {
        o = strlen(dst);
        if (o && o + 2 < cap) {
            memcpy(dst + o, ", ", 3);
            o += 2;
        }
        *(what == BE_NOTE_RESTICK ? &ki->nrestick : &ki->nlxread) += 1;
    }
    if (o >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    be_vfmt(dst + o, cap - o, fmt, ap);
    va_end(ap);
}
