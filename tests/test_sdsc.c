/* test_sdsc.c: torch-spyre SuperDSC kernel directories (sdsc/): kernels the
 * tests write run with their work division and LX placement and match the
 * reference executor; each rule of `spyre check` rejects a mutation of a
 * valid SDSC with one line naming file, JSON path and rule (exit 2), and
 * broken files never crash the reader. */
#include <CUnit/CUnit.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "sd.h"
#include "testutil.h"

static char out[1 << 16];
static char problems[1 << 16];

/* ---- writing SDSC files the way torch-spyre does ---- */

static cJSON *affine(int64_t alpha)
{
    cJSON *f = cJSON_CreateObject(), *a = cJSON_AddObjectToObject(f, "Affine");
    cJSON_AddNumberToObject(a, "alpha_", (double)alpha);
    cJSON_AddNumberToObject(a, "beta_", 0);
    return f;
}

static void add_fold(cJSON *fn, cJSON *at, const char *label, int64_t factor, int64_t alpha)
{
    cJSON_AddItemToArray(fn, affine(alpha));
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "factor_", (double)factor);
    cJSON_AddStringToObject(a, "label_", label);
    cJSON_AddItemToArray(at, a);
}

/* One dim's coordinates: `slices` core slices of `per` elements; the
 * stick dim splits its slice into sticks of 64 (elemArr 2). */
static void add_coord(cJSON *ci, const char *dim, int64_t slices, int64_t per, int stick)
{
    cJSON *d = cJSON_AddObjectToObject(ci, dim), *folds;
    cJSON_AddNumberToObject(d, "spatial", 3);
    cJSON_AddNumberToObject(d, "temporal", 0);
    cJSON_AddNumberToObject(d, "elemArr", stick ? 2 : 1);
    cJSON_AddStringToObject(d, "padding", "nopad");
    folds = cJSON_AddObjectToObject(d, "folds");
    cJSON *fn = cJSON_AddArrayToObject(folds, "dim_prop_func"), *at = cJSON_AddArrayToObject(folds, "dim_prop_attr");
    add_fold(fn, at, "core_fold", slices, per);
    add_fold(fn, at, "corelet_fold", 1, 0);
    add_fold(fn, at, "row_fold", 1, 0);
    if (stick) {
        add_fold(fn, at, "elem_arr_1", per / 64, 64);
        add_fold(fn, at, "elem_arr_0", 64, 1);
    } else
        add_fold(fn, at, "elem_arr_0", per, 1);
}

/* An elementwise kernel over an M x N fp16 tensor in sm x sn slices (one
 * core each): tensors 0..nin-1 in, tensor nin out; lx[i] < 0 places tensor
 * i in DRAM (symbol sym0 - i * cores - core), else in LX at lx[i]. */
typedef struct {
    const char *top, *func, *aten;
    int nin;
    int64_t m, n;
    int sm, sn;
    int lx[3];
    int sym0;
} kspec;

static cJSON *alloc_node(const kspec *s, int i)
{
    int cores = s->sm * s->sn;
    cJSON *n = cJSON_CreateObject(), *lo, *sa, *data, *co;
    char name[64], key[32], val[32];
    snprintf(name, sizeof name, "allocate-Tensor%d_%s", i, s->lx[i] < 0 ? "hbm" : "lx");
    cJSON_AddStringToObject(n, "nodeType_", "allocate");
    cJSON_AddStringToObject(n, "name_", name);
    cJSON_AddStringToObject(n, "prev_", "");
    cJSON_AddNumberToObject(n, "ldsIdx_", i);
    cJSON_AddStringToObject(n, "component_", s->lx[i] < 0 ? "hbm" : "lx");
    lo = cJSON_AddArrayToObject(n, "layoutDimOrder_");
    cJSON_AddItemToArray(lo, cJSON_CreateString("mb"));
    cJSON_AddItemToArray(lo, cJSON_CreateString("out"));
    sa = cJSON_AddObjectToObject(n, "startAddressCoreCorelet_");
    data = cJSON_AddObjectToObject(sa, "data_");
    for (int c = 0; c < cores; c++) {
        snprintf(key, sizeof key, "[%d, 0, 0]", c);
        snprintf(val, sizeof val, "%d", s->lx[i] < 0 ? s->sym0 - i * cores - c : s->lx[i]);
        cJSON_AddStringToObject(data, key, val);
    }
    co = cJSON_AddObjectToObject(cJSON_AddObjectToObject(n, "coordinates_"), "coordInfo");
    add_coord(co, "mb", s->sm, s->m / s->sm, 0);
    add_coord(co, "out", s->sn, s->n / s->sn, 1);
    return n;
}

static cJSON *lds_entry(int i)
{
    cJSON *l = cJSON_CreateObject();
    char name[32];
    snprintf(name, sizeof name, "Tensor%d", i);
    cJSON_AddNumberToObject(l, "ldsIdx_", i);
    cJSON_AddStringToObject(l, "dsName_", name);
    cJSON_AddStringToObject(l, "dsType_", "OUTPUT");
    cJSON_AddNumberToObject(l, "wordLength", 2);
    cJSON_AddStringToObject(l, "dataFormat_", "SEN169_FP16");
    return l;
}

static cJSON *compute_op(const kspec *s)
{
    cJSON *op = cJSON_CreateObject(), *in, *o;
    char name[32];
    cJSON_AddStringToObject(op, "exUnit", "sfp");
    cJSON_AddStringToObject(op, "opFuncName", s->func);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(op, "attributes_"), "dataFormat_", "SEN169_FP16");
    in = cJSON_AddArrayToObject(op, "inputLabeledDs");
    for (int i = 0; i < s->nin; i++) {
        snprintf(name, sizeof name, "Tensor%d-idx%d", i, i);
        cJSON_AddItemToArray(in, cJSON_CreateString(name));
    }
    o = cJSON_AddArrayToObject(op, "outputLabeledDs");
    snprintf(name, sizeof name, "Tensor%d-idx%d", s->nin, s->nin);
    cJSON_AddItemToArray(o, cJSON_CreateString(name));
    return op;
}

static cJSON *sdsc_kernel(const kspec *s)
{
    cJSON *root = cJSON_CreateObject(), *t = cJSON_AddObjectToObject(root, s->top);
    int cores = s->sm * s->sn;
    cJSON_AddStringToObject(cJSON_AddObjectToObject(t, "debug_handle_"), "aten_op", s->aten);
    cJSON *w = cJSON_AddObjectToObject(t, "numWkSlicesPerDim_");
    cJSON_AddNumberToObject(w, "mb", s->sm);
    cJSON_AddNumberToObject(w, "out", s->sn);
    cJSON *map = cJSON_AddObjectToObject(t, "coreIdToWkSlice_");
    cJSON *dscs = cJSON_AddArrayToObject(t, "dscs_"), *e = cJSON_CreateObject();
    cJSON_AddItemToArray(dscs, e);
    cJSON *d = cJSON_AddObjectToObject(e, s->func), *ids = cJSON_AddArrayToObject(d, "coreIdsUsed_");
    cJSON_AddNumberToObject(d, "numCoresUsed_", cores);
    for (int c = 0; c < cores; c++) {
        char key[16];
        snprintf(key, sizeof key, "%d", c);
        cJSON *sl = cJSON_AddObjectToObject(map, key);
        cJSON_AddNumberToObject(sl, "mb", c % s->sm); /* mb varies fastest, as torch-spyre's */
        cJSON_AddNumberToObject(sl, "out", c / s->sm);
        cJSON_AddItemToArray(ids, cJSON_CreateNumber(c));
    }
    cJSON *N = cJSON_AddObjectToObject(d, "N_");
    cJSON_AddStringToObject(N, "name_", "n");
    cJSON_AddNumberToObject(N, "mb_", (double)s->m);
    cJSON_AddNumberToObject(N, "out_", (double)s->n);
    cJSON *ss = cJSON_AddObjectToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(d, "dataStageParam_"), "0"), "ss_");
    cJSON_AddNumberToObject(ss, "mb_", (double)(s->m / s->sm));
    cJSON_AddNumberToObject(ss, "out_", (double)(s->n / s->sn));
    cJSON *tree = cJSON_AddArrayToObject(d, "scheduleTree_"), *lds = cJSON_AddArrayToObject(d, "labeledDs_");
    for (int i = 0; i <= s->nin; i++) {
        cJSON_AddItemToArray(tree, alloc_node(s, i));
        cJSON_AddItemToArray(lds, lds_entry(i));
    }
    cJSON_AddItemToArray(cJSON_AddArrayToObject(d, "computeOp_"), compute_op(s));
    return root;
}

