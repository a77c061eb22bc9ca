/* safetensors.c: reading, validating, converting and writing safetensors
 * files (the format is described in rt.h and docs/graph-format.md).
 *
 * A file is mapped read-only; tensors point into the mapping.  Nothing in
 * the header is trusted: every number is checked before it is used, and
 * sizes are computed without overflow. */
#include "rt_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* One row per dtype: its name in the header and its size. */
static const struct {
    const char *name;
    size_t size;
} st_dtypes[RT_ST_NDTYPES] = {
    [RT_ST_F32] = {"F32", 4}, [RT_ST_F16] = {"F16", 2}, [RT_ST_BF16] = {"BF16", 2}, [RT_ST_F64] = {"F64", 8},
    [RT_ST_I64] = {"I64", 8}, [RT_ST_I32] = {"I32", 4}, [RT_ST_I16] = {"I16", 2},   [RT_ST_I8] = {"I8", 1},
    [RT_ST_U8] = {"U8", 1},   [RT_ST_BOOL] = {"BOOL", 1},
};

#define MAX_INT_JSON 9007199254740992.0 /* 2^53: larger JSON numbers are not exact doubles */

const char *rt_st_dtype_name(rt_st_dtype d) { return (unsigned)d < RT_ST_NDTYPES ? st_dtypes[d].name : "?"; }
size_t rt_st_dtype_size(rt_st_dtype d) { return (unsigned)d < RT_ST_NDTYPES ? st_dtypes[d].size : 0; }

void rt_st_free(rt_st_file *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->ntensors; i++)
        free(f->tensors[i].name);
    free(f->tensors);
    if (f->map && f->size)
        munmap(f->map, f->size);
    free(f->path);
    free(f);
}

/* A JSON number that is a non-negative integer below 2^53, into *v. */
static int json_uint(const cJSON *j, uint64_t *v)
{
    if (!cJSON_IsNumber(j))
        return -1;
    double d = j->valuedouble;
    if (!(d >= 0) || d >= MAX_INT_JSON || d != floor(d))
        return -1;
    *v = (uint64_t)d;
    return 0;
}

static void shape_str(const rt_st_tensor *t, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < t->rank && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (o < len)
        snprintf(buf + o, len - o, "]");
}

/* Parse one header entry into t. */
static int parse_entry(const char *path, const cJSON *e, const unsigned char *data, uint64_t dsize, rt_st_tensor *t,
                       uint64_t range[2], char *err, size_t errlen)
{
    const char *name = t->name;
    if (!cJSON_IsObject(e))
        return isa_errf(err, errlen, "%s: tensor '%s': header entry is not an object", path, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt))
        return isa_errf(err, errlen, "%s: tensor '%s': no \"dtype\" string", path, name);
    int d = -1;
    for (int i = 0; i < RT_ST_NDTYPES; i++)
        if (strcmp(dt->valuestring, st_dtypes[i].name) == 0)
            d = i;
    if (d < 0)
        return isa_errf(err, errlen,
                        "%s: tensor '%s': unknown dtype \"%.40s\" (known: F32 F16 BF16 F64 I64 I32 I16 I8 U8 BOOL)", path,
                        name, dt->valuestring);
    t->dtype = (rt_st_dtype)d;
    if (!cJSON_IsArray(sh))
        return isa_errf(err, errlen, "%s: tensor '%s': no \"shape\" array", path, name);
    int rank = cJSON_GetArraySize(sh);
    if (rank > RT_ST_MAX_RANK)
        return isa_errf(err, errlen, "%s: tensor '%s': rank %d is more than %d", path, name, rank, RT_ST_MAX_RANK);
    t->rank = rank;
    uint64_t numel = 1;
    int overflow = 0, i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, sh)
    {
        uint64_t v;
        if (json_uint(x, &v))
            return isa_errf(err, errlen, "%s: tensor '%s': shape entry %d is not an integer >= 0", path, name, i);
        t->shape[i++] = (int64_t)v;
        if (v && numel > UINT64_MAX / v)
            overflow = 1;
        else
            numel *= v;
    }
    uint64_t b, en;
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 || json_uint(cJSON_GetArrayItem(off, 0), &b) ||
        json_uint(cJSON_GetArrayItem(off, 1), &en))
        return isa_errf(err, errlen, "%s: tensor '%s': \"data_offsets\" is not [begin, end] of integers >= 0", path,
                        name);
    if (en < b)
        return isa_errf(err, errlen, "%s: tensor '%s': data_offsets [%llu, %llu] end before they begin", path, name,
                        (unsigned long long)b, (unsigned long long)en);
    if (en > dsize)
        return isa_errf(err, errlen, "%s: tensor '%s': data_offsets [%llu, %llu] past the end of the data (%llu bytes)",
                        path, name, (unsigned long long)b, (unsigned long long)en, (unsigned long long)dsize);
    size_t isz = st_dtypes[d].size;
    if (overflow || numel > UINT64_MAX / isz || numel * isz != en - b) {
        char ss[256];
        shape_str(t, ss, sizeof ss);
        return isa_errf(err, errlen, "%s: tensor '%s': shape %s of %s needs %s%llu bytes but data_offsets [%llu, %llu] span %llu",
                        path, name, ss, st_dtypes[d].name, overflow || numel > UINT64_MAX / isz ? "more than " : "",
                        overflow || numel > UINT64_MAX / isz ? (unsigned long long)UINT64_MAX
                                                             : (unsigned long long)(numel * isz),
                        (unsigned long long)b, (unsigned long long)en, (unsigned long long)(en - b));
    }
    t->numel = (int64_t)numel;
    t->nbytes = en - b;
    t->data = data + b;
    range[0] = b;
    range[1] = en;
    return 0;
}

