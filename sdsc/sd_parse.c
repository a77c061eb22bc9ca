/* sd_parse.c: one sdsc_N.json into the kernel model (sd_internal.h); what
 * the file lacks or has of the wrong type is a problem line naming the
 * JSON path, never a crash. */
#include "sd_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The member key of o, or NULL with a problem "PATH.key: missing ..." when
 * it is absent or not of the kind test accepts. */
static const cJSON *member(sd_bundle *b, sd_kernel *k, const cJSON *o, const char *path, const char *key,
                           cJSON_bool (*test)(const cJSON *), const char *kind)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    if (v && test(v))
        return v;
    sd_problem(b, k, path, "%s %s (schema: %s)", key, v ? "has the wrong type" : "is missing", kind);
    return NULL;
}

/* An integer member (a JSON number with an integral value), or def. */
static int64_t int_member(sd_bundle *b, sd_kernel *k, const cJSON *o, const char *path, const char *key, int64_t def)
{
    const cJSON *v = member(b, k, o, path, key, cJSON_IsNumber, "an integer");
    if (!v)
        return def;
    double d = v->valuedouble;
    if (!(d >= -9e15 && d <= 9e15) || d != (double)(int64_t)d) {
        sd_problem(b, k, path, "%s is not an integer", key);
        return def;
    }
    return (int64_t)d;
}

/* An integer member in [lo, hi], or def with a problem. */
static int64_t bounded(sd_bundle *b, sd_kernel *k, const cJSON *o, const char *path, const char *key, int64_t lo,
                       int64_t hi, int64_t def)
{
    int64_t v = int_member(b, k, o, path, key, def);
    if (v == def)
        return def;
    if (v < lo || v > hi) {
        sd_problem(b, k, path, "%s %lld is not in [%lld, %lld]", key, (long long)v, (long long)lo, (long long)hi);
        return def;
    }
    return v;
}

/* The dim named s ("mb" or "mb_"), or -1. */
static int dim_index(const sd_kernel *k, const char *s)
{
    size_t n = strlen(s);
    if (n && s[n - 1] == '_')
        n--;
    for (int d = 0; d < k->ndims; d++)
        if (strlen(k->dims[d].name) == n && !strncmp(k->dims[d].name, s, n))
            return d;
    return -1;
}

/* N_ gives the dims and their sizes; numWkSlicesPerDim_ the slices; the
 * first data stage's ss_ the per-core stage. */
static void parse_dims(sd_bundle *b, sd_kernel *k, const cJSON *sdsc, const cJSON *dsc, const char *dpath)
{
    char p[512];
    const cJSON *N = member(b, k, dsc, dpath, "N_", cJSON_IsObject, "an object of dimension sizes");
    const cJSON *it;
    snprintf(p, sizeof p, "%s.N_", dpath);
    cJSON_ArrayForEach(it, N)
    {
        if (!strcmp(it->string, "name_") || !cJSON_IsNumber(it))
            continue;
        if (k->ndims == SD_MAX_DIMS || strlen(it->string) >= sizeof k->dims[0].name) {
            sd_problem(b, k, p, "more than %d dimensions, or a dimension name too long", SD_MAX_DIMS);
            return;
        }
        sd_dim *dm = &k->dims[k->ndims++];
        snprintf(dm->name, sizeof dm->name, "%.*s", (int)strlen(it->string) - (it->string[strlen(it->string) - 1] == '_'),
                 it->string);
        dm->n = bounded(b, k, N, p, it->string, 1, SD_SIZE_MAX, -1);
        dm->slices = dm->stage = -1;
    }
    const cJSON *W = member(b, k, sdsc, k->top, "numWkSlicesPerDim_", cJSON_IsObject, "an object of slice counts");
    snprintf(p, sizeof p, "%s.numWkSlicesPerDim_", k->top);
    cJSON_ArrayForEach(it, W)
    {
        int d = dim_index(k, it->string);
        if (d < 0)
            sd_problem(b, k, p, "dimension %s is not one of N_'s", it->string);
        else
            k->dims[d].slices = bounded(b, k, W, p, it->string, 1, SD_MAX_CORES, -1);
    }
    const cJSON *S = member(b, k, dsc, dpath, "dataStageParam_", cJSON_IsObject, "an object of data stages");
    const cJSON *s0 = S ? S->child : NULL, *ss = s0 ? cJSON_GetObjectItemCaseSensitive(s0, "ss_") : NULL;
    snprintf(p, sizeof p, "%s.dataStageParam_.%s.ss_", dpath, s0 && s0->string ? s0->string : "0");
    cJSON_ArrayForEach(it, ss)
    {
        int d = cJSON_IsNumber(it) ? dim_index(k, it->string) : -1;
        if (d >= 0)
            k->dims[d].stage = bounded(b, k, ss, p, it->string, 1, SD_SIZE_MAX, -1);
    }
}

