/* shapes_stream.c: DRAM streaming microbenchmarks, to calibrate the DRAM
 * model against the rates measured on the chip (one direction, and
 * balanced reads and writes).
 *
 * Tensors: "in" (input) and, with write_back, "out" (output), each of
 * cores x bytes_per_core bytes as rows of one stick (lanes16 DL16
 * columns), so that core i's slice, rows [i * n, (i + 1) * n), is one
 * contiguous run of DRAM.  Each core in use copies its slice in chunks of
 * at most STREAM_CHUNK_BYTES (one DMA each) into two alternating LX slots:
 *
 *   dmai: (wait empty[s]) load the chunk into slot s; (sig full[s])
 *   dmao: wait full[s]; store slot s to the same rows of out; sig empty[s]
 *
 * the parts in parentheses and the dmao line only with write_back.  empty
 * starts with one credit per slot and is drained at the end.  Without
 * write_back no unit reads the slots and dmai loads back to back.  Full
 * chunks run in a counted loop unrolled by two (one per slot), the DRAM
 * addresses in registers advanced by addi. */
#include "shapes.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Large enough that the DMA's fixed cost is noise, small enough that a
 * slice of a few chunks keeps both slots busy. */
#define STREAM_CHUNK_BYTES (256 * 1024)

typedef struct {
    cc_emit e;
    int64_t sb;
    int write_back;
    int64_t L[2];              /* LX slots */
    int full[2], empty[2];
    int rIn, rOut;
    int64_t chunk;             /* chunks emitted: the parity picks the slot */
    int64_t run;               /* sticks of a full chunk */
} st_core;

static void emit_chunk(st_core *sc, int64_t sticks)
{
    cc_emit *e = &sc->e;
    int s = (int)(sc->chunk++ % 2);
    cc_dma_shape sh = cc_dma_groups(sticks, 1, 0, 0);
    if (sc->write_back)
        cc_emit_wait(e, ISA_U_DMAI, sc->empty[s]);
    cc_emit_dma(e, ISA_OP_DMA_LD, cc_abs(sc->L[s]), cc_reg(sc->rIn, 0), &sh);
    cc_emit_addi(e, sc->rIn, sticks * sc->sb);
    if (!sc->write_back)
        return;
    cc_emit_sig(e, ISA_U_DMAI, sc->full[s]);
    cc_emit_wait(e, ISA_U_DMAO, sc->full[s]);
    cc_emit_dma(e, ISA_OP_DMA_ST, cc_reg(sc->rOut, 0), cc_abs(sc->L[s]), &sh);
    cc_emit_addi(e, sc->rOut, sticks * sc->sb);
    cc_emit_sig(e, ISA_U_DMAO, sc->empty[s]);
}

static void full_chunk(void *ctx)
{
    st_core *sc = ctx;
    emit_chunk(sc, sc->run);
}

/* Core `core` copies sticks [first, first + n) of in (and to out). */
static int emit_core(const cc_target *t, isa_program *p, int core, int write_back, uint64_t in, uint64_t out,
                     int64_t first, int64_t n, char *err, size_t errlen)
{
    st_core sc;
    memset(&sc, 0, sizeof sc);
    cc_emit *e = &sc.e;
    cc_emit_begin(e, t->cfg, p, core, err, errlen);
    if (n == 0) {
        cc_emit_halt(e);
        return cc_emit_failed(e) ? -1 : 0;
    }
    sc.sb = t->stick;
    sc.write_back = write_back;
    int64_t slot = (int64_t)(t->cfg->lx_usable_bytes / 2) / t->stick;
    sc.run = cc_min(cc_min(slot, STREAM_CHUNK_BYTES / t->stick), cc_min(n, 65535));
    if (sc.run < 1)
        return cc_emit_error(e, "two sticks do not fit %llu bytes of LX",
                             (unsigned long long)t->cfg->lx_usable_bytes);
    for (int s = 0; s < 2; s++)
        sc.L[s] = cc_lx_alloc(e, sc.run * t->stick, "stream chunk");
    if (write_back)
        for (int s = 0; s < 2; s++) {
            sc.full[s] = cc_tok_alloc(e, "stream full");
            sc.empty[s] = cc_tok_alloc(e, "stream empty");
        }
    sc.rIn = cc_reg_alloc(e);
    if (write_back)
        sc.rOut = cc_reg_alloc(e);
    if (cc_emit_failed(e))
        return -1;

    cc_kernel_begin(e, "stream");
    if (write_back)
        for (int s = 0; s < 2; s++)
            cc_emit_sig(e, ISA_U_DMAI, sc.empty[s]);
    cc_emit_li(e, sc.rIn, (int64_t)in + first * t->stick);
    if (write_back)
        cc_emit_li(e, sc.rOut, (int64_t)out + first * t->stick);
    cc_emit_repeat(e, n / sc.run, 2, full_chunk, &sc);
    if (n % sc.run)
        emit_chunk(&sc, n % sc.run);
    if (write_back)
        for (int s = 0; s < 2; s++)
            cc_emit_wait(e, ISA_U_DMAI, sc.empty[s]);
    cc_kernel_end(e);
    cc_emit_halt(e);
    return cc_emit_failed(e) ? -1 : 0;
}

isa_program *shapes_stream(const chip_config *cfg, uint64_t bytes_per_core, int write_back, const cc_gen_opts *opts,
                           char *err, size_t errlen)
{
    const char *what = write_back ? "stream (read and write)" : "stream (read)";
    cc_gen_opts o;
    char why[256] = "";
    if (cc_resolve_opts(cfg, opts, &o, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", what, why);
        return NULL;
    }
    cc_target t;
    cc_target_init(&t, cfg);
    if (bytes_per_core == 0 || bytes_per_core % (uint64_t)t.stick) {
        snprintf(err, errlen, "%s: %" PRIu64 " bytes per core is not a positive multiple of the %" PRId64 "-byte stick",
                 what, bytes_per_core, t.stick);
        return NULL;
    }
    double total = (double)bytes_per_core * o.cores, dram = total * (write_back ? 2 : 1);
    if (dram > (double)cfg->dram_bytes || dram >= (double)(1ull << 40)) {
        snprintf(err, errlen, "%s: %" PRIu64 " bytes on each of %d cores need %.0f bytes of DRAM, more than %s has",
                 what, bytes_per_core, o.cores, dram, cfg->name);
        return NULL;
    }
    isa_program *p = cc_program_new(cfg, write_back ? "%out = aten.clone(%in)\n" : NULL, NULL, err, errlen);
    if (!p)
        return NULL;
    int64_t per_core = (int64_t)(bytes_per_core / (uint64_t)t.stick), rows = per_core * o.cores;
    uint64_t in = shapes_add_2d(p, cfg, "in", ISA_ROLE_INPUT, rows, t.lanes16);
    uint64_t out = write_back ? shapes_add_2d(p, cfg, "out", ISA_ROLE_OUTPUT, rows, t.lanes16) : 0;
    for (int core = 0; core < cfg->cores; core++) {
        int64_t n = core < o.cores ? per_core : 0;
        if (emit_core(&t, p, core, write_back, in, out, core * per_core, n, why, sizeof why)) {
            snprintf(err, errlen, "%s: %s", what, why);
            isa_program_free(p);
            return NULL;
        }
    }
    return p;
}