static const uint64_t *sort_ranges;
static int cmp_range(const void *a, const void *b)
{
    uint64_t x = sort_ranges[2 * *(const int *)a], y = sort_ranges[2 * *(const int *)b];
    return x < y ? -1 : x > y;
}

static const rt_st_tensor *sort_tensors;
static int cmp_name(const void *a, const void *b)
{
    return strcmp(sort_tensors[*(const int *)a].name, sort_tensors[*(const int *)b].name);
}

/* No name twice: sorted, so a header of any size is checked in
 * O(n log n) (order: room for f->ntensors indices). */
static int check_names(const rt_st_file *f, int *order, char *err, size_t errlen)
{
    for (int i = 0; i < f->ntensors; i++)
        order[i] = i;
    sort_tensors = f->tensors;
    qsort(order, (size_t)f->ntensors, sizeof *order, cmp_name);
    for (int k = 1; k < f->ntensors; k++)
        if (strcmp(f->tensors[order[k - 1]].name, f->tensors[order[k]].name) == 0)
            return isa_errf(err, errlen, "%s: tensor '%s' appears twice in the header", f->path,
                            f->tensors[order[k]].name);
    return 0;
}

static int parse_header(rt_st_file *f, const unsigned char *bytes, size_t size, char *err, size_t errlen)
{
    const char *path = f->path;
    if (size < 8)
        return isa_errf(err, errlen, "%s: %zu bytes is too short for a safetensors file (the header length alone is 8)",
                        path, size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | bytes[i];
    if (hlen > RT_ST_HEADER_MAX)
        return isa_errf(err, errlen, "%s: header length %llu exceeds the format's limit of %llu bytes", path,
                        (unsigned long long)hlen, (unsigned long long)RT_ST_HEADER_MAX);
    if (hlen > size - 8)
        return isa_errf(err, errlen, "%s: header length %llu exceeds the %zu bytes after it", path,
                        (unsigned long long)hlen, size - 8);
    if (hlen < 2)
        return isa_errf(err, errlen, "%s: header length %llu is too short for a JSON object", path,
                        (unsigned long long)hlen);
    const char *h = (const char *)bytes + 8, *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(h, (size_t)hlen, &end, 0);
    if (!root)
        return isa_errf(err, errlen, "%s: header is not valid JSON (near byte %lld of the header)", path,
                        end ? (long long)(end - h) : -1LL);
    for (const char *q = end; q && q < h + hlen; q++)
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r' && *q != 0) {
            cJSON_Delete(root);
            return isa_errf(err, errlen, "%s: header has text after its JSON object (at byte %lld of the header)",
                            path, (long long)(q - h));
        }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return isa_errf(err, errlen, "%s: header is not a JSON object", path);
    }
    const unsigned char *data = bytes + 8 + hlen;
    uint64_t dsize = size - 8 - hlen;
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, root) n++;
    f->tensors = calloc((size_t)n + 1, sizeof *f->tensors);
    uint64_t *ranges = malloc(((size_t)n + 1) * 2 * sizeof *ranges);
    int *order = malloc(((size_t)n + 1) * sizeof *order);
    int rc = 0;
    if (!f->tensors || !ranges || !order) {
        rc = isa_errf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    cJSON_ArrayForEach(e, root)
    {
        if (!e->string) {
            rc = isa_errf(err, errlen, "%s: header entry without a name", path);
            goto out;
        }
        if (strcmp(e->string, "__metadata__") == 0) {
            if (!cJSON_IsObject(e)) {
                rc = isa_errf(err, errlen, "%s: __metadata__ is not an object", path);
                goto out;
            }
            continue;
        }
        rt_st_tensor *t = &f->tensors[f->ntensors];
        t->name = malloc(strlen(e->string) + 1);
        if (!t->name) {
            rc = isa_errf(err, errlen, "%s: out of memory", path);
            goto out;
        }
        strcpy(t->name, e->string);
        f->ntensors++;
        if ((rc = parse_entry(path, e, data, dsize, t, &ranges[2 * (f->ntensors - 1)], err, errlen)))
            goto out;
    }
    if ((rc = check_names(f, order, err, errlen)))
        goto out;
    /* No two tensors may share a byte, and every byte of the data is some
     * tensor's (as the format's reference reader demands: a hole or a tail
     * is a file cut or written wrong). */
    for (int i = 0; i < f->ntensors; i++)
        order[i] = i;
    sort_ranges = ranges;
    qsort(order, (size_t)f->ntensors, sizeof *order, cmp_range);
    int prev = -1;
    uint64_t covered = 0;
    for (int k = 0; k < f->ntensors && !rc; k++) {
        int i = order[k];
        if (ranges[2 * i] == ranges[2 * i + 1])
            continue; /* empty */
        if (prev >= 0 && ranges[2 * i] < ranges[2 * prev + 1])
            rc = isa_errf(err, errlen, "%s: tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] overlap", path,
                          f->tensors[prev].name, (unsigned long long)ranges[2 * prev],
                          (unsigned long long)ranges[2 * prev + 1], f->tensors[i].name,
                          (unsigned long long)ranges[2 * i], (unsigned long long)ranges[2 * i + 1]);
        else if (ranges[2 * i] != covered)
            rc = isa_errf(err, errlen, "%s: data bytes [%llu, %llu) belong to no tensor", path,
                         (unsigned long long)covered, (unsigned long long)ranges[2 * i]);
        covered = ranges[2 * i + 1];
        prev = i;
    }
    if (!rc && covered != dsize)
        rc = isa_errf(err, errlen, "%s: data bytes [%llu, %llu) belong to no tensor", path,
                     (unsigned long long)covered, (unsigned long long)dsize);
out:
    free(ranges);
    free(order);
    cJSON_Delete(root);
    return rc;
}

