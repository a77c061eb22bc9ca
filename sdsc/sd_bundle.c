/* sd_bundle.c: a kernel directory read into a bundle: its sdsc_N.json in
 * the order of N, the problem lines, the kernel arguments and the
 * tensor specs of spyre launch. */
#include "sd_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* An SDSC file is JSON text of some tens of KB; 64 MB is far beyond any. */
#define SD_FILE_MAX (64ull << 20)

/* Append one line "PREFIX: rule" to the problems. */
static void add_problem(sd_bundle *b, const char *prefix, const char *fmt, va_list ap)
{
    char line[1536];
    int n = snprintf(line, sizeof line, "%s%s", prefix, *prefix ? ": " : "");
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    size_t len = strlen(line);
    if (b->plen + len + 2 > b->pcap) {
        size_t cap = b->pcap ? 2 * b->pcap : 4096;
        while (cap < b->plen + len + 2)
            cap *= 2;
        char *p = realloc(b->problems, cap);
        if (!p)
            abort(); /* as isa_stream_push: out of memory is not recoverable here */
        b->problems = p;
        b->pcap = cap;
    }
    memcpy(b->problems + b->plen, line, len);
    b->plen += len;
    b->problems[b->plen++] = '\n';
    b->problems[b->plen] = 0;
    b->nproblems++;
}

void sd_problem(sd_bundle *b, const sd_kernel *k, const char *path, const char *fmt, ...)
{
    char prefix[1400];
    snprintf(prefix, sizeof prefix, "%s: %s", k ? k->file : b->dir, path);
    va_list ap;
    va_start(ap, fmt);
    add_problem(b, prefix, fmt, ap);
    va_end(ap);
}

void sd_problem_at(sd_bundle *b, const char *file, int line, const char *fmt, ...)
{
    char prefix[1100] = "";
    if (file)
        snprintf(prefix, sizeof prefix, "%s:%d", file, line);
    va_list ap;
    va_start(ap, fmt);
    add_problem(b, prefix, fmt, ap);
    va_end(ap);
}

/* N of "sdsc_N.json", or -1. */
static int sdsc_seq(const char *name)
{
    int n = -1, end = 0;
    if (sscanf(name, "sdsc_%d.json%n", &n, &end) == 1 && name[end] == 0 && n >= 0 && !strncmp(name, "sdsc_", 5) &&
        name[5] >= '0' && name[5] <= '9')
        return n;
    return -1;
}

int sd_is_kernel_dir(const char *path)
{
    struct stat st;
    if (stat(path, &st) || !S_ISDIR(st.st_mode))
        return 0;
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d));)
        found = sdsc_seq(e->d_name) >= 0;
    closedir(d);
    return found;
}

static int by_seq(const void *a, const void *b)
{
    return ((const sd_kernel *)a)->seq - ((const sd_kernel *)b)->seq;
}

/* The sdsc_N.json of dir, in b->k sorted by N. */
static int list_kernels(sd_bundle *b, char *err, size_t errlen)
{
    DIR *d = opendir(b->dir);
    if (!d)
        return isa_errf(err, errlen, "%s: cannot list the directory", b->dir);
    for (struct dirent *e; (e = readdir(d));) {
        int seq = sdsc_seq(e->d_name);
        if (seq < 0)
            continue;
        if (b->nk == SD_MAX_KERNELS) {
            closedir(d);
            return isa_errf(err, errlen, "%s: more than %d kernels", b->dir, SD_MAX_KERNELS);
        }
        sd_kernel *k = &b->k[b->nk++];
        k->seq = seq;
        snprintf(k->file, sizeof k->file, "%s", e->d_name);
    }
    closedir(d);
    qsort(b->k, (size_t)b->nk, sizeof *b->k, by_seq);
    return 0;
}

sd_bundle *sd_load(const char *dir, const chip_config *cfg, char *err, size_t errlen)
{
    sd_bundle *b = calloc(1, sizeof *b);
    if (b)
        b->k = calloc(SD_MAX_KERNELS, sizeof *b->k);
    if (!b || !b->k) {
        free(b);
        isa_errf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(b->dir, sizeof b->dir, "%s", dir);
    if (list_kernels(b, err, errlen)) {
        sd_free(b);
        return NULL;
    }
    if (!b->nk)
        sd_problem(b, NULL, "(directory)", "holds no sdsc_N.json");
    for (int i = 0; i < b->nk; i++) {
        char *path = isa_path_join(dir, b->k[i].file), msg[512];
        char *text = isa_text_read(path, SD_FILE_MAX, msg, sizeof msg);
        free(path);
        if (!text) {
            sd_problem(b, &b->k[i], "(file)", "%s", msg);
            continue;
        }
        sd_parse_file(b, &b->k[i], text);
        free(text);
    }
    sd_read_mlir(b, cfg->stick_bytes);
    sd_check_all(b, cfg);
    sd_find_args(b);
    return b;
}

void sd_free(sd_bundle *b)
{
    if (!b)
        return;
    free(b->k);
    free(b->problems);
    free(b);
}

const char *sd_problems(const sd_bundle *b) { return b->problems ? b->problems : ""; }
int sd_nproblems(const sd_bundle *b) { return b->nproblems; }
int sd_nkernels(const sd_bundle *b) { return b->nk; }
int sd_ninputs(const sd_bundle *b) { return b->nin; }
int sd_noutputs(const sd_bundle *b) { return b->nargs - b->nin; }
void sd_arg_spec(const sd_bundle *b, int i, sd_spec *out) { *out = b->args[i].spec; }
const char *sd_arg_name(const sd_bundle *b, int i) { return b->args[i].name; }

/* ---- specs: "512x1024@fp16" ---- */

static const char *const dtype_names[ISA_HT_COUNT] = {"fp32", "fp16", "bf16"};

int sd_spec_parse(const char *text, sd_spec *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *at = strchr(text, '@'), *s = text;
    if (!at)
        return isa_errf(err, errlen, "tensor spec '%s': expected DIMSxDIMS@DTYPE (512x1024@fp16)", text);
    int dt = -1;
    for (int i = 0; i < ISA_HT_COUNT; i++)
        if (!strcmp(at + 1, dtype_names[i]))
            dt = i;
    if (dt < 0)
        return isa_errf(err, errlen, "tensor spec '%s': dtype '%s' is not fp16, bf16 or fp32", text, at + 1);
    out->dtype = (isa_host_dtype)dt;
    while (s < at) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 1 || v > (1ll << 40) || out->rank == ISA_MAX_RANK || (end != at && *end != 'x'))
            return isa_errf(err, errlen, "tensor spec '%s': dimensions are positive integers joined by x (at most %d)",
                            text, ISA_MAX_RANK);
        out->shape[out->rank++] = v;
        s = end == at ? at : end + 1;
    }
    if (!out->rank)
        return isa_errf(err, errlen, "tensor spec '%s': no dimensions", text);
    return 0;
}

void sd_spec_format(const sd_spec *s, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < s->rank && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? "x" : "", (long long)s->shape[i]);
    if (n < len)
        snprintf(buf + n, len - n, "@%s", dtype_names[s->dtype]);
}