/* The work slice of every core (coreIdToWkSlice_); used cores come from coreIdsUsed_. */
static void parse_cores(sd_bundle *b, sd_kernel *k, const cJSON *sdsc, const cJSON *dsc, const char *dpath)
{
    char p[512];
    const cJSON *ids = member(b, k, dsc, dpath, "coreIdsUsed_", cJSON_IsArray, "an array of core ids");
    const cJSON *it;
    snprintf(p, sizeof p, "%s.coreIdsUsed_", dpath);
    cJSON_ArrayForEach(it, ids)
    {
        int in_range = cJSON_IsNumber(it) && it->valuedouble >= 0 && it->valuedouble < SD_MAX_CORES;
        int64_t c = in_range ? (int64_t)it->valuedouble : -1;
        if (c < 0 || c >= SD_MAX_CORES) {
            sd_problem(b, k, p, "core id %g is not in [0, %d)", cJSON_IsNumber(it) ? it->valuedouble : -1.0, SD_MAX_CORES);
            continue;
        }
        if (k->core_used[c])
            sd_problem(b, k, p, "core %d is listed twice", (int)c);
        k->core_used[c] = 1;
        k->ncores++;
    }
    int64_t used = int_member(b, k, dsc, dpath, "numCoresUsed_", -1);
    if (used >= 0 && used != k->ncores)
        sd_problem(b, k, dpath, "numCoresUsed_ is %lld but coreIdsUsed_ lists %d cores (RFC 0552: coreIdsUsed_ size must match numCoresUsed_)",
                   (long long)used, k->ncores);
    const cJSON *map = member(b, k, sdsc, k->top, "coreIdToWkSlice_", cJSON_IsObject, "an object of core slices");
    for (int c = 0; c < SD_MAX_CORES; c++) {
        if (!k->core_used[c] || !map)
            continue;
        char key[16];
        snprintf(key, sizeof key, "%d", c);
        snprintf(p, sizeof p, "%s.coreIdToWkSlice_", k->top);
        const cJSON *sl = member(b, k, map, p, key, cJSON_IsObject, "the work slice of a used core");
        snprintf(p, sizeof p, "%s.coreIdToWkSlice_.%d", k->top, c);
        for (int d = 0; d < k->ndims; d++)
            k->slice[c][d] = sl ? (int)int_member(b, k, sl, p, k->dims[d].name, -1) : -1;
    }
}