rt_st_file *rt_st_read(const char *path, char *err, size_t errlen)
{
    rt_st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = malloc(strlen(path) + 1))) {
        free(f);
        isa_errf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    strcpy(f->path, path);
    uint64_t fsize;
    int fd = isa_file_open(path, UINT64_MAX, &fsize, err, errlen);
    if (fd < 0) {
        rt_st_free(f);
        return NULL;
    }
    size_t size = (size_t)fsize;
    unsigned char empty[1] = {0};
    const unsigned char *bytes = empty;
    if (size) {
        void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            isa_errf(err, errlen, "%s: cannot map the file: %s", path, strerror(errno));
            close(fd);
            rt_st_free(f);
            return NULL;
        }
        f->map = m;
        f->size = size;
        bytes = m;
    }
    close(fd);
    if (parse_header(f, bytes, size, err, errlen)) {
        rt_st_free(f);
        return NULL;
    }
    return f;
}

const rt_st_tensor *rt_st_find(const rt_st_file *f, const char *name)
{
    for (int i = 0; i < f->ntensors; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

/* ---- Conversion ---- */

static float half_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else {
        float v = ldexpf((float)man, -24);
        return sign ? -v : v;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Element k as a double (exact for every dtype but the large I64). */
static double elem_f64(const rt_st_tensor *t, int64_t k)
{
    const unsigned char *p = (const unsigned char *)t->data + (size_t)k * st_dtypes[t->dtype].size;
    switch (t->dtype) {
    case RT_ST_F32: {
        float v;
        memcpy(&v, p, 4);
        return v;
    }
    case RT_ST_F16: {
        uint16_t h;
        memcpy(&h, p, 2);
        return half_to_f32(h);
    }
    case RT_ST_BF16: {
        uint16_t h;
        memcpy(&h, p, 2);
        uint32_t bits = (uint32_t)h << 16;
        float v;
        memcpy(&v, &bits, 4);
        return v;
    }
    case RT_ST_F64: {
        double v;
        memcpy(&v, p, 8);
        return v;
    }
    case RT_ST_I64: {
        int64_t v;
        memcpy(&v, p, 8);
        return (double)v;
    }
    case RT_ST_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case RT_ST_I16: {
        int16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case RT_ST_I8:
        return (int8_t)p[0];
    case RT_ST_U8:
        return p[0];
    case RT_ST_BOOL:
        return p[0] != 0;
    default:
        return NAN;
    }
}

void rt_st_to_f32(const rt_st_tensor *t, float *out)
{
    if (t->dtype == RT_ST_F32) {
        memcpy(out, t->data, (size_t)t->numel * 4);
        return;
    }
    if (t->dtype == RT_ST_I64) { /* int64 -> float directly: one rounding */
        for (int64_t k = 0; k < t->numel; k++) {
            int64_t v;
            memcpy(&v, (const unsigned char *)t->data + 8 * k, 8);
            out[k] = (float)v;
        }
        return;
    }
    for (int64_t k = 0; k < t->numel; k++)
        out[k] = (float)elem_f64(t, k);
}

int rt_st_to_i64(const rt_st_tensor *t, const char *path, int64_t *out, char *err, size_t errlen)
{
    if (t->dtype == RT_ST_I64) {
        memcpy(out, t->data, (size_t)t->numel * 8);
        return 0;
    }
    for (int64_t k = 0; k < t->numel; k++) {
        double v = elem_f64(t, k);
        if (!(v > -0x1p63 - 1024 && v < 0x1p63))
            return isa_errf(err, errlen, "%s: tensor '%s': element %lld (%g) does not convert to an integer",
                            path ? path : "safetensors", t->name, (long long)k, v);
        out[k] = (int64_t)v;
    }
    return 0;
}

/* ---- Writing ---- */

int rt_st_write(const char *path, const rt_st_entry *t, int n, char *err, size_t errlen)
{
    cJSON *root = cJSON_CreateObject();
    uint64_t off = 0;
    uint64_t *sizes = malloc(((size_t)n + 1) * sizeof *sizes);
    if (!root || !sizes) {
        cJSON_Delete(root);
        free(sizes);
        return isa_errf(err, errlen, "%s: out of memory", path);
    }
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        if ((unsigned)t[i].dtype >= RT_ST_NDTYPES || t[i].rank < 0 || t[i].rank > RT_ST_MAX_RANK) {
            rc = isa_errf(err, errlen, "%s: tensor '%s': bad dtype or rank", path, t[i].name);
            break;
        }
        if (cJSON_GetObjectItemCaseSensitive(root, t[i].name)) {
            rc = isa_errf(err, errlen, "%s: tensor '%s' given twice", path, t[i].name);
            break;
        }
        uint64_t numel = 1;
        cJSON *e = cJSON_CreateObject(), *sh = cJSON_CreateArray(), *of = cJSON_CreateArray();
        cJSON_AddItemToObject(root, t[i].name, e);
        cJSON_AddItemToObject(e, "dtype", cJSON_CreateString(st_dtypes[t[i].dtype].name));
        cJSON_AddItemToObject(e, "shape", sh);
        for (int d = 0; d < t[i].rank; d++) {
            if (t[i].shape[d] < 0) {
                rc = isa_errf(err, errlen, "%s: tensor '%s': negative dimension", path, t[i].name);
                break;
            }
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t[i].shape[d]));
            numel *= (uint64_t)t[i].shape[d];
        }
        sizes[i] = numel * st_dtypes[t[i].dtype].size;
        cJSON_AddItemToObject(e, "data_offsets", of);
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)(off + sizes[i])));
        off += sizes[i];
    }
    char *json = rc ? NULL : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (rc || !json) {
        free(sizes);
        free(json);
        return rc ? rc : isa_errf(err, errlen, "%s: out of memory", path);
    }
    size_t jl = strlen(json), hl = (jl + 7) / 8 * 8;
    isa_outfile o;
    if (isa_out_open(&o, path, err, errlen)) {
        rc = -1;
    } else {
        FILE *f = o.f;
        unsigned char len8[8];
        for (int i = 0; i < 8; i++)
            len8[i] = (unsigned char)((uint64_t)hl >> (8 * i));
        int ok = fwrite(len8, 1, 8, f) == 8 && fwrite(json, 1, jl, f) == jl;
        for (size_t i = jl; i < hl && ok; i++)
            ok = fputc(' ', f) != EOF;
        for (int i = 0; i < n && ok; i++)
            ok = !sizes[i] || fwrite(t[i].data, 1, (size_t)sizes[i], f) == sizes[i];
        if (!ok)
            isa_errf(err, errlen, "%s: write error: %s", path, strerror(errno));
        if (isa_out_close(&o, ok, ok ? err : NULL, errlen) || !ok)
            rc = -1;
    }
    free(json);
    free(sizes);
    return rc;
}
