/* stats.c: figures derived from a run's statistics, and their JSON form
 * (keys documented in docs/timing.md). */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

double sim_stats_time_us(const sim_stats *st, const chip_config *cfg)
{
    return st->cycles / (cfg->clock_ghz * 1000.0);
}

double sim_stats_mac_utilization(const sim_stats *st, const chip_config *cfg)
{
    double peak = (double)cfg->cores * cfg->corelets * cfg->pt_rows * cfg->pt_cols * cfg->pt_lanes;
    return st->cycles > 0 ? (double)st->macs / (st->cycles * peak) : 0.0;
}

double sim_stats_dram_bus(const sim_stats *st, const chip_config *cfg, int mix)
{
    const double ns = sim_stats_time_us(st, cfg) * 1e3 * cfg->dram_channels;
    return ns > 0 ? (mix ? st->dram_mix_ns : st->dram_data_ns) / ns : 0.0;
}

const sim_kernel_stats *sim_stats_kernel(const sim_stats *st, const char *name)
{
    for (int k = 0; k < st->nkernels && k < SIM_MAX_KERNELS; k++)
        if (!strcmp(st->kernels[k].name, name))
            return &st->kernels[k];
    return NULL;
}

static void json_name(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if ((unsigned char)*s < 0x20)
            continue;
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void sim_print_stats_json(FILE *f, const sim_stats *st, const chip_config *cfg)
{
    double us = sim_stats_time_us(st, cfg);
    uint64_t dram = st->dram_bytes_read + st->dram_bytes_written, rows = st->dram_row_hits + st->dram_row_misses;
    fprintf(f, "{\n  \"config\": \"%s\",\n  \"cycles\": %.0f,\n  \"time_us\": %.4f,\n", cfg->name, st->cycles, us);
    fprintf(f, "  \"mac_utilization\": %.6f,\n  \"macs\": %" PRIu64 ",\n  \"insns\": %" PRIu64 ",\n",
            sim_stats_mac_utilization(st, cfg), st->macs, st->insns);
    fprintf(f, "  \"sfp_elems\": %" PRIu64 ",\n  \"dram_bytes_read\": %" PRIu64 ",\n  \"dram_bytes_written\": %" PRIu64 ",\n",
            st->sfp_elems, st->dram_bytes_read, st->dram_bytes_written);
    fprintf(f, "  \"dram_gbps\": %.3f,\n  \"dram_row_hit_rate\": %.6f,\n  \"ring_bytes\": %" PRIu64 ",\n",
            us > 0 ? (double)dram / (us * 1e3) : 0.0, rows ? (double)st->dram_row_hits / (double)rows : 0.0,
            st->ring_bytes);
    fprintf(f, "  \"dram_bus_data\": %.6f,\n  \"dram_bus_mix\": %.6f,\n", sim_stats_dram_bus(st, cfg, 0),
            sim_stats_dram_bus(st, cfg, 1));
    fprintf(f, "  \"host_ops\": %d,\n  \"host_cycles\": %.0f,\n", st->host_ops, st->host_cycles);
    fprintf(f, "  \"cores\": [\n");
    for (int c = 0; c < cfg->cores && c < SIM_MAX_CORES; c++) {
        fprintf(f, "    {\"core\": %d, \"lx_peak_bytes\": %" PRIu64 ", \"busy_cycles\": {", c, st->lx_peak[c]);
        for (int u = 0; u < ISA_NUNITS; u++)
            fprintf(f, "%s\"%s\": %.0f", u ? ", " : "", isa_unit_names[u], st->unit_busy[c][u]);
        fprintf(f, "}, \"stall_cycles\": {");
        for (int u = 0; u < ISA_NUNITS; u++)
            fprintf(f, "%s\"%s\": %.0f", u ? ", " : "", isa_unit_names[u], st->unit_stall[c][u]);
        fprintf(f, "}}%s\n", c + 1 < cfg->cores ? "," : "");
    }
    fprintf(f, "  ],\n  \"kernels\": [\n");
    for (int k = 0; k < st->nkernels && k < SIM_MAX_KERNELS; k++) {
        const sim_kernel_stats *ks = &st->kernels[k];
        fprintf(f, "    {\"name\": ");
        json_name(f, ks->name);
        fprintf(f, ", \"start_cycles\": %.0f, \"end_cycles\": %.0f, \"busy_cycles\": %.0f, \"insns\": %" PRIu64
                   ", \"macs\": %" PRIu64 ", \"dram_bytes\": %" PRIu64 "}%s\n",
                ks->start, ks->end, ks->busy, ks->insns, ks->macs, ks->dram_bytes, k + 1 < st->nkernels ? "," : "");
    }
    fprintf(f, "  ]\n}");
}

int sim_write_stats_json(const sim_stats *st, const chip_config *cfg, const char *path, char *err, size_t errlen)
{
    isa_outfile o;
    if (isa_out_open(&o, path, err, errlen))
        return -1;
    sim_print_stats_json(o.f, st, cfg);
    fputc('\n', o.f);
    return isa_out_close(&o, 1, err, errlen);
}