/* The DSC object of a kernel (root.TOP.dscs_[0].FUNC). */
static cJSON *dsc_of(cJSON *root)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(root->child, "dscs_"), 0)->child;
}

static void write_json(const char *dir, const char *file, cJSON *root)
{
    char path[1024], *text = cJSON_Print(root);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    tu_write_file(path, text, strlen(text));
    free(text);
    cJSON_Delete(root);
}

static const kspec ADD = {"0_add", "add", "aten.add.Tensor", 2, 64, 256, 2, 2, {-1, -1, -1}, -1};

/* ---- running ---- */

/* Load, build, run and check a kernel directory on chip `config`: the
 * number of outputs that mismatch the reference (-1 on an error). */
static int run_dir(const char *dir, const char *config, void (*verify)(rt_device *, rt_program *))
{
    chip_config cfg;
    tu_config(config, &cfg);
    char err[1024];
    rt_device *dev = rt_open_config(&cfg, err, sizeof err);
    sd_bundle *b = sd_load(dir, &cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_STRING_EQUAL(sd_problems(b), "");
    isa_program *p = sd_build(b, &cfg, NULL, 0, err, sizeof err);
    if (!p)
        fprintf(stderr, "sd_build: %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    CU_ASSERT_EQUAL(rt_fill_inputs(prog, 7, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    rt_check_result *r = NULL;
    int n = 0, bad = rt_check(prog, &r, &n, err, sizeof err);
    if (bad < 0)
        fprintf(stderr, "rt_check: %s\n", err);
    CU_ASSERT(n >= 1);
    free(r);
    sd_free(b);
    if (verify)
        verify(dev, prog);
    rt_close(dev);
    return bad;
}

/* The host copy of input `name` (fp32, as the device got it). */
static const float *host(rt_program *prog, const char *name)
{
    int64_t n;
    const float *v = rt_host_tensor(prog, name, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    return v;
}

/* DL16 keeps 9 fraction bits: each of the inputs and the result is rounded
 * once (relative 2^-10 each), so a sum or product of values in [-1, 1)
 * is within 2^-7 of the exact one. */
#define DL16_SUM_TOL 0x1p-7

static void verify_add(rt_device *dev, rt_program *prog)
{
    (void)dev;
    float *y = malloc(64 * 256 * sizeof *y);
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rt_read_tensor(prog, "arg2", y, err, sizeof err), 0);
    const float *a = host(prog, "arg0"), *b = host(prog, "arg1");
    int bad = 0;
    for (int i = 0; i < 64 * 256; i++)
        bad += fabsf(y[i] - (a[i] + b[i])) > DL16_SUM_TOL;
    CU_ASSERT_EQUAL(bad, 0);
    free(y);
    /* the SDSC's 2 x 2 split: cores 0..3 run the kernel, the others only halt */
    const isa_program *p = rt_program_isa(prog);
    for (int c = 0; c < p->ncores; c++)
        CU_ASSERT_EQUAL(p->cores[c].n > 1, c < 4);
}

static void test_elementwise_add_runs_with_the_sdsc_split_and_matches_the_reference(void)
{
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    write_json(dir, "sdsc_0.json", sdsc_kernel(&ADD));
    CU_ASSERT_EQUAL(run_dir(dir, "spyre", verify_add), 0);
    CU_ASSERT_EQUAL(run_dir(dir, "spyre-4core", NULL), 0);
    tu_rmtree(dir);
}

/* mul into LX at 4096, then add reading it there: the fma of spyre-cli. */
static const kspec MUL_LX = {"0_mul", "mul", "aten.mul.Tensor", 2, 64, 256, 2, 2, {-1, -1, 4096}, -1};
static const kspec ADD_LX = {"1_add", "add", "aten.add.Tensor", 2, 64, 256, 2, 2, {4096, -1, -1}, -9};

static void verify_lx(rt_device *dev, rt_program *prog)
{
    /* core 1 holds rows 32..63, columns 0..127 of a * b at LX 4096 as the
     * SDSC placed it: 2 sticks of 32 rows */
    const uint8_t *lx = sim_lx(rt_sim(dev), 1) + 4096;
    const float *a = host(prog, "arg0"), *b = host(prog, "arg1");
    int bad = 0;
    for (int g = 0; g < 2; g++)
        for (int r = 0; r < 32; r++)
            for (int l = 0; l < 64; l++) {
                uint16_t h;
                memcpy(&h, lx + ((g * 32 + r) * 64 + l) * 2, 2);
                int i = (32 + r) * 256 + g * 64 + l;
                bad += fabsf(isa_dl16_to_f32(h) - a[i] * b[i]) > DL16_SUM_TOL;
            }
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_two_kernels_chain_through_lx_at_the_sdsc_address(void)
{
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    write_json(dir, "sdsc_0.json", sdsc_kernel(&MUL_LX));
    write_json(dir, "sdsc_1.json", sdsc_kernel(&ADD_LX));
    CU_ASSERT_EQUAL(run_dir(dir, "spyre", verify_lx), 0);
    tu_rmtree(dir);
}

static void test_tensor_specs_are_checked_and_host_dtypes_converted(void)
{
    char dir[512], args[1024];
    tu_tmpdir(dir, sizeof dir);
    write_json(dir, "sdsc_0.json", sdsc_kernel(&ADD));
    snprintf(args, sizeof args, "run %s -i 64x256@bf16 -i 64x256@bf16 -o 64x256@bf16 --check", dir);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
    TU_ASSERT_CONTAINS(out, "check arg2:", " ok", "cycles=");
    snprintf(args, sizeof args, "run %s -i 64x256@fp32 -i 64x256@fp32 -o 64x256@fp32 --ones --check", dir);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
    snprintf(args, sizeof args, "run %s -i 64x255@fp16 -i 64x256@fp16 -o 64x256@fp16", dir);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 2);
    TU_ASSERT_CONTAINS(out, "input 0 (arg0): the kernels expect 64x256@fp16, got 64x255@fp16");
    snprintf(args, sizeof args, "run %s -i 64x256@fp16 -o 64x256@fp16", dir);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 2);
    snprintf(args, sizeof args, "run %s -i 64x256@fp8", dir);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 2);
    TU_ASSERT_CONTAINS(out, "is not fp16, bf16 or fp32");
    tu_rmtree(dir);
}

/* ---- a reduction and a matrix product, written the same way ---- */

/* A dim of a tensor: its slices, its per-core extent, whether it holds the
 * stick, whether the tensor reduces it to one coordinate (one element per
 * stick, the sparse result of a reduction). */
typedef struct {
    const char *dim;
    int slices;
    int64_t per;
    int stick, reduced;
} tdim;

static void add_tcoord(cJSON *ci, const tdim *d)
{
    if (!d->reduced) {
        add_coord(ci, d->dim, d->slices, d->per, d->stick);
        return;
    }
    cJSON *c = cJSON_AddObjectToObject(ci, d->dim), *folds;
    cJSON_AddNumberToObject(c, "elemArr", 2);
    folds = cJSON_AddObjectToObject(c, "folds");
    cJSON *fn = cJSON_AddArrayToObject(folds, "dim_prop_func"), *at = cJSON_AddArrayToObject(folds, "dim_prop_attr");
    add_fold(fn, at, "core_fold", 1, 64);
    add_fold(fn, at, "corelet_fold", 1, 0);
    add_fold(fn, at, "row_fold", 1, 0);
    add_fold(fn, at, "elem_arr_1", 1, 64);
    add_fold(fn, at, "elem_arr_0", 64, 0);
}

