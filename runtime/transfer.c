/* transfer.c: moving a tensor's values between its host copy and device
 * DRAM (in device layout, isa_layout_pack), and counting the bytes moved. */
#include "rt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void rt_count_upload(rt_program *prog, const isa_tensor *t, uint64_t bytes)
{
    rt_transfer_stats *c[2] = {&prog->pending, &prog->dev->total};
    for (int k = 0; k < 2; k++) {
        c[k]->bytes_uploaded += bytes;
        if (rt_in_weights(prog->p, t))
            c[k]->weight_bytes_uploaded += bytes;
    }
}

/* A gather's row numbers (ISA_TF_WRAP) as the device takes them: each x
 * as x mod rows, PyTorch's row for a negative x.  The host copy keeps x
 * for the reference; the compiler wraps only a parameter no other op reads
 * (host ops read the device copy), and the launch refuses an x outside
 * [-rows, rows) (rt_ranges_check). */
static void pack_wrapped(const isa_tensor *t, uint32_t stick_bytes, const float *values, uint8_t *buf)
{
    const int64_t n = rt_tensor_elems(t);
    float *w = malloc(n ? (size_t)n * sizeof *w : 1);
    if (!w)
        abort();
    const double rows = (double)t->wrap_rows;
    for (int64_t i = 0; i < n; i++)
        w[i] = (float)(values[i] - rows * floor(values[i] / rows));
    isa_layout_pack(t, stick_bytes, w, buf);
    free(w);
}

/* Tensor i's values in device layout: an activation-region input's host
 * copy packed once and kept (prog->packed), anything else packed into a
 * buffer the caller frees (*owned). */
static const uint8_t *packed_values(rt_program *prog, int i, const float *values, uint8_t **owned)
{
    const isa_tensor *t = &prog->p->tensors[i];
    *owned = NULL;
    if (prog->packed[i].bytes && values == prog->host[i])
        return prog->packed[i].bytes;
    uint8_t *buf = malloc((size_t)t->bytes);
    if (!buf)
        return NULL;
    if (t->flags & ISA_TF_WRAP)
        pack_wrapped(t, prog->p->stick_bytes, values, buf);
    else
        isa_layout_pack(t, prog->p->stick_bytes, values, buf);
    if (values == prog->host[i] && !rt_in_weights(prog->p, t)) /* weights stay resident: no second copy */
        prog->packed[i].bytes = buf;
    else
        *owned = buf;
    return buf;
}

int rt_write_f32(rt_program *prog, int i, const float *values, char *err, size_t errlen)
{
    const isa_tensor *t = &prog->p->tensors[i];
    if (!t->bytes || !rt_region_present(prog, t))
        return 0; /* uploaded from the host copy when its region is placed */
    uint8_t *owned;
    const uint8_t *buf = packed_values(prog, i, values, &owned);
    if (!buf)
        return isa_errf(err, errlen, "tensor %s: out of host memory for %llu device bytes", t->name,
                        (unsigned long long)t->bytes);
    uint64_t addr = rt_tensor_dev_addr(prog, t);
    rt_packed *k = buf == prog->packed[i].bytes ? &prog->packed[i] : NULL;
    sim *s = prog->dev->sim;
    int rc = 0;
    if (!k || !k->serial || k->at != addr || !sim_dram_unwritten_since(s, addr, t->bytes, k->serial))
        rc = sim_dram_write(s, addr, buf, (size_t)t->bytes);
    if (k && !rc)
        *k = (rt_packed){k->bytes, addr, sim_dram_serial(s)};
    free(owned);
    if (rc)
        return isa_errf(err, errlen, "tensor %s: device DRAM write of %llu bytes at %llu failed", t->name,
                        (unsigned long long)t->bytes, (unsigned long long)addr);
    rt_count_upload(prog, t, t->bytes);
    return 0;
}

