/* layout.c: host (row-major) <-> device layout conversion of one tensor,
 * pure (no device: the runtime moves the converted bytes, the compiler
 * bakes constants with it).
 *
 * View the host tensor as (outer, len, inner): len is the stick dimension,
 * outer the product of the dims before it, inner of those after it.  The
 * device tensor is (groups, rows, lanes) with rows = outer * inner, so
 *
 *   host  [(o * len + g * lanes + lane) * inner + i]
 *   device[((g * rows) + o * inner + i) * lanes + lane]
 *
 * With the stick dimension last (inner == 1) every device stick is a
 * contiguous piece of a host row and converts in one call; otherwise the
 * lanes of a stick are gathered with stride inner (for consecutive i the
 * same 64 host cache lines are reused, so the gather stays in L1).
 *
 * A tensor with another order of its device dims (isa_tensor.order: SDSC
 * tensors in torch-spyre's layouts) is converted element by element, each
 * host dim at the byte stride its place in the order gives it.
 */
#include "isa.h"

#include <assert.h>
#include <string.h>

typedef struct {
    int64_t outer, len, inner; /* host view */
    int64_t groups, rows, lanes; /* device view */
    size_t esize;              /* device element bytes */
} geom;

static void get_geom(const isa_tensor *t, uint32_t stick_bytes, geom *g)
{
    g->outer = g->inner = 1;
    g->len = t->rank ? t->shape[t->stick_dim] : 1;
    for (int i = 0; i < t->rank; i++) {
        if (i < t->stick_dim)
            g->outer *= t->shape[i];
        else if (i > t->stick_dim)
            g->inner *= t->shape[i];
    }
    g->lanes = isa_tensor_lanes(t, stick_bytes);
    g->groups = isa_tensor_groups(t, stick_bytes);
    g->rows = g->outer * g->inner;
    g->esize = t->dev_dtype == ISA_T_F32 ? 4 : 2;
    assert(g->lanes > 0 && (uint64_t)g->lanes * g->esize == stick_bytes);
}

/* The device dims outermost first: host dims, the stick dim for its sticks. */
static void device_order(const isa_tensor *t, int *dims)
{
    int n = 0;
    if (t->order) {
        for (int p = 0; p < t->rank; p++)
            dims[p] = (int)((t->order >> (4 * p)) & 15) - 1;
        return;
    }
    dims[n++] = t->stick_dim;
    for (int d = 0; d < t->rank; d++)
        if (d != t->stick_dim)
            dims[n++] = d;
}

int isa_order_valid(uint32_t order, int rank)
{
    unsigned seen = 0;
    if (!order)
        return 1;
    if (rank < 1 || rank > ISA_MAX_RANK || (rank < 8 && order >> (4 * rank)))
        return 0;
    for (int p = 0; p < rank; p++) {
        unsigned d = (order >> (4 * p)) & 15;
        if (d < 1 || d > (unsigned)rank || seen & (1u << d))
            return 0;
        seen |= 1u << d;
    }
    return 1;
}

uint32_t isa_order_make(const int *dims, int rank, int stick)
{
    isa_tensor t = {.rank = rank, .stick_dim = stick};
    int def[ISA_MAX_RANK];
    device_order(&t, def);
    uint32_t order = 0;
    int same = 1;
    for (int p = 0; p < rank; p++) {
        order |= (uint32_t)(dims[p] + 1) << (4 * p);
        same &= dims[p] == def[p];
    }
    return same ? 0 : order;
}

/* The byte stride of each host dim in t's order (the stick dim's: of its sticks). */
static void order_strides(const isa_tensor *t, const geom *g, int64_t *stride)
{
    int dims[ISA_MAX_RANK];
    device_order(t, dims);
    int64_t s = g->lanes * (int64_t)g->esize;
    for (int p = t->rank - 1; p >= 0; p--) {
        stride[dims[p]] = s;
        s *= dims[p] == t->stick_dim ? g->groups : t->shape[dims[p]];
    }
}

/* The byte offset of host element idx[] with the strides of order_strides. */
static int64_t ordered_offset(const isa_tensor *t, const geom *g, const int64_t *stride, const int64_t *idx)
{
    int64_t off = 0;
    for (int d = 0; d < t->rank; d++)
        off += d == t->stick_dim ? idx[d] / g->lanes * stride[d] + idx[d] % g->lanes * (int64_t)g->esize
                                 : idx[d] * stride[d];
    return off;
}

/* Values converted per gather of a strided stick (a stack buffer). */
#define CHUNK 256

/* n fp32 values to device elements at dst. */
static inline void put_vals(const geom *g, const float *src, int64_t n, uint8_t *dst)
{
    if (g->esize == 4)
        memcpy(dst, src, (size_t)n * 4);
    else
        isa_dl16_from_f32_n(src, (uint16_t *)(void *)dst, (size_t)n);
}

/* n device elements at src to fp32. */
static inline void get_vals(const geom *g, const uint8_t *src, int64_t n, float *dst)
{
    if (g->esize == 4)
        memcpy(dst, src, (size_t)n * 4);
    else
        isa_dl16_to_f32_n((const uint16_t *)(const void *)src, dst, (size_t)n);
}

