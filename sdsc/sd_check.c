/* sd_check.c: the rules an SDSC kernel must keep, beyond its form (RFC
 * 0552's semantic checks and the chip's limits): the tensor count cap,
 * work slices covering every tensor exactly once, data stages within a
 * slice, one stick per layout, LX capacity and the DRAM span of each core,
 * and LX tensors read with the layout their producer wrote. */
#include "sd_internal.h"

#include <stdio.h>
#include <string.h>

int64_t sd_coord_positions(const sd_coord *c)
{
    int64_t n = 1;
    for (int i = 0; i < c->nelem; i++)
        n = sd_mul(n, c->elem[i].factor);
    return n;
}

int64_t sd_coord_extent(const sd_coord *c)
{
    /* in double: exact for every real size (below 2^53); an absurd one
     * only has to stay a number, clamped, not overflow */
    double e = 1;
    for (int i = 0; i < c->nelem; i++)
        e += (double)(c->elem[i].factor - 1) * (double)c->elem[i].alpha;
    return e > (double)SD_BIG ? SD_BIG : e < -(double)SD_BIG ? -SD_BIG : (int64_t)e;
}

const sd_coord *sd_tensor_coord(const sd_tensor *t, int d)
{
    for (int i = 0; i < t->ncoord; i++)
        if (t->coord[i].dim == d)
            return &t->coord[i];
    return NULL;
}

static void dsc_path(const sd_kernel *k, const char *tail, char *p, size_t n)
{
    snprintf(p, n, "%s.dscs_[0].%s%s%s", k->top, k->dsc, *tail ? "." : "", tail);
}

static void alloc_path(const sd_kernel *k, const sd_tensor *t, char *p, size_t n)
{
    char tail[64];
    snprintf(tail, sizeof tail, "scheduleTree_[%d]", t->alloc_index);
    dsc_path(k, tail, p, n);
}

/* Each dim split into whole slices, each used core on an existing core and
 * in a slice of each dim, and every slice tuple taken by exactly one core. */
static void check_slices(sd_bundle *b, const sd_kernel *k, const chip_config *cfg)
{
    char p[512];
    int64_t tuples = 1;
    for (int d = 0; d < k->ndims; d++) {
        const sd_dim *dm = &k->dims[d];
        snprintf(p, sizeof p, "%s.numWkSlicesPerDim_", k->top);
        if (dm->slices < 1 || dm->n % dm->slices) {
            sd_problem(b, k, p, "dimension %s of size %lld is not split into a whole number of slices (%lld)", dm->name,
                       (long long)dm->n, (long long)dm->slices);
            return;
        }
        dsc_path(k, "dataStageParam_", p, sizeof p);
        if (dm->stage < 1 || (dm->n / dm->slices) % dm->stage)
            sd_problem(b, k, p, "the data stage of %s (%lld) does not divide its slice of %lld", dm->name,
                       (long long)dm->stage, (long long)(dm->n / dm->slices));
        tuples = sd_mul(tuples, dm->slices);
    }
    if (tuples != k->ncores) {
        snprintf(p, sizeof p, "%s.coreIdToWkSlice_", k->top);
        sd_problem(b, k, p, "%d cores for %lld work slices: the slices must cover the tensors exactly once", k->ncores,
                   (long long)tuples);
        return;
    }
    int owner[SD_MAX_CORES];
    for (int c = 0; c < SD_MAX_CORES; c++)
        owner[c] = -1;
    for (int c = 0; c < SD_MAX_CORES; c++) {
        if (!k->core_used[c])
            continue;
        snprintf(p, sizeof p, "%s.coreIdToWkSlice_.%d", k->top, c);
        if (c >= cfg->cores)
            sd_problem(b, k, p, "core %d does not exist on %s (%d cores)", c, cfg->name, cfg->cores);
        int64_t flat = 0;
        for (int d = 0; d < k->ndims; d++) {
            if (k->slice[c][d] < 0 || k->slice[c][d] >= k->dims[d].slices) {
                sd_problem(b, k, p, "slice %d of %s is not in [0, %lld)", k->slice[c][d], k->dims[d].name,
                           (long long)k->dims[d].slices);
                flat = -1;
                break;
            }
            flat = flat * k->dims[d].slices + k->slice[c][d];
        }
        if (flat >= 0 && owner[flat] >= 0)
            sd_problem(b, k, p, "the same work slice as core %d: the slices must cover the tensors exactly once",
                       owner[flat]);
        else if (flat >= 0)
            owner[flat] = c;
    }
}