int rt_write_tensor(rt_program *prog, const char *name, const void *host, isa_host_dtype dt,
                    char *err, size_t errlen)
{
    int i = rt_find_tensor(prog, name, err, errlen);
    if (i < 0)
        return -1;
    if ((int)dt < 0 || dt >= ISA_HT_COUNT)
        return isa_errf(err, errlen, "tensor %s: unknown host dtype %d", name, (int)dt);
    const isa_tensor *t = &prog->p->tensors[i];
    size_t n = (size_t)rt_tensor_elems(t);
    const float *vals = host;
    float *conv = NULL;
    if (dt != ISA_HT_F32) { /* 16-bit values, exact in fp32; DL16 on upload */
        conv = malloc(n ? n * sizeof *conv : 1);
        if (!conv)
            return isa_errf(err, errlen, "tensor %s: out of host memory", name);
        const uint16_t *h = host;
        for (size_t k = 0; k < n; k++)
            conv[k] = dt == ISA_HT_F16 ? isa_f16_to_f32(h[k]) : isa_bf16_to_f32(h[k]);
        vals = conv;
    }
    int rc = rt_keep_host(prog, i, vals, err, errlen);
    if (!rc) /* from the kept copy, so its packed bytes are kept (set_input) */
        rc = rt_write_f32(prog, i, prog->host[i], err, errlen);
    free(conv);
    return rc;
}

/* Device values read into the host dtype by the device's rule (toward zero
 * for a 16-bit host dtype: isa_host_from_device). */
static void narrow_to_host(const isa_tensor *t, float *vals)
{
    if (t->host_dtype == ISA_HT_F32)
        return;
    int64_t n = rt_tensor_elems(t);
    for (int64_t k = 0; k < n; k++)
        vals[k] = isa_host_from_device(t->host_dtype, vals[k]);
}

int rt_read_tensor(rt_program *prog, const char *name, float *host, char *err, size_t errlen)
{
    int i = rt_find_tensor(prog, name, err, errlen);
    if (i < 0)
        return -1;
    const isa_tensor *t = &prog->p->tensors[i];
    if (!t->bytes)
        return 0;
    int present = rt_region_present(prog, t);
    if (!present && t->role == ISA_ROLE_SCRATCH)
        return isa_errf(err, errlen, "tensor %s is scratch: it exists only in device DRAM, during a launch", name);
    if (!present && t->role == ISA_ROLE_OUTPUT && t->host_dtype != ISA_HT_F32 && prog->host[i]) {
        /* a 16-bit output's host copy is what the last launch read back,
         * narrowed already (narrowing again changes nothing); another trip
         * through DL16 would turn an fp16 infinity into NaN */
        memcpy(host, prog->host[i], (size_t)rt_tensor_elems(t) * sizeof *host);
        narrow_to_host(t, host);
        return 0;
    }
    void *buf = calloc(1, (size_t)t->bytes);
    if (!buf)
        return isa_errf(err, errlen, "tensor %s: out of host memory for %llu device bytes", name,
                        (unsigned long long)t->bytes);
    if (present) {
        uint64_t addr = rt_tensor_dev_addr(prog, t);
        if (sim_dram_read(prog->dev->sim, addr, buf, (size_t)t->bytes)) {
            free(buf);
            return isa_errf(err, errlen, "tensor %s: device DRAM read of %llu bytes at %llu failed", name,
                            (unsigned long long)t->bytes, (unsigned long long)addr);
        }
    } else if (prog->host[i]) {
        /* Not on the device now: the host copy in device precision. */
        isa_layout_pack(t, prog->p->stick_bytes, prog->host[i], buf);
    }
    isa_layout_unpack(t, prog->p->stick_bytes, buf, host);
    free(buf);
    narrow_to_host(t, host);
    return 0;
}

/* A value a stepwise check compares (rt_keep_values): a scratch tensor
 * that holds its graph value whole. */
static int kept_value(const rt_program *prog, const isa_tensor *t)
{
    return prog->keep_values && t->role == ISA_ROLE_SCRATCH && (t->flags & ISA_TF_VALUE);
}

/* The device's buffer for device-layout bytes on their way to the host,
 * at least bytes long, or NULL.  Kept from launch to launch: a fresh one
 * per output was mapped anew by malloc (a 2 MB output is over its mmap
 * threshold) and page-faulted in, some 0.5 ms of each 1024^3 GEMM
 * launch. */
