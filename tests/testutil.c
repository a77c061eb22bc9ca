/* testutil.c: shared helpers for the CUnit test programs. */
#include "testutil.h"

#include <CUnit/Basic.h>
#include <cblas.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int tu_run(const char *suite, const tu_test *tests)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    CU_pSuite s = CU_add_suite(suite, NULL, NULL);
    for (int i = 0; tests[i].name; i++)
        CU_add_test(s, tests[i].name, tests[i].fn);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}

void tu_config(const char *name, chip_config *cfg)
{
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/chip/configs/%s.cfg", SPYRE_SOURCE_DIR, name);
    if (chip_config_load(path, cfg, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
}

void tu_tmpfile(const char *suffix, char *buf, size_t len)
{
    static int counter;
    snprintf(buf, len, "%s/tmp-%d-%d%s", SPYRE_BINARY_DIR, (int)getpid(), counter++, suffix);
}

void tu_write_file(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

void tu_write_tmpfile(const char *suffix, const void *bytes, size_t n, char *path, size_t len)
{
    tu_tmpfile(suffix, path, len);
    tu_write_file(path, bytes, n);
}

void tu_tmpdir(char *buf, size_t len)
{
    snprintf(buf, len, "%s/tmpdir-XXXXXX", SPYRE_BINARY_DIR);
    if (!mkdtemp(buf)) {
        perror(buf);
        abort();
    }
}

void tu_rmtree(const char *dir)
{
    size_t n = strlen(dir) + 16;
    char *cmd = malloc(n);
    snprintf(cmd, n, "rm -rf '%s'", dir);
    if (system(cmd))
        fprintf(stderr, "%s failed\n", cmd);
    free(cmd);
}

void tu_fifo(const char *dir, const char *name, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0600), 0);
}

char *tu_long_dir(const char *dir, size_t min)
{
    static const char part[] = "/a-directory-name-of-one-hundred-bytes-to-make-the-whole-path-longer-than-any-"
                               "fixed-buffer-0123456";
    size_t n = strlen(dir);
    char *p = malloc(n + min + sizeof part);
    strcpy(p, dir);
    while (n <= min) {
        strcpy(p + n, part);
        n += sizeof part - 1;
        if (mkdir(p, 0777)) {
            perror(p);
            abort();
        }
    }
    return p;
}

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t n = 0, cap = 4096;
    char *buf = malloc(cap);
    for (size_t got; (got = fread(buf + n, 1, cap - n - 1, f)) > 0;)
        if ((n += got) + 1 == cap)
            buf = realloc(buf, cap *= 2);
    fclose(f);
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

cJSON *tu_read_json(const char *path)
{
    char *buf = tu_read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    return j;
}

int tu_spyre(const char *args, char *out, size_t outlen)
{
    return tu_spyre_timeout(0, args, out, outlen);
}

int tu_spyre_timeout(int seconds, const char *args, char *out, size_t outlen)
{
    char log[1024], limit[32] = "";
    tu_tmpfile(".log", log, sizeof log);
    if (seconds)
        snprintf(limit, sizeof limit, "timeout %d ", seconds);
    size_t n = strlen(SPYRE_BINARY_DIR) + strlen(args) + strlen(log) + 64;
    char *cmd = malloc(n); /* arguments of any length: long paths are tested */
    snprintf(cmd, n, "%s%s/spyre %s > %s 2>&1", limit, SPYRE_BINARY_DIR, args, log);
    int st = system(cmd);
    free(cmd);
    if (out && outlen) {
        out[0] = 0;
        FILE *f = fopen(log, "r");
        if (f) {
            size_t n = fread(out, 1, outlen - 1, f);
            out[n] = 0;
            fclose(f);
        }
    }
    remove(log);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

void tu_assert_finds(int found, const char *text, const char *const *want, size_t n, const char *file, int line)
{
    for (size_t i = 0; i < n; i++) {
        char cond[1024];
        snprintf(cond, sizeof cond, "strstr(text, \"%s\") %s NULL", want[i], found ? "!=" : "==");
        CU_assertImplementation((strstr(text, want[i]) != NULL) == found, (unsigned)line, cond, file, "", CU_FALSE);
    }
}

void tu_assert_same_code(const isa_program *a, const isa_program *b, int fatal)
{
    CU_ASSERT_EQUAL_FATAL(a->nkernels, b->nkernels);
    for (size_t k = 0; k < a->nkernels; k++) {
        const isa_kernel *x = &a->kernels[k], *y = &b->kernels[k];
        CU_ASSERT_EQUAL(x->first, y->first);
        CU_ASSERT_EQUAL(x->last, y->last);
    }
    for (int c = 0; c < a->ncores; c++) {
        const isa_stream *sa = &a->cores[c], *sb = &b->cores[c];
        CU_ASSERT_EQUAL_FATAL(sa->n, sb->n);
        for (size_t i = 0; i < sa->n; i++) {
            uint8_t wa[ISA_INSN_BYTES], wb[ISA_INSN_BYTES];
            char err[256];
            CU_BOOL stop = fatal ? CU_TRUE : CU_FALSE;
            int ea = isa_encode(&sa->insns[i], wa, err, sizeof err);
            int eb = isa_encode(&sb->insns[i], wb, err, sizeof err);
            CU_assertImplementation(ea == 0, __LINE__, "isa_encode(a's instruction) == 0", __FILE__, "", stop);
            CU_assertImplementation(eb == 0, __LINE__, "isa_encode(b's instruction) == 0", __FILE__, "", stop);
            CU_ASSERT_EQUAL(memcmp(wa, wb, ISA_INSN_BYTES), 0);
        }
    }
}

isa_program *tu_prog_new(int ncores, uint64_t dram_bytes)
{
    isa_program *p = isa_program_new(ncores);
    p->dram_bytes = dram_bytes;
    return p;
}

isa_insn *tu_emit(isa_program *p, int core, int op)
{
    isa_insn in;
    isa_insn_init(&in, op);
    isa_stream_push(&p->cores[core], &in);
    return &p->cores[core].insns[p->cores[core].n - 1];
}

isa_insn *tu_sync(isa_program *p, int core, int op, int unit, int tok)
{
    isa_insn *in = tu_emit(p, core, op);
    isa_set(in, u, unit);
    isa_set(in, tok, tok);
    return in;
}

isa_insn *tu_emit_at(isa_program *p, int core, int op, int64_t d, int64_t a)
{
    isa_insn *in = tu_emit(p, core, op);
    isa_set_off(&in->d, d);
    isa_set_off(&in->a, a);
    return in;
}

void tu_loop(isa_insn *in, int64_t n, int64_t ds, int64_t as)
{
    isa_set(in, n[0], n);
    isa_set(in, ds[0], ds);
    isa_set(in, as[0], as);
}

void tu_halt_all(isa_program *p)
{
    for (int i = 0; i < p->ncores; i++)
        tu_emit(p, i, ISA_OP_HALT);
}

rt_program *tu_ktir_load(const char *text, const kt_arg *args, int nargs, const chip_config *cfg, char *path, size_t len,
                         rt_device **dev)
{
    char err[512];
    int code = 0;
    tu_write_tmpfile(".mlir", text, strlen(text), path, len);
    isa_program *p = kt_compile_file(path, args, nargs, cfg, err, sizeof err, &code, NULL);
    if (!p) printf("\n%s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    *dev = rt_open_config(cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(*dev);
    rt_program *prog = rt_load_program(*dev, p, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    return prog;
}

void tu_write_graph(const char *dir, const char *text, const tu_param *ps, int np)
{
    char path[1024], err[256];
    snprintf(path, sizeof path, "%s/graph.txt", dir);
    tu_write_file(path, text, strlen(text));
    rt_st_entry e[16];
    float *data[16];
    CU_ASSERT_FATAL(np <= 16);
    for (int i = 0; i < np; i++) {
        const int64_t n = ps[i].rows * (ps[i].cols ? ps[i].cols : 1);
        data[i] = malloc((size_t)n * sizeof *data[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(data[i]);
        for (int64_t j = 0; j < n; j++)
            data[i][j] = 0.06f * sinf(0.37f * (float)j + 1.3f * (float)i);
        e[i] = (rt_st_entry){.name = ps[i].name, .dtype = RT_ST_F32, .rank = ps[i].cols ? 2 : 1,
                             .shape = {ps[i].rows, ps[i].cols}, .data = data[i]};
    }
    snprintf(path, sizeof path, "%s/weights.safetensors", dir);
    CU_ASSERT_EQUAL(rt_st_write(path, e, np, err, sizeof err), 0);
    for (int i = 0; i < np; i++)
        free(data[i]);
}

int tu_run_checked(const gr_graph *g, const chip_config *cfg, isa_program *p, const char *label, sim_stats *st)
{
    char err[1024];
    rt_device *dev = rt_open_config(cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    rt_run_result res;
    rt_check_result *chk = NULL;
    int n = 0, bad = -1;
    if (!rt_fill_inputs(prog, 7, err, sizeof err) && !rt_load_graph_tensors(prog, g, NULL, err, sizeof err) &&
        !rt_launch(prog, &res)) {
        *st = res.stats;
        bad = rt_check_graph(prog, g, &chk, &n, err, sizeof err);
    }
    for (int i = 0; i < n; i++)
        if (!chk[i].ok) {
            char line[512];
            rt_check_format(&chk[i], line, sizeof line);
            fprintf(stderr, "%s: %s\n", label, line);
        }
    free(chk);
    rt_unload(prog);
    rt_close(dev);
    return bad;
}

int tu_openblas_packs(void)
{
    const char *core = openblas_get_corename(), *config = openblas_get_config();
    return core && config && !strncmp(config, "OpenBLAS 0.3.21 ", 16) && (!strcmp(core, "Haswell") || !strcmp(core, "Zen"));
}

/* Max-pool windows of -inf beside padding and of two NaNs (test_reference_ops.c checks the
 * reference against PyTorch's indices, test_fallback.c the device against the reference). */
const char *const tu_pool_nan_2d = "graph mp2\n"
                                  "input %x: f32[1, 1, 4, 4]\n"
                                  "%mp: (f32[1, 1, 2, 2], i64[1, 1, 2, 2]) = "
                                  "aten.max_pool2d_with_indices.default(%x, [3, 3], [2, 2], [1, 1])\n"
                                  "%mi: i64[1, 1, 2, 2] = getitem(%mp, 1)\n"
                                  "%m1: (f32[1, 1, 4, 2], i64[1, 1, 4, 2]) = "
                                  "aten.max_pool2d_with_indices.default(%x, [1, 3], [1, 2], [0, 1])\n"
                                  "%mi1: i64[1, 1, 4, 2] = getitem(%m1, 1)\n"
                                  "output %mi, %mi1\n";
const char *const tu_pool_nan_3d = "graph mp3\n"
                                  "input %x: f32[1, 1, 3, 3, 3]\n"
                                  "%mp: (f32[1, 1, 2, 2, 2], i64[1, 1, 2, 2, 2]) = "
                                  "aten.max_pool3d_with_indices.default(%x, [3, 3, 3], [2, 2, 2], [1, 1, 1])\n"
                                  "%mi: i64[1, 1, 2, 2, 2] = getitem(%mp, 1)\n"
                                  "output %mi\n";
/* (0, 0)'s window holds -inf alone (and padding), (0, 1)'s two NaNs */
const float tu_pool_x2[16] = {-INFINITY, -INFINITY, NAN,  0.1f,  -INFINITY, -INFINITY, 0.3f,  NAN,
                                  0.7f,      0.2f,      -0.4f, 0.9f, 0.6f,      -0.2f,     0.8f, 0.0f};
/* i / 27 with the first 2 x 2 x 2 corner -inf, NaNs at (2, 1, 2) and (2, 2, 1) */
void tu_pool_x3(float *x)
{
    for (int i = 0; i < 27; i++)
        x[i] = i / 9 < 2 && i / 3 % 3 < 2 && i % 3 < 2 ? -INFINITY : (float)i / 27;
    x[23] = x[25] = NAN;
}