/* A kernel of one op over `cores` cores whose slices the dims give (the
 * first dim varies fastest); tensors[i] (nd dims each, innermost layout
 * first) in DRAM, or in LX at lx[i] >= 0 (lx may be NULL: all in DRAM);
 * the op reads ins and writes tensor `out`. */
static cJSON *sdsc_op(const char *top, const char *func, const char *unit, const char *aten, const tdim *kdims, int nk,
                      const tdim *const *tensors, const int *nd, int nt, const int *ins, int nin, int out, int sym0,
                      const int *lx)
{
    kspec base = {top, func, aten, 0, 1, 1, 1, 1, {-1, -1, -1}, sym0};
    cJSON *root = sdsc_kernel(&base), *d = dsc_of(root), *t = root->child;
    int cores = 1;
    for (int i = 0; i < nk; i++)
        cores *= kdims[i].slices;
    cJSON *w = cJSON_CreateObject(), *map = cJSON_CreateObject(), *ids = cJSON_CreateArray();
    cJSON *N = cJSON_CreateObject(), *ss = cJSON_CreateObject();
    for (int i = 0; i < nk; i++) {
        char key[32];
        cJSON_AddNumberToObject(w, kdims[i].dim, kdims[i].slices);
        snprintf(key, sizeof key, "%s_", kdims[i].dim);
        cJSON_AddNumberToObject(N, key, (double)(kdims[i].per * kdims[i].slices));
        cJSON_AddNumberToObject(ss, key, (double)kdims[i].per);
    }
    for (int c = 0; c < cores; c++) {
        char key[16];
        snprintf(key, sizeof key, "%d", c);
        cJSON *sl = cJSON_AddObjectToObject(map, key);
        for (int i = 0, q = c; i < nk; q /= kdims[i].slices, i++)
            cJSON_AddNumberToObject(sl, kdims[i].dim, q % kdims[i].slices);
        cJSON_AddItemToArray(ids, cJSON_CreateNumber(c));
    }
    cJSON_ReplaceItemInObject(t, "numWkSlicesPerDim_", w);
    cJSON_ReplaceItemInObject(t, "coreIdToWkSlice_", map);
    cJSON_ReplaceItemInObject(d, "coreIdsUsed_", ids);
    cJSON_ReplaceItemInObject(d, "numCoresUsed_", cJSON_CreateNumber(cores));
    cJSON_ReplaceItemInObject(d, "N_", N);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "dataStageParam_"), "0"), "ss_", ss);
    cJSON *tree = cJSON_CreateArray(), *lds = cJSON_CreateArray();
    for (int i = 0; i < nt; i++) {
        kspec s = base;
        s.sm = s.sn = 1;
        s.sym0 = sym0;
        cJSON *n = alloc_node(&s, 0), *lo = cJSON_CreateArray(), *ci = cJSON_CreateObject();
        char key[32], val[32];
        cJSON_ReplaceItemInObject(n, "ldsIdx_", cJSON_CreateNumber(i));
        cJSON *data = cJSON_CreateObject();
        int in_lx = lx && lx[i] >= 0;
        for (int c = 0; c < cores; c++) {
            snprintf(key, sizeof key, "[%d, 0, 0]", c);
            snprintf(val, sizeof val, "%d", in_lx ? lx[i] : sym0 - i * cores - c);
            cJSON_AddStringToObject(data, key, val);
        }
        cJSON_ReplaceItemInObject(n, "component_", cJSON_CreateString(in_lx ? "lx" : "hbm"));
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(n, "startAddressCoreCorelet_"), "data_", data);
        for (int j = 0; j < nd[i]; j++) {
            cJSON_AddItemToArray(lo, cJSON_CreateString(tensors[i][j].dim));
            add_tcoord(ci, &tensors[i][j]);
        }
        cJSON_ReplaceItemInObject(n, "layoutDimOrder_", lo);
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(n, "coordinates_"), "coordInfo", ci);
        cJSON_AddItemToArray(tree, n);
        cJSON_AddItemToArray(lds, lds_entry(i));
    }
    cJSON_ReplaceItemInObject(d, "scheduleTree_", tree);
    cJSON_ReplaceItemInObject(d, "labeledDs_", lds);
    cJSON *op = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "computeOp_"), 0), *in = cJSON_CreateArray(), *o = cJSON_CreateArray();
    char name[32];
    cJSON_ReplaceItemInObject(op, "exUnit", cJSON_CreateString(unit));
    for (int i = 0; i < nin; i++) {
        snprintf(name, sizeof name, "Tensor%d-idx%d", ins[i], ins[i]);
        cJSON_AddItemToArray(in, cJSON_CreateString(name));
    }
    snprintf(name, sizeof name, "Tensor%d-idx%d", out, out);
    cJSON_AddItemToArray(o, cJSON_CreateString(name));
    cJSON_ReplaceItemInObject(op, "inputLabeledDs", in);
    cJSON_ReplaceItemInObject(op, "outputLabeledDs", o);
    return root;
}

/* mean over the last dim of a 64 x 256 tensor, rows in 4 slices, keepdim:
 * the result has one element per row (a stick each), scaled by the SDSC's
 * constant 1/256 (DL16 bits 23 << 9: exponent 23 - 31 = -8). */
static void verify_mean(rt_device *dev, rt_program *prog)
{
    (void)dev;
    float y[64];
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rt_read_tensor(prog, "arg1", y, err, sizeof err), 0);
    const float *a = host(prog, "arg0");
    for (int r = 0; r < 64; r++) {
        double s = 0;
        for (int c = 0; c < 256; c++)
            s += a[r * 256 + c];
        /* fp32 sum of DL16 inputs, then two DL16 roundings of a value below 1 */
        CU_ASSERT(fabs(y[r] - s / 256) < 0x1p-8);
    }
}

static void test_a_mean_over_rows_runs_on_the_sfp_with_the_sdsc_constant(void)
{
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    const tdim k[] = {{"mb", 4, 16, 0, 0}, {"out", 1, 256, 1, 0}};
    const tdim in[] = {{"mb", 4, 16, 0, 0}, {"out", 1, 256, 1, 0}};
    const tdim res[] = {{"mb", 4, 16, 0, 0}, {"out", 1, 256, 1, 1}};
    const tdim *t[] = {in, res};
    int nd[] = {2, 2}, ins[] = {0, 1};
    cJSON *root = sdsc_op("0_mean", "mean", "sfp", "aten.mean.dim", k, 2, t, nd, 2, ins, 2, 1, -1, NULL);
    cJSON *ci = cJSON_CreateObject(), *c0 = cJSON_AddObjectToObject(ci, "0");
    cJSON_AddStringToObject(c0, "dataFormat_", "SEN169_FP16");
    cJSON_AddStringToObject(c0, "name_", "scaling_factor");
    cJSON *v = cJSON_AddArrayToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(c0, "data_"), "data_"), "[0, 0, 0]");
    cJSON_AddItemToArray(v, cJSON_CreateString("11776"));
    cJSON_AddItemToObject(dsc_of(root), "constantInfo_", ci);
    write_json(dir, "sdsc_0.json", root);
    CU_ASSERT_EQUAL(run_dir(dir, "spyre", verify_mean), 0);
    tu_rmtree(dir);
}