/* One dimension's folds: core_fold, corelet_fold, row_fold, elem_arr_*. */
static void parse_fold(sd_bundle *b, sd_kernel *k, const cJSON *ci, const char *path, sd_coord *c)
{
    const cJSON *folds = member(b, k, ci, path, "folds", cJSON_IsObject, "a fold manager");
    char p[1024];
    snprintf(p, sizeof p, "%s.folds", path);
    const cJSON *fn = member(b, k, folds, p, "dim_prop_func", cJSON_IsArray, "an array");
    const cJSON *at = member(b, k, folds, p, "dim_prop_attr", cJSON_IsArray, "an array");
    int64_t elem = int_member(b, k, ci, path, "elemArr", -1);
    if (!fn || !at)
        return;
    int n = cJSON_GetArraySize(fn);
    if (n != cJSON_GetArraySize(at) || n != elem + 3)
        sd_problem(b, k, p, "dim_prop_func has %d entries and dim_prop_attr %d, not elemArr + 3 = %lld (RFC 0552)", n,
                   cJSON_GetArraySize(at), (long long)elem + 3);
    for (int i = 0; i < n && i < cJSON_GetArraySize(at); i++) {
        const cJSON *f = cJSON_GetArrayItem(fn, i), *a = cJSON_GetArrayItem(at, i);
        const cJSON *af = cJSON_GetObjectItemCaseSensitive(f, "Affine");
        const cJSON *lab = cJSON_GetObjectItemCaseSensitive(a, "label_");
        const cJSON *fac = cJSON_GetObjectItemCaseSensitive(a, "factor_");
        const cJSON *al = cJSON_GetObjectItemCaseSensitive(af, "alpha_");
        if (!cJSON_IsString(lab) || !cJSON_IsNumber(fac) || !cJSON_IsNumber(al)) {
            snprintf(p, sizeof p, "%s.folds.dim_prop_func[%d]", path, i);
            sd_problem(b, k, p, "an affine fold needs label_, factor_ and alpha_");
            continue;
        }
        if (fac->valuedouble < 1 || fac->valuedouble > (double)SD_SIZE_MAX ||
            al->valuedouble < -(double)SD_SIZE_MAX || al->valuedouble > (double)SD_SIZE_MAX) {
            snprintf(p, sizeof p, "%s.folds.dim_prop_attr[%d]", path, i);
            sd_problem(b, k, p, "factor_ %g or alpha_ %g out of range", fac->valuedouble, al->valuedouble);
            continue;
        }
        sd_fold fo = {(int64_t)fac->valuedouble, (int64_t)al->valuedouble};
        if (!strcmp(lab->valuestring, "core_fold"))
            c->core = fo;
        else if (!strncmp(lab->valuestring, "elem_arr_", 9) && c->nelem < SD_MAX_ELEM)
            c->elem[c->nelem++] = fo;
        else if (strcmp(lab->valuestring, "corelet_fold") && strcmp(lab->valuestring, "row_fold")) {
            snprintf(p, sizeof p, "%s.folds.dim_prop_attr[%d]", path, i);
            sd_problem(b, k, p, "unknown fold label %s", lab->valuestring);
        } else if (fo.factor != 1 && !k->unsupported[0])
            snprintf(k->unsupported, sizeof k->unsupported, "%s: %s.folds: %s with factor %lld (a split over corelets or rows)",
                     k->file, path, lab->valuestring, (long long)fo.factor);
    }
}

/* An allocate node's per-core start (startAddressCoreCorelet_.data_: LX
 * offsets, or DRAM symbols) and its coordinate folds. */
static void parse_alloc_coords(sd_bundle *b, sd_kernel *k, const cJSON *n, const char *path, sd_tensor *t)
{
    char p[640];
    const cJSON *it;
    snprintf(p, sizeof p, "%s.startAddressCoreCorelet_", path);
    const cJSON *sa = member(b, k, n, path, "startAddressCoreCorelet_", cJSON_IsObject, "a fold manager");
    const cJSON *data = member(b, k, sa, p, "data_", cJSON_IsObject, "an object of start addresses");
    cJSON_ArrayForEach(it, data)
    {
        int c = -1;
        long long v;
        if (sscanf(it->string, "[%d", &c) != 1 || c < 0 || c >= SD_MAX_CORES || !cJSON_IsString(it) ||
            sscanf(it->valuestring, "%lld", &v) != 1) {
            sd_problem(b, k, p, "data_ entry %s is not \"[core, corelet, time]\": \"address\"", it->string);
            continue;
        }
        t->start[c] = v;
    }
    snprintf(p, sizeof p, "%s.coordinates_", path);
    const cJSON *co = member(b, k, n, path, "coordinates_", cJSON_IsObject, "coordinate info");
    const cJSON *ci = member(b, k, co, p, "coordInfo", cJSON_IsObject, "an object of dimensions");
    t->stick = -1;
    cJSON_ArrayForEach(it, ci)
    {
        char q[768];
        snprintf(q, sizeof q, "%s.coordInfo.%s", p, it->string);
        int d = dim_index(k, it->string);
        if (d < 0 || t->ncoord == SD_MAX_DIMS) {
            sd_problem(b, k, q, "not a dimension of N_");
            continue;
        }
        sd_coord *c = &t->coord[t->ncoord++];
        c->dim = d;
        parse_fold(b, k, it, q, c);
        if (c->nelem == 2)
            t->stick = d;
    }
}

