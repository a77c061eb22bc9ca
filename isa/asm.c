/* asm.c: the assembler (text -> isa_program) and the disassembler
 * (isa_program -> the same text).  The syntax, line by line:
 *
 *   # or ; starts a comment (except on a .graph line); blank lines and
 *   leading whitespace are ignored
 *   .config NAME [ncores=N] [lx=BYTES] [stick=BYTES]
 *   .core N                   following instructions go to core N
 *   .kernel NAME [rec=N]      the next instructions of this .core block
 *                             form kernel NAME, up to the next .kernel,
 *                             .endkernel or the end of the block; rec=:
 *                             its place in the program's kernel records
 *                             (every .kernel gives one or none does: then
 *                             the records are in text order)
 *   .endkernel                end the open kernel here
 *   .tensor NAME ROLE HOSTDTYPE DIMS [dev=dl16|f32] [at=OFFSET]
 *           [stick=DIM] [bytes=BYTES] [const=OFFSET]
 *   .dram BYTES               size of the program's DRAM segment
 *   .weights BYTES            size of its weights region, [0, BYTES)
 *   .const HEX                append bytes to the constant data
 *   .graph TEXT               append the line TEXT to the graph text
 *   MNEMONIC NAME=VALUE ...   one instruction (isa_parse_insn)
 *
 * The disassembler prints directives first, then each non-empty core, with
 * loop bodies indented and .kernel / .endkernel around each kernel's
 * instructions, so that assembling its output gives the program back.  docs/isa.md describes the syntax for users. */
#include "isa.h"
#include "strbuf.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ASM_DEFAULT_CONFIG "spyre"
#define ASM_DEFAULT_NCORES 32
#define ASM_DEFAULT_LX 2097152u
#define ASM_DEFAULT_STICK 128u
#define ASM_TENSOR_ALIGN 128u  /* default placement of a tensor without at= */
#define ASM_MAX_CORES 256      /* the ring's core operand has 8 bits */
#define ASM_LINE_MAX 4096
#define ASM_CONST_PER_LINE 32  /* bytes per .const line in the disassembly */
#define ASM_INDENT 2

/* ---- a growing string ---- */