/* C = A x B, 64 x 128 by 128 x 128, in a 2 x 2 grid of cores (M by N). */
static void verify_mm(rt_device *dev, rt_program *prog)
{
    (void)dev;
    static float y[64 * 128];
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rt_read_tensor(prog, "arg2", y, err, sizeof err), 0);
    const float *a = host(prog, "arg0"), *b = host(prog, "arg1");
    int bad = 0;
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < 128; j++) {
            double s = 0, mag = 0;
            for (int q = 0; q < 128; q++) {
                s += (double)a[i * 128 + q] * b[q * 128 + j];
                mag += fabs((double)a[i * 128 + q] * b[q * 128 + j]);
            }
            /* DL16 inputs (2^-10 each), fp32 sums, a DL16 result (2^-10) */
            bad += fabs(y[i * 128 + j] - s) > 0x1p-8 * mag + 0x1p-10 * fabs(s);
        }
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_a_matrix_product_runs_on_the_pt_in_the_sdsc_grid(void)
{
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    const tdim k[] = {{"mb", 2, 32, 0, 0}, {"out", 2, 64, 1, 0}, {"in", 1, 128, 0, 0}};
    const tdim A[] = {{"mb", 2, 32, 0, 0}, {"in", 1, 128, 1, 0}};
    const tdim B[] = {{"in", 1, 128, 0, 0}, {"out", 2, 64, 1, 0}};
    const tdim C[] = {{"mb", 2, 32, 0, 0}, {"out", 2, 64, 1, 0}};
    const tdim *t[] = {A, B, C};
    int nd[] = {2, 2, 2}, ins[] = {0, 1};
    write_json(dir, "sdsc_0.json",
               sdsc_op("0_batchmatmul", "batchmatmul", "pt", "aten.mm.default", k, 3, t, nd, 3, ins, 2, 2, -1, NULL));
    CU_ASSERT_EQUAL(run_dir(dir, "spyre", verify_mm), 0);
    tu_rmtree(dir);
}

/* a + b over 4 x 64 x 128 (mb, x, out) in torch-spyre's default 3-D
 * layout, layoutDimOrder_ [mb, out, x]: x outermost, then the sticks of
 * out, then mb, then the 64 lanes (add_3d's layout), x and out in 2
 * slices each. */
static void verify_add_3d(rt_device *dev, rt_program *prog)
{
    (void)dev;
    static float y[4 * 64 * 128];
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rt_read_tensor(prog, "arg2", y, err, sizeof err), 0);
    const float *a = host(prog, "arg0"), *b = host(prog, "arg1");
    int bad = 0, misplaced = 0;
    for (int i = 0; i < 4 * 64 * 128; i++)
        bad += fabsf(y[i] - (a[i] + b[i])) > DL16_SUM_TOL;
    CU_ASSERT_EQUAL(bad, 0);
    /* the inputs lie in device DRAM where that layout puts them (the run
     * above matching proves the kernel's loads read them there): element
     * (m, x, o) at x * (2 sticks * 4 * 128) + (o / 64) * (4 * 128) + m * 128 + (o % 64) * 2 */
    const isa_tensor *T = &rt_program_isa(prog)->tensors[0];
    for (int64_t m = 0; m < 4; m++)
        for (int64_t x = 0; x < 64; x++)
            for (int64_t o = 0; o < 128; o++) {
                int64_t idx[3] = {m, x, o};
                misplaced += isa_layout_offset(T, 128, idx) != (uint64_t)(x * 1024 + o / 64 * 512 + m * 128 + o % 64 * 2);
            }
    CU_ASSERT_EQUAL(misplaced, 0);
}

static void test_a_3d_tensor_lies_in_the_layout_its_sdsc_declares(void)
{
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    const tdim k[] = {{"mb", 1, 4, 0, 0}, {"x", 2, 32, 0, 0}, {"out", 2, 64, 1, 0}};
    const tdim T[] = {{"mb", 1, 4, 0, 0}, {"out", 2, 64, 1, 0}, {"x", 2, 32, 0, 0}};
    const tdim *t[] = {T, T, T};
    int nd[] = {3, 3, 3}, ins[] = {0, 1};
    write_json(dir, "sdsc_0.json", sdsc_op("0_add", "add", "sfp", "aten.add.Tensor", k, 3, t, nd, 3, ins, 2, 2, -1, NULL));
    CU_ASSERT_EQUAL(run_dir(dir, "spyre", verify_add_3d), 0);
    tu_rmtree(dir);
}

/* softmax as torch-spyre splits it: a copy of x into LX, then max, sub,
 * exp (in place), sum and realdiv through LX, the row's max and sum
 * broadcast; 64 x 256, rows in 4 slices. */