/* An allocate node: the tensor it places (by ldsIdx_), where (hbm or lx),
 * its layout, then its starts and folds. */
static void parse_alloc(sd_bundle *b, sd_kernel *k, const cJSON *n, int idx, const char *path)
{
    int64_t lds = int_member(b, k, n, path, "ldsIdx_", -1);
    sd_tensor *t = NULL;
    for (int i = 0; i < k->nt; i++)
        if (k->t[i].lds == lds)
            t = &k->t[i];
    if (!t) {
        sd_problem(b, k, path, "ldsIdx_ %lld names no labeledDs_ entry", (long long)lds);
        return;
    }
    if (t->has_alloc)
        sd_problem(b, k, path, "tensor %s has a second allocate node", t->name);
    t->has_alloc = 1;
    t->alloc_index = idx;
    const cJSON *comp = member(b, k, n, path, "component_", cJSON_IsString, "hbm or lx");
    if (comp && strcmp(comp->valuestring, "hbm") && strcmp(comp->valuestring, "lx"))
        sd_problem(b, k, path, "component_ %s is neither hbm nor lx", comp->valuestring);
    t->lx = comp && !strcmp(comp->valuestring, "lx");
    const cJSON *lo = member(b, k, n, path, "layoutDimOrder_", cJSON_IsArray, "an array of dimension names");
    const cJSON *it;
    char p[640];
    cJSON_ArrayForEach(it, lo)
    {
        int d = cJSON_IsString(it) ? dim_index(k, it->valuestring) : -1;
        if (d < 0 || t->nlayout == SD_MAX_DIMS) {
            snprintf(p, sizeof p, "%s.layoutDimOrder_", path);
            sd_problem(b, k, p, "%s is not a dimension of N_", cJSON_IsString(it) ? it->valuestring : "(not a string)");
            continue;
        }
        t->layout[t->nlayout++] = d;
    }
    parse_alloc_coords(b, k, n, path, t);
}

/* Each element of the array member key of o, with its JSON path
 * (OPATH.key[i]), to fn; a kernel's table full (*count == cap; count NULL:
 * none) is one problem, and the rest of the array is left. */
typedef void (*sd_item_fn)(sd_bundle *b, sd_kernel *k, const cJSON *it, int i, const char *path);
static void each_item(sd_bundle *b, sd_kernel *k, const cJSON *o, const char *opath, const char *key, const char *kind,
                      const int *count, int cap, sd_item_fn fn)
{
    const cJSON *arr = member(b, k, o, opath, key, cJSON_IsArray, kind), *it;
    char p[512];
    int i = 0;
    cJSON_ArrayForEach(it, arr)
    {
        snprintf(p, sizeof p, "%s.%s[%d]", opath, key, i);
        if (count && *count == cap) {
            sd_problem(b, k, p, "more than %d entries (%s)", cap, kind);
            return;
        }
        fn(b, k, it, i++, p);
    }
}