/* Each dim of a tensor: its core fold walks the dim's slices, and one core's
 * coordinates are its slice (or a single coordinate: a reduced dim). */
static void check_folds(sd_bundle *b, const sd_kernel *k, const sd_tensor *t, const chip_config *cfg)
{
    char p[512];
    alloc_path(k, t, p, sizeof p);
    for (int i = 0; i < t->ncoord; i++) {
        const sd_coord *c = &t->coord[i];
        const sd_dim *dm = &k->dims[c->dim];
        int64_t slice = dm->slices > 0 ? dm->n / dm->slices : 0, ext = sd_coord_extent(c);
        int full = c->core.factor == dm->slices && c->core.alpha == slice && ext == slice;
        int reduced = ext == 1 && c->core.factor == 1 && dm->slices == 1;
        if (!full && !reduced)
            sd_problem(b, k, p,
                       "%s: %s's core fold (factor %lld, alpha %lld) and per-core extent %lld do not cover its %lld "
                       "elements in %lld slices exactly once",
                       t->name, dm->name, (long long)c->core.factor, (long long)c->core.alpha, (long long)ext,
                       (long long)dm->n, (long long)dm->slices);
    }
    int seen = 0;
    for (int i = 0; i < t->nlayout; i++)
        seen += sd_tensor_coord(t, t->layout[i]) != NULL;
    if (seen != t->ncoord || t->nlayout != t->ncoord)
        sd_problem(b, k, p, "%s: layoutDimOrder_ does not list each of its coordinate dimensions once", t->name);
    const sd_coord *s = t->stick >= 0 ? sd_tensor_coord(t, t->stick) : NULL;
    if (!s)
        sd_problem(b, k, p, "%s: no dimension holds the stick (elemArr 2)", t->name);
    else if (s->elem[1].factor * sd_word(t) != cfg->stick_bytes)
        sd_problem(b, k, p, "%s: a stick of %lld elements of %d bytes is not the chip's %u-byte stick", t->name,
                   (long long)s->elem[1].factor, sd_word(t), cfg->stick_bytes);
}

/* Bytes of one core's block of a tensor (positions of every dim). */
static int64_t block_bytes(const sd_tensor *t)
{
    int64_t n = sd_word(t);
    for (int i = 0; i < t->ncoord; i++)
        n = sd_mul(n, sd_coord_positions(&t->coord[i]));
    return n;
}

/* LX: the tensors placed there and one data stage of each DRAM tensor fit
 * in the LX the chip gives each core. */
