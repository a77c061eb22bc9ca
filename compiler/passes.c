/* passes.c: the compiler's one pass table, both halves in order, the
 * loop that runs a half of it (or a stretch of it) with the dump after
 * any pass, and cc_codegen, the back half on its own, or in two parts:
 * the plan, then codegen (docs/compiler.md, "Pipeline"). */
#include "backend.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The rows: name, what runs it, what prints the IR after it.  The front
 * half runs for every compile, the back half only for a target chip. */
#define FRONT_PASSES(X)                                                                                                \
    X(decompose, decompose, front_dump)                                                                                \
    X(lower, ir_lower, front_dump)                                                                                     \
    X(deps, ir_deps, front_dump)                                                                                       \
    X(dce, ir_dce, front_dump)                                                                                         \
    X(fuse_siblings, fuse_siblings, front_dump)                                                                        \
    X(fuse_vertical, fuse_vertical, front_dump)                                                                        \
    X(fuse_reduction, fuse_reduction, front_dump)                                                                      \
    X(fuse_epilogue, fuse_epilogue, front_dump)                                                                        \
    X(fuse_horizontal, fuse_horizontal, front_dump)                                                                    \
    X(order, ir_order, front_dump)                                                                                     \
    X(lastuse, ir_lastuse, front_dump)
#define BACK_PASSES(X)                                                                                                 \
    X(layout, layout, be_print)                                                                                        \
    X(workdiv, be_workdiv_pass, be_print)                                                                              \
    X(lxplan, be_lxplan_pass, be_lxplan_print)                                                                         \
    X(codegen, be_codegen_pass, be_print)                                                                              \
    X(reroll, be_reroll_pass, be_reroll_print)

static int decompose(ir_prog *p)
{
    return ir_decompose(p, p->graph);
}

/* Without LX planning nothing is fused: no intermediate stays on chip. */
static int fuse_vertical(ir_prog *p)
{
    return p->opts.no_lx_plan ? 0 : ir_fuse_vertical(p);
}

static int fuse_siblings(ir_prog *p)
{
    return p->opts.no_lx_plan || p->opts.siblings == CC_SIBLINGS_NEVER ? 0 : ir_fuse_siblings(p);
}

static int fuse_reduction(ir_prog *p)
{
    return p->opts.no_lx_plan ? 0 : ir_fuse_reduction(p);
}

static int fuse_epilogue(ir_prog *p)
{
    return p->opts.no_lx_plan ? 0 : ir_fuse_epilogue(p);
}

static int fuse_horizontal(ir_prog *p)
{
    return p->opts.no_lx_plan ? 0 : ir_fuse_horizontal(p);
}

static void front_dump(const ir_prog *p, const char *name, FILE *f)
{
    (void)name; /* ir_print heads the dump with p->stage */
    ir_print(p, f);
}

static int layout(ir_prog *p)
{
    return be_layout_pass(p, p->chip);
}

typedef struct {
    const char *name;
    int (*run)(ir_prog *p);
    void (*dump)(const ir_prog *p, const char *name, FILE *f);
    int back; /* the back half: runs only for a target chip */
} ir_pass;

#define FRONT_ROW(n, run, dump) {#n, run, dump, 0},
#define BACK_ROW(n, run, dump) {#n, run, dump, 1},
#define NAME(n, run, dump) #n,

static const ir_pass passes[] = {FRONT_PASSES(FRONT_ROW) BACK_PASSES(BACK_ROW)};
static const char *const front_names[] = {FRONT_PASSES(NAME) NULL};
static const char *const back_names[] = {BACK_PASSES(NAME) NULL};

const char *const *cc_pass_names(void)
{
    return front_names;
}

const char *const *cc_backend_pass_names(void)
{
    return back_names;
}

int ir_pass_check(const char *name, int target, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof passes / sizeof *passes; i++)
        if ((target || !passes[i].back) && !strcmp(passes[i].name, name))
            return 0;
    size_t o = (size_t)snprintf(err, errlen, "unknown pass \"%s\" (the passes are", name);
    for (size_t i = 0; i < sizeof passes / sizeof *passes && o < errlen; i++)
        if (target || !passes[i].back)
            o += (size_t)snprintf(err + o, errlen - o, "%s %s", i ? "," : "", passes[i].name);
    if (o < errlen)
        snprintf(err + o, errlen - o, ")");
    return -1;
}

/* A monotonic clock in seconds, for --time-passes. */
static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int ir_run_passes(ir_prog *p, int back, const char *from, const char *until)
{
    int on = !from;
    for (size_t i = 0; i < sizeof passes / sizeof *passes; i++) {
        const ir_pass *ps = &passes[i];
        if (ps->back != back)
            continue;
        on |= from && !strcmp(ps->name, from);
        if (until && !strcmp(ps->name, until))
            break;
        if (!on)
            continue;
        const double t0 = p->opts.time_passes ? seconds_now() : 0;
        const int rc = ps->run(p);
        if (p->opts.time_passes)
            fprintf(p->opts.time_passes, "pass %s %.3f ms\n", ps->name, (seconds_now() - t0) * 1e3);
        if (rc)
            return -1;
        p->stage = ps->name;
        if (p->opts.dump_after && !strcmp(p->opts.dump_after, ps->name))
            ps->dump(p, ps->name, p->opts.dump ? p->opts.dump : stderr);
    }
    return 0;
}

/* The back half's passes from..until (ir_run_passes) for chip cfg, their
 * errors into err: 0, or -1 when one failed. */
static int run_back(ir_prog *p, const chip_config *cfg, const char *from, const char *until, char *err,
                    size_t errlen)
{
    if (errlen)
        err[0] = 0;
    char *oerr = p->err;
    size_t olen = p->errlen;
    p->err = err;
    p->errlen = errlen;
    p->chip = cfg;
    if (p->be) { /* planned by an earlier call with another buffer */
        p->be->err = err;
        p->be->errlen = errlen;
    }
    const int rc = ir_run_passes(p, 1, from, until);
    p->chip = NULL;
    p->err = oerr;
    p->errlen = olen;
    return rc;
}

/* After codegen: the program, handed over; the plan stays for the
 * report, the emitters and the caller's error buffer are no longer ours.
 * NULL (and no plan) when the passes failed. */
static isa_program *take_program(ir_prog *p, int failed)
{
    if (failed) {
        be_free(p);
        return NULL;
    }
    isa_program *out = p->be->prog;
    p->be->prog = NULL;
    be_reroll_scratch_free(p->be);
    isa_arena_trim(out->arena); /* (a span cache cc_compile's attempts share is trimmed at its end) */
    free(p->be->em);
    p->be->em = NULL;
    p->be->err = NULL;
    p->be->errlen = 0;
    p->be->cfg = NULL;
    p->be->t.cfg = NULL;
    return out;
}

/* The back half on its own: cc.h. */
isa_program *cc_codegen(const cc_result *r, const chip_config *cfg, char *err, size_t errlen)
{
    ir_prog *p = (ir_prog *)r;
    return take_program(p, run_back(p, cfg, NULL, NULL, err, errlen));
}

int ir_back_plan(ir_prog *p, const chip_config *cfg, char *err, size_t errlen)
{
    if (!run_back(p, cfg, NULL, "codegen", err, errlen))
        return 0;
    be_free(p);
    return -1;
}

isa_program *ir_back_finish(ir_prog *p, const chip_config *cfg, char *err, size_t errlen)
{
    return take_program(p, run_back(p, cfg, "codegen", NULL, err, errlen));
}