/* A labeledDs_ entry: a tensor, its type and data format. */
static void parse_tensor(sd_bundle *b, sd_kernel *k, const cJSON *it, int i, const char *p)
{
    (void)i;
    sd_tensor *t = &k->t[k->nt++];
    t->arg = t->bound_arg = -1;
    const cJSON *nm = member(b, k, it, p, "dsName_", cJSON_IsString, "a name");
    snprintf(t->name, sizeof t->name, "%s", nm ? nm->valuestring : "?");
    t->lds = (int)int_member(b, k, it, p, "ldsIdx_", -1);
    const cJSON *ty = member(b, k, it, p, "dsType_", cJSON_IsString, "a segment type");
    snprintf(t->type, sizeof t->type, "%s", ty ? ty->valuestring : "?");
    const cJSON *f = member(b, k, it, p, "dataFormat_", cJSON_IsString, "a data format");
    int64_t w = int_member(b, k, it, p, "wordLength", -1);
    if (f && strcmp(f->valuestring, "SEN169_FP16") && strcmp(f->valuestring, "IEEE_FP32"))
        sd_problem(b, k, p, "dataFormat_ %s is neither SEN169_FP16 nor IEEE_FP32", f->valuestring);
    t->f32 = f && !strcmp(f->valuestring, "IEEE_FP32");
    if (f && w >= 0 && w != sd_word(t))
        sd_problem(b, k, p, "wordLength %lld does not match dataFormat_ %s (%d bytes)", (long long)w, f->valuestring,
                   sd_word(t));
}

/* "Tensor0-idx0" -> the tensor, or -1 (RFC 0552's name cross-reference). */
static int op_tensor(const sd_kernel *k, const char *s)
{
    const char *dash = strrchr(s, '-');
    size_t n = dash ? (size_t)(dash - s) : strlen(s);
    for (int i = 0; i < k->nt; i++)
        if (strlen(k->t[i].name) == n && !strncmp(k->t[i].name, s, n))
            return i;
    return -1;
}

static void parse_op_list(sd_bundle *b, sd_kernel *k, const cJSON *o, const char *path, const char *key, int *out,
                          int *n, int max)
{
    const cJSON *l = member(b, k, o, path, key, cJSON_IsArray, "an array of tensor names");
    const cJSON *it;
    cJSON_ArrayForEach(it, l)
    {
        int t = cJSON_IsString(it) ? op_tensor(k, it->valuestring) : -1;
        if (t < 0 || *n == max) {
            char p[768];
            snprintf(p, sizeof p, "%s.%s", path, key);
            sd_problem(b, k, p, "%s has no matching dsName_ in labeledDs_ (RFC 0552)",
                       cJSON_IsString(it) ? it->valuestring : "(not a string)");
            continue;
        }
        out[(*n)++] = t;
    }
}

/* A computeOp_ entry: its unit, function, data format and tensors. */
static void parse_op(sd_bundle *b, sd_kernel *k, const cJSON *it, int i, const char *p)
{
    (void)i;
    sd_op *op = &k->ops[k->nops++];
    const cJSON *u = member(b, k, it, p, "exUnit", cJSON_IsString, "sfp or pt");
    const cJSON *f = member(b, k, it, p, "opFuncName", cJSON_IsString, "an op name");
    snprintf(op->unit, sizeof op->unit, "%s", u ? u->valuestring : "?");
    snprintf(op->func, sizeof op->func, "%s", f ? f->valuestring : "?");
    if (u && strcmp(u->valuestring, "sfp") && strcmp(u->valuestring, "pt"))
        sd_problem(b, k, p, "exUnit %s is neither sfp nor pt", u->valuestring);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(it, "attributes_"), "dataFormat_");
    op->f32 = cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "IEEE_FP32");
    parse_op_list(b, k, it, p, "inputLabeledDs", op->in, &op->nin, 4);
    parse_op_list(b, k, it, p, "outputLabeledDs", op->out, &op->nout, 2);
}

/* constantInfo_ ("{}", or named constants whose data_ holds the value as
 * the bits of its dataFormat_): the first value of each. */
static void parse_consts(sd_bundle *b, sd_kernel *k, const cJSON *dsc, const char *dpath)
{
    const cJSON *C = cJSON_GetObjectItemCaseSensitive(dsc, "constantInfo_"), *it;
    char p[512];
    const cJSON *list = cJSON_IsObject(C) ? C : NULL;
    cJSON_ArrayForEach(it, list)
    {
        snprintf(p, sizeof p, "%s.constantInfo_.%s", dpath, it->string);
        const cJSON *fmt = member(b, k, it, p, "dataFormat_", cJSON_IsString, "a data format");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(it, "data_"), "data_");
        const cJSON *v = d ? d->child : NULL;
        v = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, 0) : v;
        long long bits;
        if (!fmt || !cJSON_IsString(v) || sscanf(v->valuestring, "%lld", &bits) != 1 || k->nconsts == 4) {
            sd_problem(b, k, p, "a constant is data_.data_ {\"[core, corelet, time]\": [\"bits\"]}");
            continue;
        }
        uint32_t u = (uint32_t)bits;
        float f;
        memcpy(&f, &u, sizeof f);
        k->consts[k->nconsts++] = !strcmp(fmt->valuestring, "IEEE_FP32") ? f : isa_dl16_to_f32((uint16_t)bits);
    }
}