static void verify_softmax(rt_device *dev, rt_program *prog)
{
    (void)dev;
    static float y[64 * 256];
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rt_read_tensor(prog, "arg1", y, err, sizeof err), 0);
    const float *x = host(prog, "arg0");
    int bad = 0;
    for (int r = 0; r < 64; r++) {
        double m = -1e30, sum = 0;
        for (int c = 0; c < 256; c++)
            m = fmax(m, x[r * 256 + c]);
        for (int c = 0; c < 256; c++)
            sum += exp(x[r * 256 + c] - m);
        /* exp and the quotient each rounded to DL16 (2^-10), the sum's terms too */
        for (int c = 0; c < 256; c++) {
            double want = exp(x[r * 256 + c] - m) / sum;
            bad += fabs(y[r * 256 + c] - want) > 0x1p-7 * want;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_softmax_split_into_six_kernels_chains_through_lx(void)
{
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    const tdim k[] = {{"mb", 4, 16, 0, 0}, {"out", 1, 256, 1, 0}};
    const tdim full[] = {{"mb", 4, 16, 0, 0}, {"out", 1, 256, 1, 0}};
    const tdim row[] = {{"mb", 4, 16, 0, 0}, {"out", 1, 256, 1, 1}};
    const tdim *ff[] = {full, full}, *fr[] = {full, row}, *frf[] = {full, row, full};
    int nd[] = {2, 2, 2}, in0[] = {0}, in01[] = {0, 1};
    const int copy[] = {-1, 0}, max[] = {0, 8192}, sub[] = {0, 8192, 16384}, ex[] = {16384, 16384},
              sum[] = {16384, 24576}, div[] = {16384, 24576, -1};
    const char *sm = "aten._softmax.default", *dirs[] = {"sdsc_0.json", "sdsc_1.json", "sdsc_2.json",
                                                         "sdsc_3.json", "sdsc_4.json", "sdsc_5.json"};
    cJSON *ks[6] = {
        sdsc_op("0_identity", "identity", "sfp", "", k, 2, ff, nd, 2, in0, 1, 1, -1, copy),
        sdsc_op("1_max", "max", "sfp", sm, k, 2, fr, nd, 2, in01, 2, 1, -5, max),
        sdsc_op("2_sub", "sub", "sfp", sm, k, 2, frf, nd, 3, in01, 2, 2, -5, sub),
        sdsc_op("3_exp", "exp", "sfp", sm, k, 2, ff, nd, 2, in0, 1, 1, -5, ex),
        sdsc_op("4_sum", "sum", "sfp", sm, k, 2, fr, nd, 2, in01, 2, 1, -5, sum),
        sdsc_op("5_realdiv", "realdiv", "sfp", sm, k, 2, frf, nd, 3, in01, 2, 2, -5, div),
    };
    /* the copy names no ATen op, as torch-spyre's */
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(ks[0]->child, "debug_handle_"), "aten_op", cJSON_CreateNull());
    for (int i = 0; i < 6; i++)
        write_json(dir, dirs[i], ks[i]);
    CU_ASSERT_EQUAL(run_dir(dir, "spyre", verify_softmax), 0);
    tu_rmtree(dir);
}

/* ---- division: any sign, and what a zero divisor gives ---- */

static const kspec DIV = {"0_realdiv", "realdiv", "aten.div.Tensor", 2, 64, 256, 2, 2, {-1, -1, -1}, -1};

/* Run the DIV kernel on a (random in [-1, 1)) and b = b_of(i); the check's
 * line of the output into line, its verdict returned (0 ok). */
static int run_div(float (*b_of)(int64_t), char *line, size_t len, int *bad)
{
    char dir[512], err[1024];
    tu_tmpdir(dir, sizeof dir);
    write_json(dir, "sdsc_0.json", sdsc_kernel(&DIV));
    chip_config cfg;
    tu_config("spyre", &cfg);
    rt_device *dev = rt_open_config(&cfg, err, sizeof err);
    sd_bundle *b = sd_load(dir, &cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    isa_program *p = sd_build(b, &cfg, NULL, 0, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    CU_ASSERT_EQUAL(rt_fill_inputs(prog, 3, err, sizeof err), 0);
    static float v[64 * 256], y[64 * 256];
    for (int64_t i = 0; i < 64 * 256; i++)
        v[i] = b_of(i);
    CU_ASSERT_EQUAL(rt_set_input(prog, "arg1", v, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    rt_check_result *r = NULL;
    int n = 0, verdict = rt_check(prog, &r, &n, err, sizeof err);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    rt_check_format(&r[0], line, len);
    /* |a / b| <= 2 and a, b and the quotient are each rounded to DL16
     * once (relative 2^-10): within 2 * 3 * 2^-10 < 2^-7 of a / b */
    CU_ASSERT_EQUAL_FATAL(rt_read_tensor(prog, "arg2", y, err, sizeof err), 0);
    const float *a = host(prog, "arg0"), *d = host(prog, "arg1");
    *bad = 0;
    for (int64_t i = 0; i < 64 * 256; i++)
        *bad += d[i] != 0 && !(fabsf(y[i] - a[i] / d[i]) <= DL16_SUM_TOL);
    free(r);
    sd_free(b);
    rt_close(dev);
    tu_rmtree(dir);
    return verdict;
}

/* Divisors of both signs, 0.5 to 1.5 in magnitude, the sign alternating
 * every 3 elements (so every stick holds both). */
static float mixed_sign(int64_t i) { return (float)((i / 3) % 2 ? -1 : 1) * (0.5f + (float)(i % 101) / 101.0f); }
/* The same with one exact zero. */
static float one_zero(int64_t i) { return i == 1000 ? 0.0f : mixed_sign(i); }

static void test_division_is_exact_for_divisors_of_either_sign(void)
{
    char line[1024];
    int bad;
    CU_ASSERT_EQUAL(run_div(mixed_sign, line, sizeof line, &bad), 0);
    CU_ASSERT_EQUAL(bad, 0);
    TU_ASSERT_CONTAINS(line, " ok");
}

/* x / 0 is an infinity in PyTorch; DL16 has none (its NINF stands for
 * infinities and NaN and reads back as NaN): the check fails that element
 * and says why, every other element still matches. */
static void test_a_zero_divisor_is_a_mismatch_that_names_dl16s_missing_infinity(void)
{
    char line[1024];
    int bad;
    CU_ASSERT_EQUAL(run_div(one_zero, line, sizeof line, &bad), 1);
    CU_ASSERT_EQUAL(bad, 0);
    TU_ASSERT_CONTAINS(line, "nan=1", "worst[3,232]=nan ref=", "(DL16 has no infinity: NINF reads back as NaN) MISMATCH");
}

/* ---- data stages smaller than the slice ---- */

/* Does some dma.st of core 0 run while a dma.ld of core 0 runs? (the
 * instruction trace's slices: ts and dur of each) */
static int store_beside_load(const char *trace_path)
{
    size_t n;
    char *text = tu_read_file(trace_path, &n);
    cJSON *root = cJSON_Parse(text), *ev;
    free(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    double ld[4096][2], st[4096][2];
    int nld = 0, nst = 0, both = 0;
    cJSON_ArrayForEach(ev, cJSON_GetObjectItem(root, "traceEvents"))
    {
        const cJSON *name = cJSON_GetObjectItem(ev, "name"), *pid = cJSON_GetObjectItem(ev, "pid");
        const cJSON *ts = cJSON_GetObjectItem(ev, "ts"), *dur = cJSON_GetObjectItem(ev, "dur");
        if (!cJSON_IsString(name) || !cJSON_IsNumber(pid) || pid->valueint != 0 || !ts || !dur)
            continue;
        int isld = !strcmp(name->valuestring, "dma.ld"), isst = !strcmp(name->valuestring, "dma.st");
        double(*v)[2] = isld && nld < 4096 ? &ld[nld++] : isst && nst < 4096 ? &st[nst++] : NULL;
        if (v)
            (*v)[0] = ts->valuedouble, (*v)[1] = ts->valuedouble + dur->valuedouble;
    }
    for (int i = 0; i < nld; i++)
        for (int j = 0; j < nst; j++)
            both |= st[j][0] < ld[i][1] && ld[i][0] < st[j][1];
    cJSON_Delete(root);
    return both;
}

/* The kernel ks with data stages of mb_ x out_: the check's verdict, the
 * run's cycles, and whether core 0 stored while it loaded. */
static int run_staged(const kspec *ks, int64_t mb, int64_t outn, double *cycles, int *overlap)
{
    char dir[512], err[1024], trace[1024];
    tu_tmpdir(dir, sizeof dir);
    cJSON *root = sdsc_kernel(ks);
    cJSON *ss = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(dsc_of(root), "dataStageParam_"), "0"), "ss_");
    cJSON_ReplaceItemInObject(ss, "mb_", cJSON_CreateNumber((double)mb));
    cJSON_ReplaceItemInObject(ss, "out_", cJSON_CreateNumber((double)outn));
    write_json(dir, "sdsc_0.json", root);
    chip_config cfg;
    tu_config("spyre", &cfg);
    rt_device *dev = rt_open_config(&cfg, err, sizeof err);
    sim_options opt = {.values = 1, .detect_races = 1, .trace = SIM_TRACE_INSN};
    rt_set_options(dev, &opt);
    sd_bundle *b = sd_load(dir, &cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_STRING_EQUAL(sd_problems(b), "");
    isa_program *p = sd_build(b, &cfg, NULL, 0, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    CU_ASSERT_EQUAL(rt_fill_inputs(prog, 5, err, sizeof err), 0);
    rt_run_result *res = calloc(1, sizeof *res);
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, res), 0);
    *cycles = res->stats.cycles;
    snprintf(trace, sizeof trace, "%s/trace.json", dir);
    CU_ASSERT_EQUAL_FATAL(sim_write_trace(rt_sim(dev), rt_program_isa(prog), trace, err, sizeof err), 0);
    *overlap = store_beside_load(trace);
    rt_check_result *r = NULL;
    int n = 0, bad = rt_check(prog, &r, &n, err, sizeof err);
    CU_ASSERT_EQUAL(n, 1);
    free(r);
    free(res);
    sd_free(b);
    rt_close(dev);
    tu_rmtree(dir);
    return bad;
}

/* 4 stages of 8 rows (of a core's 32 x 128 slice): values match the
 * reference and core 0 stores a stage's result while it loads the next
 * stage; with one stage of the whole slice it never does. */
static void test_data_stages_overlap_loads_and_stores(void)
{
    double staged, whole;
    int overlap_staged, overlap_whole;
    CU_ASSERT_EQUAL(run_staged(&ADD, 8, 128, &staged, &overlap_staged), 0);
    CU_ASSERT_EQUAL(run_staged(&ADD, 32, 128, &whole, &overlap_whole), 0);
    if (getenv("SDSC_TEST_VERBOSE"))
        fprintf(stderr, "cycles: staged %.0f, whole %.0f\n", staged, whole);
    CU_ASSERT(overlap_staged);
    CU_ASSERT(!overlap_whole);
}

/* ---- bundle.mlir: the order of the kernels and the arguments ---- */

/* One sdsc_execute of a bundle: the file, its kernel, and the function
 * argument of each of its tensors (-1: an LX tensor). */
typedef struct {
    const char *file;
    const kspec *s;
    int fa[3];
} bexec;

/* Where torch-spyre's default layout of an M x N fp16 tensor (sticks of
 * 64 columns, outermost; the rows inside each; 128-byte sticks) puts core
 * c's slice of the kspec's split: what bundle.mlir passes the kernel. */
static int64_t slice_offset(const kspec *s, int c)
{
    int64_t row = (c % s->sm) * (s->m / s->sm), col = (c / s->sm) * (s->n / s->sn);
    return col / 64 * s->m * 128 + row * 128;
}

static size_t bputs(char *buf, size_t len, size_t n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static size_t bputs(char *buf, size_t len, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (n < len)
        n += (size_t)vsnprintf(buf + n, len - n, fmt, ap);
    va_end(ap);
    return n;
}

/* bundle.mlir in the sdscbundle dialect: nfargs arguments, each core's
 * slice address an argument plus its offset, then the executes in order. */
static void bundle_text(char *buf, size_t len, const bexec *ex, int n, int nfargs)
{
    size_t w = bputs(buf, len, 0, "module {\n\tfunc.func @sdsc_bundle(");
    for (int a = 0; a < nfargs; a++)
        w = bputs(buf, len, w, "%s%%arg_%d_base_addr: !sdscbundle.input_arg<index>", a ? ", " : "", a);
    w = bputs(buf, len, w, ") {\n");
    for (int a = 0; a < nfargs; a++)
        w = bputs(buf, len, w,
                  "\t\t%%arg_%d = sdscbundle.input_arg_extract value from %%arg_%d_base_addr : "
                  "!sdscbundle.input_arg<index> -> index\n", a, a);
    for (int e = 0; e < n; e++) {
        const kspec *s = ex[e].s;
        int cores = s->sm * s->sn;
        for (int i = 0; i <= s->nin; i++)
            for (int c = 0; ex[e].fa[i] >= 0 && c < cores; c++)
                w = bputs(buf, len, w, "\t\t%%o%d_%d_%d = arith.constant %lld : index\n"
                          "\t\t%%p%d_%d_%d = arith.addi %%arg_%d, %%o%d_%d_%d : index\n",
                          e, i, c, (long long)slice_offset(s, c), e, i, c, ex[e].fa[i], e, i, c);
        w = bputs(buf, len, w, "\t\tsdscbundle.sdsc_execute (");
        int first = 1;
        for (int i = 0; i <= s->nin; i++)
            for (int c = 0; ex[e].fa[i] >= 0 && c < cores; c++, first = 0)
                w = bputs(buf, len, w, "%s%%p%d_%d_%d", first ? "" : ", ", e, i, c);
        w = bputs(buf, len, w, ") {sdsc_filename=\"%s\", \"symbol_ids\"=[", ex[e].file);
        first = 1;
        for (int i = 0; i <= s->nin; i++)
            for (int c = 0; ex[e].fa[i] >= 0 && c < cores; c++, first = 0)
                w = bputs(buf, len, w, "%s%d", first ? "" : ", ", s->sym0 - i * cores - c);
        w = bputs(buf, len, w, "]}\n");
    }
    bputs(buf, len, w, "\t\treturn\n\t}\n}\n");
}

static void write_text(const char *dir, const char *file, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    tu_write_file(path, text, strlen(text));
}

static char btext[1 << 16];

/* sdsc_0.json is the add and sdsc_1.json the mul it reads from LX: only
 * bundle.mlir, executing sdsc_1 first, runs them in the order they need
 * (in the order of N the add would read LX the mul has not written). */
static void test_bundle_mlir_gives_the_order_of_the_kernels(void)
{
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    write_json(dir, "sdsc_0.json", sdsc_kernel(&ADD_LX));
    write_json(dir, "sdsc_1.json", sdsc_kernel(&MUL_LX));
    const bexec ex[] = {{"sdsc_1.json", &MUL_LX, {0, 1, -1}}, {"sdsc_0.json", &ADD_LX, {-1, 2, 3}}};
    bundle_text(btext, sizeof btext, ex, 2, 4);
    write_text(dir, "bundle.mlir", btext);
    CU_ASSERT_EQUAL(run_dir(dir, "spyre", verify_lx), 0);
    tu_rmtree(dir);
}

static const kspec SUB = {"0_sub", "sub", "aten.sub.Tensor", 2, 64, 256, 2, 2, {-1, -1, -1}, -1};

/* The subtrahend bound to the function's argument 0: it becomes arg0. */
static void verify_sub_swapped(rt_device *dev, rt_program *prog)
{
    (void)dev;
    float *y = malloc(64 * 256 * sizeof *y);
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rt_read_tensor(prog, "arg2", y, err, sizeof err), 0);
    const float *b = host(prog, "arg0"), *a = host(prog, "arg1");
    int bad = 0;
    for (int i = 0; i < 64 * 256; i++)
        bad += fabsf(y[i] - (a[i] - b[i])) > DL16_SUM_TOL;
    CU_ASSERT_EQUAL(bad, 0);
    free(y);
}

static void test_bundle_mlir_gives_the_order_of_the_arguments(void)
{
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    write_json(dir, "sdsc_0.json", sdsc_kernel(&SUB));
    const bexec ex[] = {{"sdsc_0.json", &SUB, {1, 0, 2}}};
    bundle_text(btext, sizeof btext, ex, 1, 3);
    write_text(dir, "bundle.mlir", btext);
    CU_ASSERT_EQUAL(run_dir(dir, "spyre", verify_sub_swapped), 0);
    tu_rmtree(dir);
}

/* The problems of the ADD kernel with bundle text (spyre check agrees). */
static const char *check_bundle(const char *text)
{
    char dir[512], err[256], args[1024];
    tu_tmpdir(dir, sizeof dir);
    write_json(dir, "sdsc_0.json", sdsc_kernel(&ADD));
    write_text(dir, "bundle.mlir", text);
    chip_config cfg;
    tu_config("spyre", &cfg);
    sd_bundle *b = sd_load(dir, &cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    snprintf(problems, sizeof problems, "%s", sd_problems(b));
    snprintf(args, sizeof args, "check %s", dir);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), sd_nproblems(b) ? 2 : 0);
    isa_program_free(sd_build(b, &cfg, NULL, 0, err, sizeof err));
    sd_free(b);
    tu_rmtree(dir);
    return problems;
}

/* Replace the first `from` in btext by `to`. */
static void mutate(const char *from, const char *to)
{
    char *at = strstr(btext, from), rest[sizeof btext];
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    snprintf(rest, sizeof rest, "%s", at + strlen(from));
    snprintf(at, sizeof btext - (size_t)(at - btext), "%s%s", to, rest);
}

/* Each disagreement between bundle.mlir and the JSON is one line naming
 * bundle.mlir:LINE. */
static void test_bundle_mlir_disagreeing_with_the_json_is_refused(void)
{
    const bexec ex[] = {{"sdsc_0.json", &ADD, {0, 1, 2}}};
    bundle_text(btext, sizeof btext, ex, 1, 3);
    CU_ASSERT_STRING_EQUAL(check_bundle(btext), "");
    /* core 1 (rows 32..63 of column stick 0) lies at + 32 * 128 = 4096: line 9 adds it */
    mutate("%o0_0_1 = arith.constant 4096", "%o0_0_1 = arith.constant 4224");
    TU_ASSERT_CONTAINS(check_bundle(btext), "bundle.mlir:9: binds Tensor0 of sdsc_0.json on core 1 at %arg_0_base_addr "
                                            "+ 4224, but its layout (layoutDimOrder_) puts that core's slice at + 4096");
    bundle_text(btext, sizeof btext, ex, 1, 3);
    mutate("sdsc_0.json", "sdsc_9.json");
    TU_ASSERT_CONTAINS(check_bundle(btext), "sdsc_execute of sdsc_9.json, which the directory does not hold",
                       "bundle.mlir:1: never executes sdsc_0.json, which the directory holds");
    bundle_text(btext, sizeof btext, ex, 1, 3);
    mutate("=[-1, ", "=[");
    TU_ASSERT_CONTAINS(check_bundle(btext), "12 operands but 11 symbol_ids");
    bundle_text(btext, sizeof btext, ex, 1, 3);
    mutate("=[-1, -2", "=[-1, -99");
    TU_ASSERT_CONTAINS(check_bundle(btext), "symbol_ids[1] names no DRAM slice of sdsc_0.json",
                       "binds no address to Tensor0 of sdsc_0.json on core 1 (symbol -2)");
}

/* An op outside the subset read (or a kernel run twice) is not a
 * violation: spyre check passes it, spyre run refuses it naming the line. */
static void test_bundle_mlir_beyond_the_subset_read_is_refused_by_run_not_check(void)
{
    char dir[512], args[1024];
    const bexec ex[] = {{"sdsc_0.json", &ADD, {0, 1, 2}}};
    bundle_text(btext, sizeof btext, ex, 1, 3);
    mutate("%p0_0_0 = arith.addi", "%p0_0_0 = arith.muli");
    CU_ASSERT_STRING_EQUAL(check_bundle(btext), "");
    tu_tmpdir(dir, sizeof dir);
    write_json(dir, "sdsc_0.json", sdsc_kernel(&ADD));
    write_text(dir, "bundle.mlir", btext);
    snprintf(args, sizeof args, "run %s", dir);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 2);
    TU_ASSERT_CONTAINS(out, "bundle.mlir:7: arith.muli: not an op of the sdscbundle programs read", "not supported yet");
    tu_rmtree(dir);
}

/* Every prefix of a valid bundle.mlir, and bytes of it overwritten, are
 * read without a crash; a cut file is a problem, never silence. */
static void test_broken_bundle_mlir_never_crashes_the_reader(void)
{
    const bexec ex[] = {{"sdsc_0.json", &ADD, {0, 1, 2}}};
    bundle_text(btext, sizeof btext, ex, 1, 3);
    char *text = strdup(btext);
    size_t n = strlen(text);
    int quiet = 0;
    for (size_t cut = 0; cut + 8 < n; cut += 97) {
        char m[sizeof btext];
        snprintf(m, sizeof m, "%s", text);
        if (cut % 2)
            m[cut] = "%{}[\",:-9a"[cut % 10];
        else
            m[cut] = 0;
        quiet += !(cut % 2) && !*check_bundle(m);
    }
    CU_ASSERT_EQUAL(quiet, 0);
    free(text);
}

/* ---- spyre check: one mutation per rule ---- */


/* Write the kernels (k1 may be NULL) to a fresh directory, read them for
 * chip `config`; problems gets the lines.  `spyre check` must agree: exit
 * 2 with the same lines, or 0 when there are none. */
static const char *check_kernels(const char *config, cJSON *k0, cJSON *k1)
{
    char dir[512], err[256], args[1024];
    tu_tmpdir(dir, sizeof dir);
    write_json(dir, "sdsc_0.json", k0);
    if (k1)
        write_json(dir, "sdsc_1.json", k1);
    chip_config cfg;
    tu_config(config, &cfg);
    sd_bundle *b = sd_load(dir, &cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    snprintf(problems, sizeof problems, "%s", sd_problems(b));
    snprintf(args, sizeof args, "check %s --config %s", dir, config);
    int rc = tu_spyre(args, out, sizeof out);
    if (getenv("SDSC_TEST_VERBOSE"))
        fprintf(stderr, "%s", problems);
    CU_ASSERT_EQUAL(rc, sd_nproblems(b) ? 2 : 0);
    if (sd_nproblems(b))
        TU_ASSERT_CONTAINS(out, problems);
    sd_free(b);
    tu_rmtree(dir);
    return problems;
}

static void test_a_valid_sdsc_passes_the_check(void)
{
    CU_ASSERT_STRING_EQUAL(check_kernels("spyre", sdsc_kernel(&ADD), NULL), "");
    CU_ASSERT_STRING_EQUAL(check_kernels("spyre", sdsc_kernel(&MUL_LX), sdsc_kernel(&ADD_LX)), "");
}

static void test_more_than_8_tensors_break_the_tensor_count_cap(void)
{
    cJSON *k = sdsc_kernel(&ADD), *d = dsc_of(k);
    for (int i = 3; i < 10; i++) {
        kspec s = ADD;
        cJSON *l = lds_entry(0), *n = alloc_node(&s, 0);
        char name[16];
        snprintf(name, sizeof name, "Tensor%d", i);
        cJSON_ReplaceItemInObject(l, "dsName_", cJSON_CreateString(name));
        cJSON_ReplaceItemInObject(l, "ldsIdx_", cJSON_CreateNumber(i));
        cJSON_ReplaceItemInObject(n, "ldsIdx_", cJSON_CreateNumber(i));
        cJSON_AddItemToArray(cJSON_GetObjectItem(d, "labeledDs_"), l);
        cJSON_AddItemToArray(cJSON_GetObjectItem(d, "scheduleTree_"), n);
    }
    TU_ASSERT_CONTAINS(check_kernels("spyre", k, NULL),
                       "sdsc_0.json: 0_add.dscs_[0].add.labeledDs_: 10 tensors, more than 8 (RFC 0552");
}

static void test_an_lx_tensor_past_the_usable_lx_breaks_lx_capacity(void)
{
    kspec s = ADD;
    s.lx[2] = 1625344 - 1024; /* spyre.cfg's lx_usable_bytes, less 1 KB: the 8 KB block (32 x 128 fp16) overflows */
    TU_ASSERT_CONTAINS(check_kernels("spyre", sdsc_kernel(&s), NULL),
                       "sdsc_0.json: 0_add.dscs_[0].add.scheduleTree_[2]: Tensor2: core 0's 8192 bytes at LX 1624320 "
                       "pass the 1625344 bytes of LX");
}

static void test_a_slice_spanning_over_256_mb_breaks_the_address_span(void)
{
    kspec s = ADD;
    s.m = 1 << 21; /* one core's 2^21 rows of 4 sticks span 1 GB */
    s.sm = s.sn = 1;
    TU_ASSERT_CONTAINS(check_kernels("spyre", sdsc_kernel(&s), NULL),
                       "sdsc_0.json: 0_add.dscs_[0].add.scheduleTree_[0]: Tensor0: one core's slice spans 1073741824 "
                       "bytes of DRAM, more than the 268435456",
                       "more than the 1625344 the chip gives");
}

static void test_two_cores_on_one_slice_break_exactly_once_coverage(void)
{
    cJSON *k = sdsc_kernel(&ADD);
    cJSON *map = cJSON_GetObjectItem(k->child, "coreIdToWkSlice_");
    cJSON_ReplaceItemInObject(map, "1", cJSON_Duplicate(cJSON_GetObjectItem(map, "0"), 1));
    TU_ASSERT_CONTAINS(check_kernels("spyre", k, NULL),
                       "sdsc_0.json: 0_add.coreIdToWkSlice_.1: the same work slice as core 0");
    /* a core fold that skips half of the rows */
    k = sdsc_kernel(&ADD);
    cJSON *mb = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(
                                        cJSON_GetObjectItem(dsc_of(k), "scheduleTree_"), 0), "coordinates_"), "coordInfo"), "mb");
    cJSON *af = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(mb, "folds"), "dim_prop_func"), 0), "Affine");
    cJSON_ReplaceItemInObject(af, "alpha_", cJSON_CreateNumber(64));
    TU_ASSERT_CONTAINS(check_kernels("spyre", k, NULL),
                       "scheduleTree_[0]: Tensor0: mb's core fold (factor 2, alpha 64) and per-core extent 32 do not cover");
    /* 3 slices of 64 rows */
    k = sdsc_kernel(&ADD);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(k->child, "numWkSlicesPerDim_"), "mb", cJSON_CreateNumber(3));
    TU_ASSERT_CONTAINS(check_kernels("spyre", k, NULL),
                       "sdsc_0.json: 0_add.numWkSlicesPerDim_: dimension mb of size 64 is not split into a whole number of slices (3)");
    /* a data stage of 5 rows in a slice of 32 */
    k = sdsc_kernel(&ADD);
    cJSON *ss = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(dsc_of(k), "dataStageParam_"), "0"), "ss_");
    cJSON_ReplaceItemInObject(ss, "mb_", cJSON_CreateNumber(5));
    TU_ASSERT_CONTAINS(check_kernels("spyre", k, NULL),
                       "sdsc_0.json: 0_add.dscs_[0].add.dataStageParam_: the data stage of mb (5) does not divide its slice of 32");
}