static void sb_printf(strbuf *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    isa_sb_grow(s, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(s->buf + s->len, s->cap - s->len, fmt, ap);
    va_end(ap);
    s->len += (size_t)n;
}

/* ---- assembler ---- */

typedef struct {
    const char *file;
    int line;
    char *err;
    size_t errlen;
    /* .config, until the first .core or .tensor creates the program */
    char config[ISA_NAME_MAX];
    int ncores;
    uint64_t lx;
    uint32_t stick;
    int config_line;
    isa_program *p;
    int core;              /* current .core, -1 before the first */
    uint64_t dram;
    int dram_line;         /* 0: no .dram, the tensors decide */
    uint64_t weights;
    int weights_line;      /* 0: no .weights, no weights region */
    int *tensor_line;      /* line of each .tensor, for late errors */
    strbuf consts, graph;
    int have_graph;
    /* the open .kernel of the current .core block, if any */
    int kernel_open;
    char kernel_name[ISA_NAME_MAX];
    size_t kernel_first;   /* its first instruction */
    int kernel_line;
    long kernel_rec;       /* its rec=, -1 without */
    /* each kernel record's rec= (-1 without) and .kernel line, in text order */
    struct asm_krec {
        long rec;
        int line;
    } *krec;
    int nkrec, krec_cap;
} assembler;

static int fail(assembler *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    isa_errf(a->err, a->errlen, "%s:%d: ", a->file, a->line);
    isa_verrf_cat(a->err, a->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* A whole token as an unsigned number (decimal, 0x hex or 0 octal). */
static int parse_u64(const char *s, uint64_t *out)
{
    if (!isdigit((unsigned char)s[0]))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_bounded(assembler *a, const char *what, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (parse_u64(s, out))
        return fail(a, "%s: '%s' is not a number", what, s);
    if (*out < lo || *out > hi)
        return fail(a, "%s %" PRIu64 " out of range [%" PRIu64 ", %" PRIu64 "]", what, *out, lo, hi);
    return 0;
}

/* Split s in place into whitespace-separated tokens. */
static int tokenize(char *s, char **tok, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(s, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        if (n == max)
            return max + 1;
        tok[n++] = t;
    }
    return n;
}

/* The program, created at the first directive that needs the configuration. */
static isa_program *program(assembler *a)
{
    if (a->p)
        return a->p;
    a->p = isa_program_new(a->ncores);
    if (!a->p) {
        fprintf(stderr, "spyre: out of memory\n");
        abort();
    }
    snprintf(a->p->config, sizeof a->p->config, "%s", a->config);
    a->p->lx_bytes = a->lx;
    a->p->stick_bytes = a->stick;
    return a->p;
}

static int dir_config(assembler *a, char **tok, int n)
{
    if (a->config_line)
        return fail(a, ".config given twice (first on line %d)", a->config_line);
    if (a->p)
        return fail(a, ".config must come before .core and .tensor");
    if (n < 2)
        return fail(a, ".config needs a name: .config NAME [ncores=N] [lx=BYTES] [stick=BYTES]");
    if (strchr(tok[1], '='))
        return fail(a, ".config: expected a configuration name before '%s'", tok[1]);
    if (strlen(tok[1]) >= ISA_NAME_MAX)
        return fail(a, ".config: name longer than %d characters", ISA_NAME_MAX - 1);
    if (!isa_config_name_valid(tok[1]))
        return fail(a, ".config: a name is printable ASCII without '#' or ';'");
    snprintf(a->config, sizeof a->config, "%s", tok[1]);
    for (int i = 2; i < n; i++) {
        char *eq = strchr(tok[i], '=');
        uint64_t v;
        if (!eq)
            return fail(a, ".config: expected KEY=VALUE, got '%s'", tok[i]);
        *eq = 0;
        const char *val = eq + 1;
        if (strcmp(tok[i], "ncores") == 0) {
            if (parse_bounded(a, ".config ncores", val, 1, ASM_MAX_CORES, &v))
                return -1;
            a->ncores = (int)v;
        } else if (strcmp(tok[i], "lx") == 0) {
            if (parse_bounded(a, ".config lx", val, 1, ISA_BYTES_MAX, &v))
                return -1;
            a->lx = v;
        } else if (strcmp(tok[i], "stick") == 0) {
            if (parse_bounded(a, ".config stick", val, 4, ISA_STICK_MAX, &v))
                return -1;
            if (v % 4)
                return fail(a, ".config stick=%" PRIu64 " is not a multiple of 4", v);
            a->stick = (uint32_t)v;
        } else {
            return fail(a, ".config has no key '%s' (ncores, lx, stick)", tok[i]);
        }
    }
    a->config_line = a->line;
    return 0;
}

/* End the open kernel, if any, after the last instruction of its core. */
static int close_kernel(assembler *a)
{
    if (!a->kernel_open)
        return 0;
    a->kernel_open = 0;
    size_t n = a->p->cores[a->core].n;
    if (n == a->kernel_first) {
        a->line = a->kernel_line;
        return fail(a, ".kernel %s has no instructions", a->kernel_name);
    }
    isa_program_add_kernel(a->p, a->kernel_name, a->core, (long)a->kernel_first, (long)n - 1);
    if (a->nkrec == a->krec_cap) {
        a->krec_cap = a->krec_cap ? 2 * a->krec_cap : 64;
        a->krec = realloc(a->krec, (size_t)a->krec_cap * sizeof *a->krec);
        if (!a->krec) {
            fprintf(stderr, "spyre: out of memory\n");
            abort();
        }
    }
    a->krec[a->nkrec++] = (struct asm_krec){a->kernel_rec, a->kernel_line};
    return 0;
}

/* With rec=, put every kernel record at its number: a compiled program
 * lists them kernel by kernel, which the text (core by core) cannot show. */
static int order_kernels(assembler *a)
{
    isa_program *p = a->p;
    size_t n = p->nkernels;
    if (!n || a->krec[0].rec < 0) {
        for (size_t i = 0; i < n; i++)
            if (a->krec[i].rec >= 0) {
                a->line = a->krec[i].line;
                return fail(a, ".kernel %s: rec= here but not on line %d (every .kernel gives one or none does)",
                            p->kernels[i].name, a->krec[0].line);
            }
        return 0;
    }
    isa_kernel *out = malloc(n * sizeof *out);
    char *seen = calloc(n, 1);
    int rc = 0;
    if (!out || !seen) {
        fprintf(stderr, "spyre: out of memory\n");
        abort();
    }
    for (size_t i = 0; i < n && !rc; i++) {
        long r = a->krec[i].rec;
        a->line = a->krec[i].line;
        if (r < 0)
            rc = fail(a, ".kernel %s: no rec= here but one on line %d (every .kernel gives one or none does)",
                      p->kernels[i].name, a->krec[0].line);
        else if ((size_t)r >= n)
            rc = fail(a, ".kernel %s rec=%ld: the program has %zu kernels (rec= counts from 0)", p->kernels[i].name,
                      r, n);
        else if (seen[r])
            rc = fail(a, ".kernel %s rec=%ld: another .kernel has that rec=", p->kernels[i].name, r);
        else
            out[r] = p->kernels[i];
        if (!rc)
            seen[r] = 1;
    }
    if (!rc)
        memcpy(p->kernels, out, n * sizeof *out);
    free(out);
    free(seen);
    return rc;
}

static int dir_kernel(assembler *a, char **tok, int n)
{
    uint64_t rec = 0;
    if (n < 2 || n > 3 || (n == 3 && strncmp(tok[2], "rec=", 4)))
        return fail(a, "expected .kernel NAME [rec=N]");
    if (n == 3 && parse_bounded(a, ".kernel rec", tok[2] + 4, 0, LONG_MAX, &rec))
        return -1;
    if (a->core < 0)
        return fail(a, ".kernel outside a core: put '.core N' before it");
    if (strlen(tok[1]) >= ISA_NAME_MAX)
        return fail(a, ".kernel: name '%s' longer than %d characters", tok[1], ISA_NAME_MAX - 1);
    if (!isa_name_printable(tok[1])) /* the disassembler could not write it back */
        return fail(a, ".kernel: a name is printable ASCII without '#' or ';'");
    if (close_kernel(a))
        return -1;
    a->kernel_open = 1;
    snprintf(a->kernel_name, sizeof a->kernel_name, "%s", tok[1]);
    a->kernel_first = a->p->cores[a->core].n;
    a->kernel_line = a->line;
    a->kernel_rec = n == 3 ? (long)rec : -1;
    return 0;
}

static int dir_endkernel(assembler *a, char **tok, int n)
{
    (void)tok;
    if (n != 1)
        return fail(a, "expected .endkernel alone");
    if (!a->kernel_open)
        return fail(a, ".endkernel without an open .kernel");
    return close_kernel(a);
}

static int dir_core(assembler *a, char **tok, int n)
{
    if (n != 2)
        return fail(a, "expected .core N");
    if (close_kernel(a))
        return -1;
    isa_program *p = program(a);
    uint64_t c;
    if (parse_u64(tok[1], &c))
        return fail(a, ".core: '%s' is not a number", tok[1]);
    if (c >= (uint64_t)p->ncores)
        return fail(a, ".core %" PRIu64 ": the program has %d cores (.config ncores=)", c, p->ncores);
    a->core = (int)c;
    return 0;
}

/* DIMS: "512x1024", or "scalar" for rank 0. */
static int parse_dims(assembler *a, const char *s, int *rank, int64_t *shape)
{
    *rank = 0;
    if (strcmp(s, "scalar") == 0)
        return 0;
    char buf[256];
    if (strlen(s) >= sizeof buf)
        return fail(a, ".tensor: dimensions '%s' too long", s);
    strcpy(buf, s);
    char *save = NULL;
    int parts = 0;
    for (const char *c = s; *c; c++)
        parts += *c == 'x';
    if (parts + 1 > ISA_MAX_RANK)
        return fail(a, ".tensor: more than %d dimensions in '%s'", ISA_MAX_RANK, s);
    for (char *d = strtok_r(buf, "x", &save); d; d = strtok_r(NULL, "x", &save)) {
        uint64_t v;
        if (parse_u64(d, &v) || v > ISA_BYTES_MAX) /* 0: an empty tensor */
            return fail(a, ".tensor: bad dimensions '%s' (expected e.g. 512x1024)", s);
        shape[(*rank)++] = (int64_t)v;
    }
    if (*rank != parts + 1) /* empty part: "4xx4", "x4", "4x" */
        return fail(a, ".tensor: bad dimensions '%s' (expected e.g. 512x1024)", s);
    return 0;
}

/* Device bytes of a shape (0 for an empty one, whatever its other
 * dimensions, as the ELF reader has it), or UINT64_MAX when it is larger
 * than ISA_BYTES_MAX. */
/* order=D,D,...: every dim of the tensor once, outermost first. */
static int parse_order(assembler *a, const char *name, const char *val, int rank, int *order)
{
    unsigned seen = 0;
    int n = 0;
    for (const char *c = val; *c;) {
        char *end;
        long d = strtol(c, &end, 10);
        if (end == c || d < 0 || d >= rank || seen & (1u << d) || n == rank || (*end && *end != ','))
            return fail(a, ".tensor %s: order=%s is not each of its %d dims once, joined by commas", name, val, rank);
        seen |= 1u << d;
        order[n++] = (int)d;
        c = *end ? end + 1 : end;
    }
    if (n != rank)
        return fail(a, ".tensor %s: order=%s is not each of its %d dims once, joined by commas", name, val, rank);
    return 0;
}

static uint64_t shape_bytes(const isa_program *p, int rank, const int64_t *shape, int stick_dim, isa_dtype_dev t)
{
    uint64_t bytes = p->stick_bytes, lanes = p->stick_bytes / (t == ISA_T_F32 ? 4 : 2);
    for (int d = 0; d < rank; d++)
        if (shape[d] == 0)
            return 0;
    for (int d = 0; d < rank; d++) {
        uint64_t f = (uint64_t)shape[d];
        if (d == stick_dim)
            f = (f + lanes - 1) / lanes;
        if (bytes && f > ISA_BYTES_MAX / bytes)
            return UINT64_MAX;
        bytes *= f;
    }
    return bytes; /* 0 for an empty tensor */
}

static int dir_tensor(assembler *a, char **tok, int n)
{
    if (n < 5)
        return fail(a, "expected .tensor NAME ROLE HOSTDTYPE DIMS [dev=dl16|f32] [at=OFFSET]");
    isa_program *p = program(a);
    const char *name = tok[1];
    if (strchr(name, '='))
        return fail(a, ".tensor: expected a name, got '%s'", name);
    if (strlen(name) >= ISA_NAME_MAX)
        return fail(a, ".tensor: name '%s' longer than %d characters", name, ISA_NAME_MAX - 1);
    if (!isa_name_printable(name))
        return fail(a, ".tensor: a name is printable ASCII without '#' or ';'");
    if (isa_program_find_tensor(p, name) >= 0)
        return fail(a, ".tensor: '%s' declared twice", name);
    int role = isa_name_index(isa_role_names, tok[2]);
    if (role < 0)
        return fail(a, ".tensor %s: unknown role '%s' (input, output, weight, scratch)", name, tok[2]);
    int hdt = isa_name_index(isa_host_dtype_names, tok[3]);
    if (hdt < 0)
        return fail(a, ".tensor %s: unknown host dtype '%s' (f32, f16)", name, tok[3]);
    int rank;
    int64_t shape[ISA_MAX_RANK];
    if (parse_dims(a, tok[4], &rank, shape))
        return -1;

    int ddt = ISA_T_DL16, stick_dim = rank ? rank - 1 : 0, have_at = 0, have_bytes = 0, norder = 0;
    int order[ISA_MAX_RANK];
    uint64_t at = 0, bytes = 0;
    int64_t const_off = -1;
    uint32_t flags = 0, host = 0;
    int lx_core = -1, nan_axis = -2;
    int64_t wrap_rows = 0;
    for (int i = 5; i < n; i++) {
        char *eq = strchr(tok[i], '=');
        uint64_t v;
        if (!eq)
            return fail(a, ".tensor %s: expected KEY=VALUE, got '%s'", name, tok[i]);
        *eq = 0;
        const char *key = tok[i], *val = eq + 1;
        if (strcmp(key, "dev") == 0) {
            ddt = isa_name_index(isa_dtype_names, val);
            if (ddt < 0)
                return fail(a, ".tensor %s: unknown device dtype '%s' (dl16, f32)", name, val);
        } else if (strcmp(key, "at") == 0) {
            if (parse_bounded(a, ".tensor at", val, 0, ISA_BYTES_MAX, &at))
                return -1;
            have_at = 1;
        } else if (strcmp(key, "stick") == 0) {
            if (parse_bounded(a, ".tensor stick", val, 0, rank ? (uint64_t)rank - 1 : 0, &v))
                return -1;
            stick_dim = (int)v;
        } else if (strcmp(key, "bytes") == 0) {
            if (parse_bounded(a, ".tensor bytes", val, 1, ISA_BYTES_MAX, &bytes))
                return -1;
            have_bytes = 1;
        } else if (strcmp(key, "const") == 0) {
            if (parse_bounded(a, ".tensor const", val, 0, ISA_BYTES_MAX, &v))
                return -1;
            const_off = (int64_t)v;
        } else if (strcmp(key, "value") == 0) {
            if (parse_bounded(a, ".tensor value", val, 0, 1, &v))
                return -1;
            flags = v ? ISA_TF_VALUE : 0;
        } else if (strcmp(key, "host") == 0) {
            if (parse_bounded(a, ".tensor host", val, 1, 2, &v))
                return -1;
            host = v == 2 ? ISA_TF_HOST | ISA_TF_HOSTONLY : ISA_TF_HOST;
        } else if (strcmp(key, "lx") == 0) {
            if (parse_bounded(a, ".tensor lx", val, 0, 255, &v))
                return -1;
            lx_core = (int)v;
        } else if (strcmp(key, "nanrow") == 0) {
            if (strcmp(val, "each") && parse_bounded(a, ".tensor nanrow", val, 0, rank ? (uint64_t)rank - 1 : 0, &v))
                return -1;
            nan_axis = strcmp(val, "each") ? (int)v : -1;
        } else if (strcmp(key, "wrap") == 0) {
            if (parse_bounded(a, ".tensor wrap", val, 1, ISA_WRAP_ROWS_MAX, &v))
                return -1;
            wrap_rows = (int64_t)v;
        } else if (strcmp(key, "order") == 0) {
            if (parse_order(a, name, val, rank, order))
                return -1;
            norder = rank;
        } else {
            return fail(a, ".tensor %s has no key '%s' (dev, at, stick, bytes, const, order, value, host, lx, nanrow, wrap)", name, key);
        }
    }
    uint64_t need = shape_bytes(p, rank, shape, stick_dim, (isa_dtype_dev)ddt);
    if (need == UINT64_MAX)
        return fail(a, ".tensor %s: larger than %" PRIu64 " bytes", name, (uint64_t)ISA_BYTES_MAX);
    if (have_bytes && bytes < need)
        return fail(a, ".tensor %s: bytes=%" PRIu64 " but its shape needs %" PRIu64, name, bytes, need);
    if (nan_axis > -2 && role != ISA_ROLE_INPUT)
        return fail(a, ".tensor %s: nanrow= is for an input only", name);
    if (wrap_rows && role != ISA_ROLE_WEIGHT)
        return fail(a, ".tensor %s: wrap= is for a weight only", name);
    if (host && role != ISA_ROLE_SCRATCH && (role != ISA_ROLE_OUTPUT || (host & ISA_TF_HOSTONLY)))
        return fail(a, ".tensor %s: host=1 is for a scratch tensor or an output, host=2 a scratch tensor", name);
    if (lx_core >= 0 && !have_at)
        return fail(a, ".tensor %s: lx=%d needs at=BYTE (its address in that core's LX)", name, lx_core);
    if (!have_at) { /* next free offset after the tensors so far (of its region, after .weights) */
        int weight = role == ISA_ROLE_WEIGHT;
        if (a->weights_line && !weight)
            at = a->weights;
        for (size_t i = 0; i < p->ntensors; i++) {
            uint64_t end = p->tensors[i].dram_off + p->tensors[i].bytes;
            if (p->tensors[i].flags & ISA_TF_LX)
                continue;
            if (a->weights_line && (p->tensors[i].role == ISA_ROLE_WEIGHT) != weight)
                continue;
            if (end > at)
                at = end;
        }
        at = (at + ASM_TENSOR_ALIGN - 1) / ASM_TENSOR_ALIGN * ASM_TENSOR_ALIGN;
    }
    int i = isa_program_add_tensor(p, name, (isa_role)role, (isa_host_dtype)hdt, (isa_dtype_dev)ddt, rank, shape,
                                   at);
    isa_tensor *t = &p->tensors[i];
    t->stick_dim = stick_dim;
    t->order = norder ? isa_order_make(order, rank, stick_dim) : 0;
    t->bytes = have_bytes ? bytes : need;
    t->const_off = const_off;
    t->flags = flags | host | (lx_core >= 0 ? ISA_TF_LX : 0) | (nan_axis > -2 ? ISA_TF_NANROW : 0) |
               (wrap_rows ? ISA_TF_WRAP : 0);
    t->wrap_rows = wrap_rows;
    t->lx_core = lx_core >= 0 ? lx_core : 0;
    t->nan_axis = nan_axis > -2 ? nan_axis : 0;
    int *lines = realloc(a->tensor_line, p->ntensors * sizeof *lines);
    if (!lines) {
        fprintf(stderr, "spyre: out of memory\n");
        abort();
    }
    a->tensor_line = lines;
    lines[i] = a->line;
    return 0;
}

/* A directive "DIR BYTES" that may stand once: *line records where. */
static int dir_bytes_once(assembler *a, char **tok, int n, const char *dir, int *line, uint64_t *bytes)
{
    if (n != 2)
        return fail(a, "expected %s BYTES", dir);
    if (*line)
        return fail(a, "%s given twice (first on line %d)", dir, *line);
    if (parse_bounded(a, dir, tok[1], 0, ISA_BYTES_MAX, bytes))
        return -1;
    *line = a->line;
    return 0;
}

static int dir_dram(assembler *a, char **tok, int n)
{
    return dir_bytes_once(a, tok, n, ".dram", &a->dram_line, &a->dram);
}

static int dir_weights(assembler *a, char **tok, int n)
{
    return dir_bytes_once(a, tok, n, ".weights", &a->weights_line, &a->weights);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int dir_const(assembler *a, char **tok, int n)
{
    for (int i = 1; i < n; i++) {
        size_t len = strlen(tok[i]);
        if (len % 2)
            return fail(a, ".const: odd number of hex digits in '%s'", tok[i]);
        for (size_t k = 0; k < len; k += 2) {
            int hi = hexval((unsigned char)tok[i][k]), lo = hexval((unsigned char)tok[i][k + 1]);
            if (hi < 0 || lo < 0)
                return fail(a, ".const: '%s' is not hex bytes", tok[i]);
            uint8_t byte = (uint8_t)(hi << 4 | lo);
            isa_sb_put(&a->consts, &byte, 1);
        }
    }
    return 0;
}

/* The directives of the text but .graph (which takes the lines after it). */
static const struct {
    const char *name;
    int (*run)(assembler *a, char **tok, int n);
} directives[] = {
    {".config", dir_config}, {".core", dir_core},     {".tensor", dir_tensor}, {".dram", dir_dram},
    {".weights", dir_weights}, {".const", dir_const}, {".kernel", dir_kernel}, {".endkernel", dir_endkernel},
};

static int directive(assembler *a, char *line)
{
    char *tok[32];
    int n = tokenize(line, tok, 31);
    if (n > 31)
        return fail(a, "too many fields");
    for (size_t i = 0; i < sizeof directives / sizeof directives[0]; i++)
        if (strcmp(tok[0], directives[i].name) == 0)
            return directives[i].run(a, tok, n);
    return fail(a, "unknown directive '%s' (.config .core .kernel .endkernel .tensor .dram .weights .const .graph)",
                tok[0]);
}

static int instruction(assembler *a, const char *line)
{
    isa_insn in;
    char msg[400];
    uint8_t word[ISA_INSN_BYTES];
    /* Encoding checks the operands the text left at their defaults too
     * (li without r=). */
    if (isa_parse_insn(line, &in, msg, sizeof msg) || isa_encode(&in, word, msg, sizeof msg))
        return fail(a, "%s", msg);
    if (a->core < 0)
        return fail(a, "instruction outside a core: put '.core N' before it");
    isa_stream_push(&a->p->cores[a->core], &in);
    return 0;
}

/* Checks that need the whole text: DRAM size and constant ranges.  Tensors
 * may overlap in DRAM (a compiler may alias scratch space). */
static int finish(assembler *a)
{
    if (close_kernel(a))
        return -1;
    isa_program *p = program(a);
    if (order_kernels(a))
        return -1;
    uint64_t need = 0;
    for (size_t i = 0; i < p->ntensors; i++) {
        const isa_tensor *t = &p->tensors[i];
        a->line = a->tensor_line[i];
        char msg[300];
        if ((t->flags & ISA_TF_LX) && isa_tensor_check_lx(p, t, msg, sizeof msg))
            return fail(a, ".%s", msg);
        if (t->flags & ISA_TF_LX)
            continue; /* no DRAM */
        if (t->dram_off + t->bytes > need)
            need = t->dram_off + t->bytes;
        if (t->const_off >= 0 && ((uint64_t)t->const_off > a->consts.len ||
                                  t->bytes > a->consts.len - (uint64_t)t->const_off))
            return fail(a, ".tensor %s: const=%" PRId64 " plus %" PRIu64 " bytes is past the %zu .const bytes",
                        t->name, t->const_off, t->bytes, a->consts.len);
        int weight = t->role == ISA_ROLE_WEIGHT;
        if (a->weights_line && (weight ? t->dram_off + t->bytes > a->weights : t->dram_off < a->weights))
            return fail(a, ".tensor %s: [%" PRIu64 ", +%" PRIu64 ") is not in the %s region (.weights %" PRIu64
                        " on line %d: weights at [0, %" PRIu64 "), every other tensor after)",
                        t->name, t->dram_off, t->bytes, weight ? "weights" : "activation", a->weights,
                        a->weights_line, a->weights);
    }
    if (a->weights > need)
        need = a->weights;
    if (a->dram_line) {
        a->line = a->dram_line;
        if (a->dram < need)
            return fail(a, ".dram %" PRIu64 " is smaller than the %" PRIu64 " bytes the tensors%s need", a->dram,
                        need, a->weights_line ? " and .weights" : "");
        need = a->dram;
    }
    p->dram_bytes = need;
    p->weight_bytes = a->weights;
    if (a->consts.len) {
        p->consts = (uint8_t *)a->consts.buf;
        p->nconsts = a->consts.len;
        a->consts.buf = NULL;
    }
    if (a->have_graph) {
        isa_sb_grow(&a->graph, 0);
        a->graph.buf[a->graph.len] = 0;
        p->graph = a->graph.buf;
        a->graph.buf = NULL;
    }
    return 0;
}

/* One line, without its newline. */
static int assemble_line(assembler *a, const char *text, size_t len)
{
    char line[ASM_LINE_MAX];
    if (len >= sizeof line)
        return fail(a, "line longer than %d characters", ASM_LINE_MAX - 1);
    memcpy(line, text, len);
    line[len] = 0;
    if (len && line[len - 1] == '\r')
        line[--len] = 0;
    char *s = line;
    while (*s == ' ' || *s == '\t')
        s++;
    /* .graph keeps the rest of its line verbatim, comment characters too. */
    if (strncmp(s, ".graph", 6) == 0 && (s[6] == 0 || s[6] == ' ' || s[6] == '\t')) {
        const char *g = s[6] ? s + 7 : s + 6;
        while (len && line[len - 1] == '\r') /* every one, not the CRLF's alone: dis writes none */
            line[--len] = 0;
        isa_sb_puts(&a->graph, g);
        isa_sb_chr(&a->graph, '\n');
        a->have_graph = 1;
        return 0;
    }
    s[strcspn(s, "#;")] = 0;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = 0;
    if (!n)
        return 0;
    if (s[0] == '.')
        return directive(a, s);
    return instruction(a, s);
}

isa_program *isa_assemble(const char *text, const char *filename, char *err, size_t errlen)
{
    assembler a = {0};
    a.file = filename ? filename : "<input>";
    a.err = err;
    a.errlen = errlen;
    snprintf(a.config, sizeof a.config, "%s", ASM_DEFAULT_CONFIG);
    a.ncores = ASM_DEFAULT_NCORES;
    a.lx = ASM_DEFAULT_LX;
    a.stick = ASM_DEFAULT_STICK;
    a.core = -1;
    int rc = 0;
    for (const char *s = text; *s && rc == 0;) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        a.line++;
        rc = assemble_line(&a, s, len);
        s += len + (nl ? 1 : 0);
    }
    if (rc == 0)
        rc = finish(&a);
    free(a.tensor_line);
    free(a.krec);
    free(a.consts.buf);
    free(a.graph.buf);
    if (rc) {
        isa_program_free(a.p);
        return NULL;
    }
    return a.p;
}

/* ---- disassembler ---- */

/* names[v], or "?" when v is not a valid index (a corrupt program). */
static const char *name_of(const char *const *names, int v)
{
    for (int i = 0; names[i]; i++)
        if (i == v)
            return names[i];
    return "?";
}


/* Core c's kernels that the text can express, in stream order: in range,
 * printable and clear of the one before; returns how many, their indices
 * in idx.  Every other kernel of c is noted as a comment in s (if s). */
static size_t core_kernels(strbuf *s, const isa_program *p, int c, size_t *idx)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nkernels; i++)
        if (p->kernels[i].core == c) {
            size_t j = n++;
            for (; j > 0 && p->kernels[idx[j - 1]].first > p->kernels[i].first; j--)
                idx[j] = idx[j - 1];
            idx[j] = i;
        }
    size_t kept = 0;
    long end = -1;
    for (size_t j = 0; j < n; j++) {
        const isa_kernel *k = &p->kernels[idx[j]];
        if (k->first > end && k->first <= k->last && (unsigned long)k->last < p->cores[c].n &&
            isa_name_printable(k->name)) {
            idx[kept++] = idx[j];
            end = k->last;
        } else if (s) {
            sb_printf(s,
                      "# kernel %zu [%ld, %ld] cannot be written as .kernel (overlapping, outside the stream, "
                      "or an unprintable name)\n",
                      idx[j], k->first, k->last);
        }
    }
    return kept;
}

/* Each expressible kernel's rec=, its place among them in p's records,
 * when that order is not the text's (core by core, as the assembler
 * lists them without rec=); NULL when it is.  idx: scratch. */
static long *kernel_recs(const isa_program *p, size_t *idx)
{
    long *rec = malloc((p->nkernels ? p->nkernels : 1) * sizeof *rec);
    if (!rec) {
        fprintf(stderr, "spyre: out of memory\n");
        abort();
    }
    int text_order = 1;
    size_t prev = 0, seen = 0;
    for (size_t i = 0; i < p->nkernels; i++)
        rec[i] = -1;
    for (int c = 0; c < p->ncores; c++) {
        size_t nk = p->cores[c].n ? core_kernels(NULL, p, c, idx) : 0;
        for (size_t j = 0; j < nk; j++, seen++) {
            text_order &= !seen || idx[j] > prev;
            prev = idx[j];
            rec[idx[j]] = 0;
        }
    }
    if (text_order) {
        free(rec);
        return NULL;
    }
    long r = 0;
    for (size_t i = 0; i < p->nkernels; i++)
        if (rec[i] == 0)
            rec[i] = r++;
    return rec;
}

char *isa_disassemble(const isa_program *p)
{
    strbuf s = {0};
    sb_printf(&s, ".config %s ncores=%d lx=%" PRIu64, p->config[0] ? p->config : ASM_DEFAULT_CONFIG, p->ncores,
              p->lx_bytes);
    if (p->stick_bytes != ASM_DEFAULT_STICK)
        sb_printf(&s, " stick=%" PRIu32, p->stick_bytes);
    sb_printf(&s, "\n");
    if (p->weight_bytes)
        sb_printf(&s, ".weights %" PRIu64 "\n", p->weight_bytes);
    for (size_t i = 0; i < p->ntensors; i++) {
        const isa_tensor *t = &p->tensors[i];
        sb_printf(&s, ".tensor %s %s %s ", t->name, name_of(isa_role_names, (int)t->role),
                  name_of(isa_host_dtype_names, (int)t->host_dtype));
        if (t->rank == 0)
            sb_printf(&s, "scalar");
        for (int d = 0; d < t->rank; d++)
            sb_printf(&s, "%s%" PRId64, d ? "x" : "", t->shape[d]);
        sb_printf(&s, " dev=%s at=%" PRIu64, name_of(isa_dtype_names, (int)t->dev_dtype), t->dram_off);
        if (t->rank && t->stick_dim != t->rank - 1)
            sb_printf(&s, " stick=%d", t->stick_dim);
        for (int p = 0; t->order && p < t->rank; p++)
            sb_printf(&s, "%s%u", p ? "," : " order=", (unsigned)((t->order >> (4 * p)) & 15) - 1);
        if (t->bytes != isa_tensor_device_bytes(t, p->stick_bytes))
            sb_printf(&s, " bytes=%" PRIu64, t->bytes);
        if (t->const_off >= 0)
            sb_printf(&s, " const=%" PRId64, t->const_off);
        if (t->flags & ISA_TF_VALUE)
            sb_printf(&s, " value=1");
        if (t->flags & ISA_TF_HOST)
            sb_printf(&s, " host=%d", t->flags & ISA_TF_HOSTONLY ? 2 : 1);
        if (t->flags & ISA_TF_LX)
            sb_printf(&s, " lx=%d", t->lx_core);
        if ((t->flags & ISA_TF_NANROW) && t->nan_axis < 0)
            sb_printf(&s, " nanrow=each");
        else if (t->flags & ISA_TF_NANROW)
            sb_printf(&s, " nanrow=%d", t->nan_axis);
        if (t->flags & ISA_TF_WRAP)
            sb_printf(&s, " wrap=%" PRId64, t->wrap_rows);
        sb_printf(&s, "\n");
    }
    sb_printf(&s, ".dram %" PRIu64 "\n", p->dram_bytes);
    for (size_t i = 0; i < p->nconsts; i += ASM_CONST_PER_LINE) {
        sb_printf(&s, ".const ");
        for (size_t k = i; k < p->nconsts && k < i + ASM_CONST_PER_LINE; k++)
            sb_printf(&s, "%02x", p->consts[k]);
        sb_printf(&s, "\n");
    }
    for (const char *g = p->graph; g && *g;) {
        size_t len = strcspn(g, "\n"), keep = len;
        while (keep && g[keep - 1] == '\r') /* the assembler would take them for a line end */
            keep--;
        sb_printf(&s, ".graph%s", keep ? " " : "");
        isa_sb_put(&s, g, keep);
        sb_printf(&s, "\n");
        g += len + (g[len] == '\n');
    }
    size_t *kidx = malloc((p->nkernels ? p->nkernels : 1) * sizeof *kidx);
    if (!kidx) {
        fprintf(stderr, "spyre: out of memory\n");
        abort();
    }
    long *rec = kernel_recs(p, kidx);
    for (int c = 0; c < p->ncores; c++) {
        const isa_stream *st = &p->cores[c];
        if (!st->n)
            continue;
        sb_printf(&s, ".core %d\n", c);
        size_t nk = core_kernels(&s, p, c, kidx), next = 0;
        const isa_kernel *open = NULL;
        int depth = 0;
        for (size_t i = 0; i < st->n; i++) {
            char text[1024];
            const isa_kernel *k = next < nk ? &p->kernels[kidx[next]] : NULL;
            if (k && (size_t)k->first == i) {
                sb_printf(&s, ".kernel %s", k->name);
                if (rec)
                    sb_printf(&s, " rec=%ld", rec[kidx[next]]);
                sb_printf(&s, "\n");
                open = k;
                next++;
            }
            if (st->insns[i].op == ISA_OP_ENDL && depth > 0)
                depth--;
            isa_format_insn(&st->insns[i], text, sizeof text);
            sb_printf(&s, "%*s%s\n", depth * ASM_INDENT, "", text);
            if (st->insns[i].op == ISA_OP_LOOP)
                depth++;
            /* A kernel that ends before the block and the next kernel. */
            if (open && (size_t)open->last == i) {
                k = next < nk ? &p->kernels[kidx[next]] : NULL;
                if (i + 1 < st->n && !(k && (size_t)k->first == i + 1))
                    sb_printf(&s, ".endkernel\n");
                open = NULL;
            }
        }
    }
    for (size_t i = 0; i < p->nkernels; i++) {
        const isa_kernel *k = &p->kernels[i];
        if (k->core < 0 || k->core >= p->ncores || !p->cores[k->core].n)
            sb_printf(&s, "# kernel %zu [%ld, %ld] is on core %d, which has no instructions\n", i, k->first, k->last,
                      k->core);
    }
    free(kidx);
    free(rec);
    return s.buf;
}