/* A scheduleTree_ node: an allocate node places a tensor. */
static void parse_node(sd_bundle *b, sd_kernel *k, const cJSON *it, int i, const char *p)
{
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(it, "nodeType_");
    if (cJSON_IsString(ty) && !strcmp(ty->valuestring, "allocate"))
        parse_alloc(b, k, it, i, p);
}

/* labeledDs_, then the scheduleTree_ placing them, then the compute ops
 * naming them; every tensor needs its allocate node. */
static void parse_body(sd_bundle *b, sd_kernel *k, const cJSON *dsc, const char *dpath)
{
    each_item(b, k, dsc, dpath, "labeledDs_", "an array of tensors", &k->nt, SD_MAX_TENSORS, parse_tensor);
    each_item(b, k, dsc, dpath, "scheduleTree_", "an array of allocate nodes", NULL, 0, parse_node);
    each_item(b, k, dsc, dpath, "computeOp_", "an array of compute ops", &k->nops, SD_MAX_OPS, parse_op);
    for (int t = 0; t < k->nt; t++)
        if (!k->t[t].has_alloc) {
            char p[512];
            snprintf(p, sizeof p, "%s.labeledDs_", dpath);
            sd_problem(b, k, p, "tensor %s has no allocate node in scheduleTree_", k->t[t].name);
        }
}

void sd_parse_file(sd_bundle *b, sd_kernel *k, const char *text)
{
    cJSON *root = cJSON_Parse(text);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        sd_problem(b, k, "(json)", "not valid JSON (at byte %ld)", at ? (long)(at - text) : -1L);
        return;
    }
    int problems = b->nproblems;
    if (!cJSON_IsObject(root) || cJSON_GetArraySize(root) != 1 || !cJSON_IsObject(root->child)) {
        sd_problem(b, k, "(top)", "a SuperDSC is one object holding one named object (schema: maxProperties 1)");
        cJSON_Delete(root);
        return;
    }
    const cJSON *s = root->child;
    snprintf(k->top, sizeof k->top, "%s", s->string);
    const cJSON *aten = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "debug_handle_"), "aten_op");
    snprintf(k->aten, sizeof k->aten, "%s", cJSON_IsString(aten) ? aten->valuestring : "");
    const cJSON *dscs = member(b, k, s, k->top, "dscs_", cJSON_IsArray, "an array of one DSC");
    if (dscs && cJSON_GetArraySize(dscs) != 1)
        sd_problem(b, k, k->top, "dscs_ has %d entries, not 1 (RFC 0552: dscs_ must have exactly 1 entry)",
                   cJSON_GetArraySize(dscs));
    const cJSON *e = dscs ? cJSON_GetArrayItem(dscs, 0) : NULL;
    const cJSON *dsc = e && cJSON_IsObject(e) && cJSON_GetArraySize(e) == 1 ? e->child : NULL;
    if (dsc && cJSON_IsObject(dsc)) {
        char dpath[256];
        snprintf(k->dsc, sizeof k->dsc, "%s", dsc->string);
        snprintf(dpath, sizeof dpath, "%s.dscs_[0].%s", k->top, dsc->string);
        parse_dims(b, k, s, dsc, dpath);
        parse_cores(b, k, s, dsc, dpath);
        parse_body(b, k, dsc, dpath);
        parse_consts(b, k, dsc, dpath);
    } else if (dscs) {
        sd_problem(b, k, k->top, "dscs_[0] is not an object holding one named DSC");
    }
    k->parsed = b->nproblems == problems;
    cJSON_Delete(root);
}