static void test_a_core_the_chip_lacks_is_refused(void)
{
    kspec s = ADD;
    s.sm = 4;
    s.sn = 2; /* 8 cores on the 4-core chip */
    TU_ASSERT_CONTAINS(check_kernels("spyre-4core", sdsc_kernel(&s), NULL),
                       "sdsc_0.json: 0_add.coreIdToWkSlice_.4: core 4 does not exist on spyre-4core (4 cores)");
}

static void test_lx_tensors_must_be_read_as_their_producer_wrote_them(void)
{
    /* nothing wrote LX 4096 */
    TU_ASSERT_CONTAINS(check_kernels("spyre", sdsc_kernel(&ADD_LX), NULL),
                       "sdsc_0.json: 1_add.dscs_[0].add.scheduleTree_[0]: Tensor0: read from LX 4096 before any kernel writes it");
    /* the reader's layout swaps the dims */
    cJSON *k1 = sdsc_kernel(&ADD_LX);
    cJSON *lo = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(dsc_of(k1), "scheduleTree_"), 0), "layoutDimOrder_");
    cJSON_ReplaceItemInArray(lo, 0, cJSON_CreateString("out"));
    cJSON_ReplaceItemInArray(lo, 1, cJSON_CreateString("mb"));
    TU_ASSERT_CONTAINS(check_kernels("spyre", sdsc_kernel(&MUL_LX), k1),
                       "sdsc_1.json: 1_add.dscs_[0].add.scheduleTree_[0]: Tensor0: read from LX with another layout, "
                       "cores or format than sdsc_0.json Tensor2 wrote it");
}

