/* be_diag.c: the back half's diagnostics: errors naming the kernel, and
 * the notes the kernel planners leave for the report (be_diag.h). */
#include "be_diag.h"

#include <stdarg.h>
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
        if (o && o + 2 < cap)
            o += (size_t)snprintf(dst + o, cap - o, ", ");
        *(what == BE_NOTE_RESTICK ? &ki->nrestick : &ki->nlxread) += 1;
    }
    if (o >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + o, cap - o, fmt, ap);
    va_end(ap);
}