static void check_lx(sd_bundle *b, const sd_kernel *k, const chip_config *cfg)
{
    char p[512];
    int64_t staged = 0;
    for (int i = 0; i < k->nt; i++) {
        const sd_tensor *t = &k->t[i];
        int64_t bytes = block_bytes(t);
        if (!t->lx) {
            for (int j = 0; j < t->ncoord; j++) {
                const sd_dim *dm = &k->dims[t->coord[j].dim];
                int64_t slice = dm->slices > 0 ? dm->n / dm->slices : 1;
                if (dm->stage > 0 && sd_coord_extent(&t->coord[j]) == slice && slice)
                    bytes = sd_mul(bytes / slice, dm->stage);
            }
            staged = sd_add(staged, bytes);
            continue;
        }
        for (int c = 0; c < SD_MAX_CORES; c++)
            if (k->core_used[c] && (t->start[c] < 0 || t->start[c] > (int64_t)cfg->lx_usable_bytes ||
                                    (uint64_t)(t->start[c] + bytes) > cfg->lx_usable_bytes)) {
                alloc_path(k, t, p, sizeof p);
                sd_problem(b, k, p, "%s: core %d's %lld bytes at LX %lld pass the %llu bytes of LX the chip gives (lx_usable_bytes)",
                           t->name, c, (long long)bytes, (long long)t->start[c], (unsigned long long)cfg->lx_usable_bytes);
                break;
            }
        staged = sd_add(staged, bytes);
    }
    if ((uint64_t)staged > cfg->lx_usable_bytes) {
        dsc_path(k, "labeledDs_", p, sizeof p);
        sd_problem(b, k, p, "one core needs %lld bytes of LX for its tensors and data stages, more than the %llu the chip gives (lx_usable_bytes)",
                   (long long)staged, (unsigned long long)cfg->lx_usable_bytes);
    }
}

/* DRAM: one core's slice of a tensor spans at most SD_CORE_SPAN_BYTES in
 * the tensor's layout (the sticks between its first and last element). */
static void check_span(sd_bundle *b, const sd_kernel *k, const sd_tensor *t)
{
    if (t->lx || t->stick < 0)
        return;
    int64_t stride = 1, span = 0; /* in sticks, innermost first */
    for (int i = 0; i < t->nlayout; i++) {
        const sd_coord *c = sd_tensor_coord(t, t->layout[i]);
        const sd_dim *dm = &k->dims[t->layout[i]];
        if (!c)
            return;
        int64_t ext = sd_coord_extent(c), full = ext == 1 ? 1 : dm->n;
        if (t->layout[i] == t->stick) {
            int64_t lanes = c->elem[1].factor ? c->elem[1].factor : 1;
            ext = (ext + lanes - 1) / lanes;
            full = (full + lanes - 1) / lanes;
        }
        span = sd_add(span, sd_mul(ext > 0 ? ext - 1 : 0, stride));
        stride = sd_mul(stride, full);
    }
    uint64_t bytes = (uint64_t)sd_mul(span + 1, 128);
    if (bytes > SD_CORE_SPAN_BYTES) {
        char p[512];
        alloc_path(k, t, p, sizeof p);
        sd_problem(b, k, p, "%s: one core's slice spans %llu bytes of DRAM, more than the %llu a core can address",
                   t->name, (unsigned long long)bytes, (unsigned long long)SD_CORE_SPAN_BYTES);
    }
}

/* DRAM: a tensor (all of it, in the generic stick layout) fits in the
 * chip's DRAM. */
static void check_dram(sd_bundle *b, const sd_kernel *k, const sd_tensor *t, const chip_config *cfg)
{
    if (t->lx || t->stick < 0)
        return;
    int64_t bytes = cfg->stick_bytes;
    for (int i = 0; i < t->ncoord; i++) {
        int64_t full = sd_host_extent(k, t, t->coord[i].dim);
        if (t->coord[i].dim == t->stick)
            full = (full + (int64_t)cfg->stick_bytes / sd_word(t) - 1) / ((int64_t)cfg->stick_bytes / sd_word(t));
        bytes = sd_mul(bytes, full);
    }
    if ((uint64_t)bytes > cfg->dram_bytes) {
        char p[512];
        alloc_path(k, t, p, sizeof p);
        sd_problem(b, k, p, "%s: %lld bytes, more than the chip's %llu of DRAM (dram_bytes)", t->name, (long long)bytes,
                   (unsigned long long)cfg->dram_bytes);
    }
}

int sd_written(const sd_kernel *k, int i)
{
    for (int o = 0; o < k->nops; o++)
        for (int j = 0; j < k->ops[o].nout; j++)
            if (k->ops[o].out[j] == i)
                return 1;
    return 0;
}