static void test_the_form_of_a_file_is_checked_with_json_paths(void)
{
    cJSON *k = sdsc_kernel(&ADD);
    cJSON_DeleteItemFromObject(dsc_of(k), "N_");
    TU_ASSERT_CONTAINS(check_kernels("spyre", k, NULL), "sdsc_0.json: 0_add.dscs_[0].add: N_ is missing");
    k = sdsc_kernel(&ADD);
    cJSON *op = cJSON_GetArrayItem(cJSON_GetObjectItem(dsc_of(k), "computeOp_"), 0);
    cJSON_ReplaceItemInArray(cJSON_GetObjectItem(op, "inputLabeledDs"), 1, cJSON_CreateString("Tensor7-idx7"));
    TU_ASSERT_CONTAINS(check_kernels("spyre", k, NULL),
                       "sdsc_0.json: 0_add.dscs_[0].add.computeOp_[0].inputLabeledDs: Tensor7-idx7 has no matching dsName_ in labeledDs_ (RFC 0552)");
    k = sdsc_kernel(&ADD);
    cJSON *ci = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(dsc_of(k), "scheduleTree_"), 1), "coordinates_"), "coordInfo");
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(ci, "out"), "elemArr", cJSON_CreateNumber(3));
    TU_ASSERT_CONTAINS(check_kernels("spyre", k, NULL),
                       "scheduleTree_[1].coordinates_.coordInfo.out.folds: dim_prop_func has 5 entries and dim_prop_attr 5, not elemArr + 3 = 6 (RFC 0552)");
    k = sdsc_kernel(&ADD);
    cJSON *l = cJSON_GetArrayItem(cJSON_GetObjectItem(dsc_of(k), "labeledDs_"), 0);
    cJSON_ReplaceItemInObject(l, "dataFormat_", cJSON_CreateString("IEEE_FP32"));
    cJSON_ReplaceItemInObject(l, "wordLength", cJSON_CreateNumber(4));
    TU_ASSERT_CONTAINS(check_kernels("spyre", k, NULL),
                       "Tensor0: a stick of 64 elements of 4 bytes is not the chip's 128-byte stick");
}