static uint8_t *stage(rt_device *dev, size_t bytes)
{
    if (bytes > dev->stage_cap) {
        uint8_t *b = realloc(dev->stage, bytes);
        if (!b)
            return NULL;
        dev->stage = b;
        dev->stage_cap = bytes;
    }
    return dev->stage ? dev->stage : (dev->stage = malloc(1));
}

/* Tensor i's device values into its host copy: an output as the host
 * reads it (narrowed, counted), a kept value as the device holds it. */
static int download(rt_program *prog, size_t i, char *err, size_t errlen)
{
    const isa_tensor *t = &prog->p->tensors[i];
    size_t n = (size_t)rt_tensor_elems(t);
    float *h = prog->host[i] ? prog->host[i] : malloc(n ? n * sizeof *h : 1);
    uint8_t *buf = stage(prog->dev, (size_t)t->bytes);
    if (!h || !buf) {
        if (h != prog->host[i])
            free(h);
        return isa_errf(err, errlen, "tensor %s: out of host memory reading it back", t->name);
    }
    prog->host[i] = h;
    rt_host_changed(prog, (int)i);
    if (sim_dram_read(prog->dev->sim, rt_tensor_dev_addr(prog, t), buf, (size_t)t->bytes))
        return isa_errf(err, errlen, "tensor %s: device DRAM read failed", t->name);
    isa_layout_unpack(t, prog->p->stick_bytes, buf, h);
    if (t->role != ISA_ROLE_OUTPUT)
        return 0;
    narrow_to_host(t, h);
    prog->pending.bytes_downloaded += t->bytes;
    prog->dev->total.bytes_downloaded += t->bytes;
    return 0;
}

int rt_download_outputs(rt_program *prog, char *err, size_t errlen)
{
    const isa_program *p = prog->p;
    /* a timing-only run wrote no values: the transfer is counted, not made,
     * and no stale host copy stands in for this run's outputs */
    const int values = sim_get_options(prog->dev->sim)->values;
    for (size_t i = 0; i < p->ntensors; i++) {
        const isa_tensor *t = &p->tensors[i];
        if (!values && t->role == ISA_ROLE_OUTPUT && rt_region_present(prog, t)) {
            free(prog->host[i]);
            prog->host[i] = NULL;
            rt_host_changed(prog, (int)i);
            prog->pending.bytes_downloaded += t->bytes;
            prog->dev->total.bytes_downloaded += t->bytes;
            continue;
        }
        if ((t->role == ISA_ROLE_OUTPUT || kept_value(prog, t)) && rt_region_present(prog, t) &&
            download(prog, i, err, errlen))
            return -1;
    }
    return 0;
}

int rt_poison_values(rt_program *prog, char *err, size_t errlen)
{
    const isa_program *p = prog->p;
    for (size_t i = 0; i < p->ntensors; i++) {
        const isa_tensor *t = &p->tensors[i];
        if (!kept_value(prog, t) || !t->bytes || !rt_region_present(prog, t))
            continue;
        free(prog->host[i]); /* the last run's: this run writes its own */
        prog->host[i] = NULL;
        rt_host_changed(prog, (int)i);
        size_t n = (size_t)rt_tensor_elems(t);
        float *nan = malloc(n * sizeof *nan);
        void *buf = malloc((size_t)t->bytes);
        int rc = !nan || !buf;
        for (size_t k = 0; !rc && k < n; k++)
            nan[k] = NAN;
        if (!rc) {
            isa_layout_pack(t, p->stick_bytes, nan, buf);
            rc = sim_dram_write(prog->dev->sim, rt_tensor_dev_addr(prog, t), buf, (size_t)t->bytes);
        }
        free(nan);
        free(buf);
        if (rc)
            return isa_errf(err, errlen, "tensor %s: cannot fill it with NaN for a stepwise check", t->name);
    }
    return 0;
}

void rt_device_transfers(const rt_device *dev, rt_transfer_stats *total)
{
    *total = dev->total;
}