/* Same cores, LX addresses, format and folds. */
static int same_lx_layout(const sd_kernel *ka, const sd_tensor *a, const sd_kernel *kb, const sd_tensor *b)
{
    if (a->f32 != b->f32 || a->nlayout != b->nlayout || a->stick < 0 || b->stick < 0 ||
        strcmp(ka->dims[a->stick].name, kb->dims[b->stick].name))
        return 0;
    for (int c = 0; c < SD_MAX_CORES; c++)
        if (ka->core_used[c] != kb->core_used[c] || (ka->core_used[c] && a->start[c] != b->start[c]))
            return 0;
    for (int i = 0; i < a->nlayout; i++) {
        const sd_coord *x = sd_tensor_coord(a, a->layout[i]), *y = sd_tensor_coord(b, b->layout[i]);
        if (!x || !y || strcmp(ka->dims[a->layout[i]].name, kb->dims[b->layout[i]].name) || x->nelem != y->nelem ||
            memcmp(&x->core, &y->core, sizeof x->core) || memcmp(x->elem, y->elem, sizeof x->elem[0] * (size_t)x->nelem))
            return 0;
    }
    return 1;
}

/* LX tensor ti of kernel ki, which the kernel reads: the latest earlier
 * kernel that writes an LX tensor at its address (on its first core) must
 * have written it with the same layout; a problem when none did. */
static void check_lx_producer(sd_bundle *b, int ki, int ti)
{
    const sd_kernel *k = &b->k[ki];
    const sd_tensor *t = &k->t[ti];
    int core = -1;
    for (int c = 0; c < SD_MAX_CORES && core < 0; c++)
        if (k->core_used[c])
            core = c;
    char p[512];
    alloc_path(k, t, p, sizeof p);
    for (int j = ki - 1; j >= 0; j--) {
        const sd_kernel *pk = &b->k[j];
        for (int i = 0; pk->parsed && i < pk->nt; i++) {
            const sd_tensor *pt = &pk->t[i];
            if (!pt->lx || !sd_written(pk, i) || core < 0 || !pk->core_used[core] || pt->start[core] != t->start[core])
                continue;
            if (!same_lx_layout(pk, pt, k, t))
                sd_problem(b, k, p, "%s: read from LX with another layout, cores or format than %s %s wrote it",
                           t->name, pk->file, pt->name);
            return;
        }
    }
    sd_problem(b, k, p, "%s: read from LX %lld before any kernel writes it there", t->name,
               core >= 0 ? (long long)t->start[core] : -1LL);
}

void sd_check_all(sd_bundle *b, const chip_config *cfg)
{
    for (int ki = 0; ki < b->nk; ki++) {
        sd_kernel *k = &b->k[ki];
        if (!k->parsed)
            continue;
        int before = b->nproblems;
        char p[512];
        if (k->nt > SD_TENSOR_CAP) {
            dsc_path(k, "labeledDs_", p, sizeof p);
            sd_problem(b, k, p, "%d tensors, more than %d (RFC 0552: total tensors must not exceed 8 LDS segments)", k->nt,
                       SD_TENSOR_CAP);
        }
        check_slices(b, k, cfg);
        for (int i = 0; i < k->nt; i++) {
            check_folds(b, k, &k->t[i], cfg);
            check_span(b, k, &k->t[i]);
            check_dram(b, k, &k->t[i], cfg);
        }
        check_lx(b, k, cfg);
        for (int i = 0; i < k->nt; i++)
            if (k->t[i].lx && !sd_written(k, i))
                check_lx_producer(b, ki, i);
        if (!k->nops) {
            dsc_path(k, "computeOp_", p, sizeof p);
            sd_problem(b, k, p, "no compute op");
        }
        k->parsed = b->nproblems == before;
    }
}