/* Every prefix of a valid file, and bytes of it overwritten, are read
 * without a crash (the sanitizer build runs this too); a broken file is a
 * problem line, never an empty check. */
static void test_broken_files_never_crash_the_reader(void)
{
    char dir[512], path[1024], err[256];
    tu_tmpdir(dir, sizeof dir);
    cJSON *tree = sdsc_kernel(&ADD);
    char *text = cJSON_PrintUnformatted(tree);
    cJSON_Delete(tree);
    size_t n = strlen(text);
    chip_config cfg;
    tu_config("spyre", &cfg);
    snprintf(path, sizeof path, "%s/sdsc_0.json", dir);
    int quiet = 0;
    for (size_t cut = 0; cut < n; cut += 37) {
        char *m = strdup(text);
        if (cut % 2)
            m[cut] = "0{}[\",:-9a"[cut % 10]; /* one byte changed */
        else
            m[cut] = 0;                        /* a prefix */
        tu_write_file(path, m, strlen(m));
        sd_bundle *b = sd_load(dir, &cfg, err, sizeof err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        quiet += !(cut % 2) && !sd_nproblems(b);
        sd_spec s;
        for (int i = 0; i < sd_ninputs(b) + sd_noutputs(b); i++)
            sd_arg_spec(b, i, &s);
        isa_program_free(sd_build(b, &cfg, NULL, 0, err, sizeof err));
        sd_free(b);
        free(m);
    }
    CU_ASSERT_EQUAL(quiet, 0);
    free(text);
    tu_rmtree(dir);
}

int main(void)
{
    static const tu_test tests[] = {
        {"elementwise add runs with the SDSC split and matches the reference",
         test_elementwise_add_runs_with_the_sdsc_split_and_matches_the_reference},
        {"two kernels chain through LX at the SDSC address", test_two_kernels_chain_through_lx_at_the_sdsc_address},
        {"tensor specs are checked and host dtypes converted", test_tensor_specs_are_checked_and_host_dtypes_converted},
        {"a mean over rows runs on the SFP with the SDSC constant", test_a_mean_over_rows_runs_on_the_sfp_with_the_sdsc_constant},
        {"a matrix product runs on the PT in the SDSC grid", test_a_matrix_product_runs_on_the_pt_in_the_sdsc_grid},
        {"a 3-D tensor lies in the layout its SDSC declares", test_a_3d_tensor_lies_in_the_layout_its_sdsc_declares},
        {"softmax split into six kernels chains through LX", test_softmax_split_into_six_kernels_chains_through_lx},
        {"a valid SDSC passes the check", test_a_valid_sdsc_passes_the_check},
        {"more than 8 tensors break the tensor count cap", test_more_than_8_tensors_break_the_tensor_count_cap},
        {"an LX tensor past the usable LX breaks LX capacity", test_an_lx_tensor_past_the_usable_lx_breaks_lx_capacity},
        {"a slice spanning over 256 MB breaks the address span", test_a_slice_spanning_over_256_mb_breaks_the_address_span},
        {"two cores on one slice break exactly-once coverage", test_two_cores_on_one_slice_break_exactly_once_coverage},
        {"a core the chip lacks is refused", test_a_core_the_chip_lacks_is_refused},
        {"LX tensors must be read as their producer wrote them", test_lx_tensors_must_be_read_as_their_producer_wrote_them},
        {"the form of a file is checked with JSON paths", test_the_form_of_a_file_is_checked_with_json_paths},
        {"broken files never crash the reader", test_broken_files_never_crash_the_reader},
        {"division is exact for divisors of either sign", test_division_is_exact_for_divisors_of_either_sign},
        {"a zero divisor is a mismatch that names DL16's missing infinity",
         test_a_zero_divisor_is_a_mismatch_that_names_dl16s_missing_infinity},
        {"data stages overlap loads and stores", test_data_stages_overlap_loads_and_stores},
        {"bundle.mlir gives the order of the kernels", test_bundle_mlir_gives_the_order_of_the_kernels},
        {"bundle.mlir gives the order of the arguments", test_bundle_mlir_gives_the_order_of_the_arguments},
        {"bundle.mlir disagreeing with the JSON is refused", test_bundle_mlir_disagreeing_with_the_json_is_refused},
        {"bundle.mlir beyond the subset read is refused by run, not check",
         test_bundle_mlir_beyond_the_subset_read_is_refused_by_run_not_check},
        {"broken bundle.mlir never crashes the reader", test_broken_bundle_mlir_never_crashes_the_reader},
        {NULL, NULL},
    };
    return tu_run("sdsc", tests);
}