/* The next host index in row-major order. */
static void next_index(const isa_tensor *t, int64_t *idx)
{
    for (int d = t->rank - 1; d >= 0 && ++idx[d] == t->shape[d]; d--)
        idx[d] = 0;
}

static int64_t host_elems(const isa_tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= t->shape[d];
    return n;
}

/* An ordered tensor's host elements to their device places (padding lanes zero). */
static void ordered_pack(const isa_tensor *t, const geom *g, const float *host, uint8_t *dev)
{
    int64_t stride[ISA_MAX_RANK], idx[ISA_MAX_RANK] = {0}, n = host_elems(t);
    order_strides(t, g, stride);
    memset(dev, 0, (size_t)(g->groups * g->rows * g->lanes) * g->esize);
    for (int64_t i = 0; i < n; i++, next_index(t, idx))
        put_vals(g, host + i, 1, dev + ordered_offset(t, g, stride, idx));
}

static void ordered_unpack(const isa_tensor *t, const geom *g, const uint8_t *dev, float *host)
{
    int64_t stride[ISA_MAX_RANK], idx[ISA_MAX_RANK] = {0}, n = host_elems(t);
    order_strides(t, g, stride);
    for (int64_t i = 0; i < n; i++, next_index(t, idx))
        get_vals(g, dev + ordered_offset(t, g, stride, idx), 1, host + i);
}

void isa_layout_pack(const isa_tensor *t, uint32_t stick_bytes, const float *host, void *dev)
{
    geom g;
    get_geom(t, stick_bytes, &g);
    if (t->order) {
        ordered_pack(t, &g, host, dev);
        return;
    }
    float buf[CHUNK];
    for (int64_t o = 0; o < g.outer; o++) {
        for (int64_t gr = 0; gr < g.groups; gr++) {
            int64_t n = g.len - gr * g.lanes < g.lanes ? g.len - gr * g.lanes : g.lanes;
            const float *src = host + (o * g.len + gr * g.lanes) * g.inner;
            uint8_t *dst = (uint8_t *)dev + (size_t)((gr * g.rows + o * g.inner) * g.lanes) * g.esize;
            for (int64_t i = 0; i < g.inner; i++, dst += (size_t)g.lanes * g.esize) {
                if (g.inner == 1) {
                    put_vals(&g, src, n, dst);
                } else {
                    for (int64_t c = 0; c < n; c += CHUNK) {
                        int64_t m = n - c < CHUNK ? n - c : CHUNK;
                        const float *s = src + c * g.inner + i;
                        for (int64_t l = 0; l < m; l++)
                            buf[l] = s[l * g.inner];
                        put_vals(&g, buf, m, dst + (size_t)c * g.esize);
                    }
                }
                if (n < g.lanes) /* padding of the last stick */
                    memset(dst + (size_t)n * g.esize, 0, (size_t)(g.lanes - n) * g.esize);
            }
        }
    }
}

void isa_layout_unpack(const isa_tensor *t, uint32_t stick_bytes, const void *dev, float *host)
{
    geom g;
    get_geom(t, stick_bytes, &g);
    if (t->order) {
        ordered_unpack(t, &g, dev, host);
        return;
    }
    float buf[CHUNK];
    for (int64_t o = 0; o < g.outer; o++) {
        for (int64_t gr = 0; gr < g.groups; gr++) {
            int64_t n = g.len - gr * g.lanes < g.lanes ? g.len - gr * g.lanes : g.lanes;
            float *dst = host + (o * g.len + gr * g.lanes) * g.inner;
            const uint8_t *src = (const uint8_t *)dev + (size_t)((gr * g.rows + o * g.inner) * g.lanes) * g.esize;
            for (int64_t i = 0; i < g.inner; i++, src += (size_t)g.lanes * g.esize) {
                if (g.inner == 1) {
                    get_vals(&g, src, n, dst);
                    continue;
                }
                for (int64_t c = 0; c < n; c += CHUNK) {
                    int64_t m = n - c < CHUNK ? n - c : CHUNK;
                    get_vals(&g, src + (size_t)c * g.esize, m, buf);
                    float *d = dst + c * g.inner + i;
                    for (int64_t l = 0; l < m; l++)
                        d[l * g.inner] = buf[l];
                }
            }
        }
    }
}

uint64_t isa_layout_offset(const isa_tensor *t, uint32_t stick_bytes, const int64_t *index)
{
    geom g;
    get_geom(t, stick_bytes, &g);
    if (t->order) {
        int64_t stride[ISA_MAX_RANK];
        order_strides(t, &g, stride);
        return (uint64_t)ordered_offset(t, &g, stride, index);
    }
    int64_t o = 0, s = 0, i = 0;
    for (int d = 0; d < t->rank; d++) {
        assert(index[d] >= 0 && index[d] < t->shape[d]);
        if (d < t->stick_dim)
            o = o * t->shape[d] + index[d];
        else if (d == t->stick_dim)
            s = index[d];
        else
            i = i * t->shape[d] + index[d];
    }
    int64_t gr = s / g.lanes, lane = s % g.lanes;
    return (uint64_t)(((gr * g.rows + o * g.inner + i) * g.lanes + lane) * (int64_t)g.esize);
}
